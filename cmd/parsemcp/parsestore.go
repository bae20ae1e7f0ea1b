package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/policy"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// The keys of a parse+http(s):// store: flags, else the environment
// (PARSEMCP_PARSE_MASTER_KEY, …). Their values are never logged nor shown
// as flag defaults.
var parseKeys struct{ master, rest, js string }

// parseAggregateRows caps the rows one aggregation parsemcp runs itself
// over a Parse Server store may fetch (parserest.Config.LocalAggregateRows).
var parseAggregateRows int

func registerParseKeys(fl *pflag.FlagSet) {
	if fl.Lookup("parse-master-key") != nil {
		return
	}
	fl.StringVar(&parseKeys.master, "parse-master-key", "", "parse+http(s) store: Parse Server's master key (default: env "+parserest.EnvMasterKey+"); needed for schemas, aggregation and acting as users")
	fl.StringVar(&parseKeys.rest, "parse-rest-key", "", "parse+http(s) store: Parse Server's REST API key, when it requires one (default: env "+parserest.EnvRESTKey+")")
	fl.StringVar(&parseKeys.js, "parse-js-key", "", "parse+http(s) store: Parse Server's JavaScript key, for LiveQuery and servers that require it (default: env "+parserest.EnvJSKey+")")
	fl.IntVar(&parseAggregateRows, "parse-aggregate-rows", parserest.DefaultLocalAggregateRows, "parse+http(s) store: most rows an aggregation parsemcp runs itself may fetch (agents without the master key or with row rules, and the stages Parse Server on PostgreSQL lacks; docs/PARSE_SERVER.md)")
}

// openParse opens a Parse Server store.
func openParse(ctx context.Context, spec string, log *slog.Logger) (store.Store, string, error) {
	cfg, err := parserest.ParseURL(spec)
	if err != nil {
		return nil, "", err
	}
	for _, k := range []struct {
		flag string
		dst  *string
	}{{parseKeys.master, &cfg.MasterKey}, {parseKeys.rest, &cfg.RESTKey}, {parseKeys.js, &cfg.JavaScriptKey}} {
		if k.flag != "" {
			*k.dst = k.flag
		}
	}
	if log != nil {
		cfg.Logger = log
	}
	cfg.LocalAggregateRows = parseAggregateRows
	cfg.Scratch = sqlite.Scratch // the agents' aggregations run here over the rows Parse Server gives them
	st, err := parserest.Open(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	if log != nil && !st.HasMasterKey() {
		log.Warn("Parse Server store without the master key: schemas, aggregation and acting as users are unavailable", "store", cfg.Redacted())
	}
	return st, cfg.Redacted(), nil
}

// checkIdentity refuses at start-up an identity the store cannot act as
// (a Parse Server store: roles without a user; anything but anonymous
// without the master key).
func checkIdentity(st store.Store, id agent.Identity) error {
	ps, ok := st.(*parserest.Store)
	if !ok {
		return nil
	}
	if err := ps.CheckIdentity(id.Mode == agent.AuthMaster, id.UserID, id.Roles); err != nil {
		return fmt.Errorf("identity %s: %w", id.Mode, err)
	}
	return nil
}

// checkPolicyIdentities runs checkIdentity over a policy's profiles whose
// identity is fixed (a session-token profile acts as each token's user).
func checkPolicyIdentities(st store.Store, pol *policy.Policy) error {
	if _, ok := st.(*parserest.Store); !ok || pol == nil {
		return nil
	}
	for _, name := range pol.Names() {
		prof := pol.Profile(name)
		var id agent.Identity
		switch prof.Identity.Kind {
		case policy.IdentityMaster:
			id = agent.Identity{Mode: agent.AuthMaster}
		case policy.IdentityRoles:
			id = agent.Identity{Mode: agent.AuthRole, Roles: prof.Identity.Roles}
		case policy.IdentityUser:
			id = agent.Identity{Mode: agent.AuthUser, UserID: prof.Identity.User}
		default:
			continue
		}
		if err := checkIdentity(st, id); err != nil {
			return fmt.Errorf("policy profile %q: %w", name, err)
		}
	}
	return nil
}
