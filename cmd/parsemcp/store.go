package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/flagconfig"
	"github.com/parsemcp/parsemcp/internal/reqlog"
	"github.com/parsemcp/parsemcp/internal/telemetry"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/policy"
	"github.com/parsemcp/parsemcp/ratelimit"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/subscribe"
	"github.com/parsemcp/parsemcp/tools"
)

// storeFlags are the flags shared by the commands that open a store.
type storeFlags struct {
	store      string
	demo       bool
	demoRows   int
	permission string
	asUser     string
	asRoles    []string
	anonymous  bool
	verbose    bool
	logFormat  string
	tools      tools.Config
	maxBytes   int
	budget     int
	budgets    map[string]int
	timeouts   map[string]string
	audit      string
	costPerMT  float64
	rateLimit  string
	redisURL   string
	redisPfx   string
	policy     string
	agentName  string
	// approvals and progress
	approvalTimeout time.Duration
	noApproval      bool
	heartbeat       time.Duration
	resultContent   mcpserver.ResultContent // serve and stdio only
	liveDebounce    time.Duration
	dbMaxConns      int
	fed             fedFlags
	oauth           *oauthFlags    // serve only
	pol             *policy.Policy // loaded by newServer
	closers         []func()       // run before the store closes
	// inProcess is set when the server answers this process's own client
	// (ask, chat): the notices meant for an operator exposing a server
	// (the master key, whose use the client's banner names; the change
	// feed, which serves subscribers) are left out.
	inProcess bool
	poolSize  int // database connections of the opened store (0: unknown)
}

func (f *storeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.store, "store", "", "store to serve: sqlite:PATH (or a .sqlite/.db path), postgres://USER@HOST:PORT/DB, or a running Parse Server as parse+https://APP_ID@HOST/parse (keys: --parse-master-key or PARSEMCP_PARSE_MASTER_KEY, …; docs/PARSE_SERVER.md); env PARSEMCP_STORE")
	registerParseKeys(fl)
	fl.BoolVar(&f.demo, "demo", false, "serve the demo dataset (created in a cached SQLite file when --store is not given)")
	fl.IntVar(&f.demoRows, "demo-rows", 10000, "size of the demo dataset created by --demo")
	fl.StringVar(&f.permission, "permission", "readonly", "agent permission tier: readonly, write or admin; env PARSEMCP_PERMISSION")
	fl.StringVar(&f.asUser, "as-user", "", "act as this _User objectId (ACL and CLP apply) instead of the master key")
	fl.StringSliceVar(&f.asRoles, "as-role", nil, "role names held (with --as-user, or alone to act as a role)")
	fl.BoolVar(&f.anonymous, "anonymous", false, "act as an anonymous caller (public rows only)")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "debug logging")
	fl.StringVar(&f.logFormat, "log-format", "text", "log lines as text (key=value) or json; lines about a request carry its request_id, correlation_id and trace_id; argument values, rows and secrets are never logged")
	fl.Int64Var(&f.tools.FullScanThreshold, "full-scan-threshold", tools.DefaultConfig.FullScanThreshold, "a full scan of a class with more rows than this is refused under --refuse-full-scans; explain_query reports the row count of such scans (0: no threshold, nothing refused)")
	fl.StringToStringVar(&f.timeouts, "timeout", nil, "per-tool time limits, e.g. query_class=10s,aggregate=2m (defaults: aggregate 60s, query_class 30s, count_objects 20s, …)")
	fl.StringVar(&f.rateLimit, "rate-limit", "600/m", "tool calls per principal (user, roles or key mode), as N/s or N/m; 0 disables")
	fl.StringVar(&f.redisURL, "redis", "", "share the rate limit and the live change stream (resource subscriptions) through Redis (redis://HOST:PORT/DB) across server instances; the rate limit fails closed when Redis is unreachable; env PARSEMCP_REDIS")
	fl.StringVar(&f.redisPfx, "redis-prefix", "parsemcp", "prefix of the Redis keys and channels: instances serving the same application share one; deployments sharing a Redis use different ones")
	fl.StringVar(&f.audit, "audit", "", "audit events: stderr, store (the master-only _AgentAudit class), or a file path (JSON lines, appended); env PARSEMCP_AUDIT")
	fl.Float64Var(&f.costPerMT, "cost-per-mtok", 0, "USD per million tokens a model pays to read tool results: audit events carry est_cost_usd at this rate; 0 (the default): no rate, no est_cost_usd")
	fl.IntVar(&f.budget, "response-budget", mcpserver.DefaultMaxResponseBytes/tools.BytesPerToken, "response budget in tokens (4 bytes each): listings (query_class, export_data, aggregate, get_objects, group_by, group_by_date, distinct) are cut to fit with a next_call; other results over it are refused with too_large")
	fl.StringToIntVar(&f.budgets, "tool-response-budget", nil, "per-tool response budgets in tokens, e.g. export_data=16000,query_class=2000")
	fl.IntVar(&f.maxBytes, "max-response-bytes", 0, "the response budget in bytes (overrides --response-budget)")
	fl.BoolVar(&f.tools.ExposeExplain, "expose-explain", false, "show the database's plan text and index names in explain_query and get_schema (they reveal the index layout)")
	fl.BoolVar(&f.tools.RefuseFullScans, "refuse-full-scans", false, "every read tool that can scan (query_class, count_objects, export_data, aggregate, group_by, group_by_date, distinct, get_sample_objects, and explain_query) refuses a full scan of a class larger than --full-scan-threshold; pipelines are judged by their leading $match")
	fl.StringSliceVar(&f.tools.FullScanAllowed, "full-scan-allow", nil, "classes --refuse-full-scans spares, e.g. Organization,Project (with the policy's allow_full_scan classes)")
	var hidePlans bool
	fl.BoolVar(&hidePlans, "hide-plans", false, "")
	_ = fl.MarkDeprecated("hide-plans", "plans are hidden unless --expose-explain")
	fl.StringVar(&f.policy, "policy", "", "policy file (YAML: agent profiles, class metadata, declared methods; docs/POLICY.md), or \"demo\" for the demo's policy; env PARSEMCP_POLICY")
	fl.StringVar(&f.agentName, "agent", "", "policy profile for requests without a bearer token (stdio, call); env PARSEMCP_AGENT")
	fl.DurationVar(&f.approvalTimeout, "approval-timeout", mcpserver.DefaultApprovalTimeout, "how long a destructive change waits for a person's approval (elicitation) before it is refused")
	fl.BoolVar(&f.noApproval, "no-approval", false, "run destructive changes (delete_object, delete_class, destructive methods) without asking a person: for unattended pipelines only")
	fl.DurationVar(&f.liveDebounce, "live-debounce", subscribe.DefaultWindow, "resource subscriptions: at most one notifications/resources/updated per session and resource in this window")
	fl.IntVar(&f.dbMaxConns, "db-max-conns", 0, "database connections at most (default: PostgreSQL 20, or the URL's pool_max_conns; SQLite 16); must stay above --max-inflight so one agent's slow queries cannot take every connection")
	registerGates(fl, &f.tools.Gates)
	f.fed.register(fl)
	// What ask and chat read from the environment besides their own
	// (applyEnv): the variables these flags have always had.
	for _, name := range []string{"store", "redis", "audit", "policy", "agent", "permission", "federation", "federation-username"} {
		flagconfig.Env(fl, name, flagconfig.EnvName(EnvPrefix, name))
	}
}

// registerHeartbeat adds --heartbeat to the commands whose clients may
// send a progress token (serve, stdio); call, ask and chat never do.
func (f *storeFlags) registerHeartbeat(fl *pflag.FlagSet) {
	fl.DurationVar(&f.heartbeat, "heartbeat", mcpserver.DefaultHeartbeatInterval, "progress heartbeat interval of running tool calls that carry a progress token")
}

// registerResultContent adds --result-content to the commands serving MCP
// clients (serve, stdio); its variable is PARSEMCP_RESULT_CONTENT. A value
// other than both, text or structured is refused when the flags are read.
func (f *storeFlags) registerResultContent(fl *pflag.FlagSet) {
	f.resultContent = mcpserver.ResultBoth
	fl.Var(resultContentValue{&f.resultContent}, "result-content", "how results of tools with an output schema travel to clients at protocol 2025-06-18 and later: both (a text block and structuredContent, the specification's recommendation; the response budget holds both copies), text (the text block only; tools/list declares no output schemas), or structured (structuredContent only, with a one-line text block: clients that read only content see no data)")
}

// resultContentValue is --result-content's value (mcpserver.ParseResultContent).
type resultContentValue struct{ rc *mcpserver.ResultContent }

func (v resultContentValue) Set(s string) error {
	rc, err := mcpserver.ParseResultContent(s)
	if err != nil {
		return err
	}
	*v.rc = rc
	return nil
}
func (v resultContentValue) String() string {
	if v.rc == nil {
		return ""
	}
	return string(*v.rc)
}
func (resultContentValue) Type() string { return "both|text|structured" }

// guidePermission lets MCP_AGENT_PERMISSIONS, the reference guide's name,
// set --permission of the commands that serve one local client (stdio,
// call, ask, chat; PARSEMCP_PERMISSION wins). serve's tier stays the
// operator's alone.
func guidePermission(fl *pflag.FlagSet) {
	flagconfig.Alias(fl, "permission", "MCP_AGENT_PERMISSIONS")
	fl.Lookup("permission").Usage += " (or MCP_AGENT_PERMISSIONS)"
}

// registerGates adds the operator's write gates as flags: their variables
// are PARSEMCP_ALLOW_*, else the reference guide's PARSE_AGENT_ALLOW_*.
// A gate opens on 1, true, yes or on (any case); any other value leaves
// it closed.
func registerGates(fl *pflag.FlagSet, g *agent.Gates) {
	for _, gate := range []struct {
		name, env, guide, usage string
		on                      *bool
	}{
		{"allow-write-tools", agent.EnvAllowWriteTools, "PARSE_AGENT_ALLOW_WRITE_TOOLS", "open writes: declared methods of permission write, and with --allow-raw-crud create/update/delete_object", &g.WriteTools},
		{"allow-schema-ops", agent.EnvAllowSchemaOps, "PARSE_AGENT_ALLOW_SCHEMA_OPS", "open schema operations: declared methods of permission admin, and with --allow-raw-schema create/delete_class", &g.SchemaOps},
		{"allow-raw-crud", agent.EnvAllowRawCRUD, "PARSE_AGENT_ALLOW_RAW_CRUD", "open create/update/delete_object (with --allow-write-tools)", &g.RawCRUD},
		{"allow-raw-schema", agent.EnvAllowRawSchema, "PARSE_AGENT_ALLOW_RAW_SCHEMA", "open create/delete_class (with --allow-schema-ops)", &g.RawSchema},
	} {
		fl.Var(gateValue{gate.on}, gate.name, gate.usage+"; env "+gate.env+" (or "+gate.guide+")")
		fl.Lookup(gate.name).NoOptDefVal = "true"
		flagconfig.Env(fl, gate.name, gate.env)
		flagconfig.Alias(fl, gate.name, gate.guide)
	}
}

// gateValue is a write gate's flag value (agent.GateOpen).
type gateValue struct{ on *bool }

func (g gateValue) Set(v string) error { *g.on = agent.GateOpen(v); return nil }
func (g gateValue) String() string     { return strconv.FormatBool(*g.on) }
func (g gateValue) Type() string       { return "bool" }

// gatesFromEnv reads the write gates from the environment alone (the
// version command, which has no store flags).
func gatesFromEnv() agent.Gates {
	var g agent.Gates
	fs := pflag.NewFlagSet("gates", pflag.ContinueOnError)
	registerGates(fs, &g)
	_, _ = flagconfig.Apply(fs, flagconfig.Options{DotEnv: dotEnv}) // a gate takes any value
	return g
}

// loadPolicy reads --policy ("demo" is the built-in demo policy) and checks
// it against the store. It returns nil when no policy is configured.
func (f *storeFlags) loadPolicy(ctx context.Context, log *slog.Logger, st store.Store) (*policy.Policy, error) {
	if f.policy == "" {
		if f.agentName != "" {
			return nil, fmt.Errorf("--agent needs --policy")
		}
		return nil, nil
	}
	if f.asUser != "" || len(f.asRoles) > 0 || f.anonymous || f.permission != "readonly" {
		return nil, fmt.Errorf("with --policy, identities and permissions come from the policy's agent profiles: drop --as-user, --as-role, --anonymous and --permission")
	}
	var pol *policy.Policy
	var err error
	if f.policy == "demo" {
		pol, err = policy.Demo()
	} else {
		var known []string
		for _, t := range tools.NewRegistry().List() {
			known = append(known, t.Name)
		}
		pol, err = policy.Load(f.policy, policy.Options{KnownTools: known})
	}
	if err != nil {
		return nil, err
	}
	if err := pol.Validate(ctx, st); err != nil {
		return nil, fmt.Errorf("policy %s: %w", f.policy, err)
	}
	if err := checkPolicyIdentities(st, pol); err != nil {
		return nil, fmt.Errorf("policy %s: %w", f.policy, err)
	}
	for _, w := range pol.Warnings {
		log.Warn("policy", "warning", w)
	}
	if f.agentName != "" && pol.Profile(f.agentName) == nil {
		return nil, fmt.Errorf("--agent %q: no such profile in the policy (have %v)", f.agentName, pol.Names())
	}
	for _, name := range pol.Names() {
		if !f.inProcess && pol.Profile(name).Identity.Kind == policy.IdentityMaster {
			log.Warn("agent profile acts with the master key: every row of every visible class, ACLs ignored", "profile", name)
		}
	}
	log.Info("policy loaded", "policy", f.policy, "agents", pol.Names(), "default_agent", pol.DefaultAgent)
	return pol, nil
}

// unauthenticated reports whether a loaded policy serves requests that
// carry no bearer token.
func (f *storeFlags) unauthenticated() bool {
	return f.pol != nil && (f.agentName != "" || f.pol.DefaultAgent != "")
}

// policyFactory builds each request's agent from the policy: a bearer
// token selects its profile; without one, --agent or the policy's
// default_agent applies (over stdio there are no headers at all).
func (f *storeFlags) policyFactory(pol *policy.Policy, st store.Store) mcpserver.AgentFactory {
	return func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		name := f.agentName
		if r.Header != nil && (r.Header.Get("Authorization") != "" || name == "") {
			var err error
			if name, err = pol.Select(r.Header); err != nil {
				return nil, err
			}
		}
		if name == "" {
			name = pol.DefaultAgent
		}
		if name == "" {
			return nil, fmt.Errorf("%w: no agent profile: pass --agent or set settings.default_agent", agent.ErrUnauthorized)
		}
		return pol.Agent(ctx, name, st, r.Header)
	}
}

// logger is the command's logger (--log-format, --verbose), also made the
// process's default so that every package's lines share the format.
func (f *storeFlags) logger() (*slog.Logger, error) {
	log, err := reqlog.New(os.Stderr, f.logFormat, f.level())
	if err != nil {
		return nil, fmt.Errorf("--log-format: %w", err)
	}
	slog.SetDefault(log)
	return log, nil
}

func (f *storeFlags) level() slog.Level {
	if f.verbose {
		return slog.LevelDebug
	}
	return slog.LevelInfo
}

// openStore opens the configured store, creating the demo data if asked.
func (f *storeFlags) openStore(ctx context.Context, log *slog.Logger) (store.Store, error) {
	spec := f.store
	if spec == "" {
		if !f.demo {
			return nil, fmt.Errorf("no store: pass --store sqlite:PATH, or --demo to serve the demo dataset")
		}
		path, err := cachedDemo(ctx, log, f.demoRows)
		if err != nil {
			return nil, err
		}
		spec = "sqlite:" + path
	}
	// Only --demo sets a database up (creating a SQLite file); serving
	// never runs DDL otherwise.
	st, where, err := openSpec(ctx, spec, log, f.dbMaxConns, f.demo && f.store != "")
	if err != nil {
		return nil, err
	}
	if f.demo && f.store != "" {
		if err := ensureDemo(ctx, log, st, f.demoRows); err != nil {
			st.Close()
			return nil, err
		}
	}
	log.Info("store opened", "store", where)
	return st, nil
}

// openSpec opens sqlite:PATH (or a .sqlite/.db path) or a postgres:// URL,
// and returns the store with a printable description (no password). log,
// when not nil, is the PostgreSQL change feed's logger; maxConns, when
// positive, sizes the connection pool (--db-max-conns). With create, the
// store is set up (a SQLite file created, `_SCHEMA` and the system
// classes made where missing: demo, migrate); without it, opening runs no
// DDL and a database that is not set up is an error.
func openSpec(ctx context.Context, spec string, log *slog.Logger, maxConns int, create bool) (store.Store, string, error) {
	if parserest.IsURL(spec) {
		return openParse(ctx, spec, log)
	}
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		opts := []postgres.Option{postgres.WithMaxConns(maxConns)}
		if log != nil {
			opts = append(opts, postgres.WithLogger(log))
		}
		open := postgres.Open
		if create {
			open = postgres.Create
		}
		st, err := open(ctx, spec, opts...)
		if err != nil {
			return nil, "", fmt.Errorf("open %s: %w", redact(spec), err)
		}
		return st, redact(spec), nil
	}
	path, err := sqlitePath(spec)
	if err != nil {
		return nil, "", err
	}
	open := sqlite.Open
	if create {
		open = sqlite.Create
	}
	st, err := open(ctx, path, sqlite.WithMaxConns(maxConns))
	if err != nil {
		return nil, "", err
	}
	return st, "sqlite:" + path, nil
}

// poolSize returns how many database connections st opens at most (0
// when it has no pool of its own).
func poolSize(st store.Store) int {
	switch st := st.(type) {
	case *postgres.Store:
		return int(st.Pool().Config().MaxConns)
	case *sqlite.Store:
		return st.DB().Stats().MaxOpenConnections
	}
	return 0
}

func sqlitePath(spec string) (string, error) {
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(spec, "sqlite:"), "//")
		if p == "" {
			return "", fmt.Errorf("store %q: missing path after sqlite:", spec)
		}
		return p, nil
	case strings.HasSuffix(spec, ".sqlite"), strings.HasSuffix(spec, ".db"), strings.HasSuffix(spec, ".sqlite3"):
		return spec, nil
	}
	return "", fmt.Errorf("store %q: unknown store; use sqlite:PATH, postgres://USER@HOST/DB or parse+https://APP_ID@HOST/parse", redact(spec))
}

// redact hides the secrets of a store address (flagconfig.Redact).
func redact(spec string) string { return flagconfig.Redact(spec) }

// ensureDemo fills st with the demo data unless it already holds it.
func ensureDemo(ctx context.Context, log *slog.Logger, st store.Store, rows int) error {
	schemas, err := st.Schemas(ctx)
	if err != nil {
		return err
	}
	for _, s := range schemas {
		if s.ClassName == demo.Classes()[0] {
			return nil // already there
		}
	}
	log.Info("writing demo dataset", "rows", rows)
	_, err = demo.Generate(ctx, st, demo.Options{Rows: rows})
	return err
}

// cachedDemo returns the path of a cached demo database of the given size,
// creating it (in a temporary file renamed into place) when absent.
func cachedDemo(ctx context.Context, log *slog.Logger, rows int) (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil || dir == "" {
		dir = os.TempDir()
	}
	dir = filepath.Join(dir, "parsemcp")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("demo-%s-%d.sqlite", demo.Version, rows))
	if _, err := os.Stat(path); err == nil {
		log.Info("reusing cached demo dataset", "path", path)
		return path, nil
	}
	tmp, err := os.CreateTemp(dir, "demo-*.sqlite.tmp")
	if err != nil {
		return "", err
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer func() {
		for _, p := range []string{tmpPath, tmpPath + "-wal", tmpPath + "-shm"} {
			os.Remove(p)
		}
	}()
	log.Info("creating demo dataset", "rows", rows, "path", path)
	st, err := sqlite.Create(ctx, tmpPath)
	if err != nil {
		return "", err
	}
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: rows}); err != nil {
		st.Close()
		return "", fmt.Errorf("demo data: %w", err)
	}
	if err := st.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return "", err
	}
	return path, nil
}

// agentFactory returns the factory of the agents this process serves, from
// the identity flags. Without an identity flag the agent holds the master
// key (sees every row), read-only unless --permission says otherwise.
// SessionHeader carries a Parse session token: a request with one acts as
// that token's user (its roles resolved from _Role); an invalid or expired
// token is refused with 401.
const SessionHeader = "X-Parse-Session-Token"

func (f *storeFlags) agentFactory(ctx context.Context, log *slog.Logger, st store.Store) (mcpserver.AgentFactory, error) {
	perm, err := agent.ParsePermission(f.permission)
	if err != nil {
		return nil, err
	}
	var id agent.Identity
	switch {
	case f.anonymous:
		if f.asUser != "" || len(f.asRoles) > 0 {
			return nil, fmt.Errorf("--anonymous cannot be combined with --as-user or --as-role")
		}
		id = agent.Identity{Mode: agent.AuthAnonymous}
	case f.asUser != "":
		if id, err = agent.UserIdentity(ctx, st, f.asUser); err != nil {
			return nil, fmt.Errorf("--as-user: %w", err)
		}
		for _, r := range f.asRoles {
			if !slices.Contains(id.Roles, r) {
				id.Roles = append(id.Roles, r)
			}
		}
		log.Info("agents act as a user", "user", id.UserID, "roles", id.Roles)
	case len(f.asRoles) > 0:
		id = agent.Identity{Mode: agent.AuthRole, Roles: f.asRoles}
	default:
		id = agent.Identity{Mode: agent.AuthMaster}
		if !f.inProcess {
			log.Warn("agents act with the master key: every row is visible; use --as-user, --as-role or --anonymous to apply Parse ACLs", "permission", perm)
		}
	}
	if err := checkIdentity(st, id); err != nil {
		return nil, err
	}
	return func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		if tok := r.Header.Get(SessionHeader); tok != "" {
			sid, err := agent.SessionIdentity(ctx, st, tok, time.Now())
			if err != nil {
				return nil, err
			}
			return agent.New(perm, sid), nil
		}
		return agent.New(perm, id), nil
	}, nil
}

// newServer opens the store and builds the MCP server. closeAll stops the
// server, flushes the audit sink and closes the store, in that order.
func (f *storeFlags) newServer(ctx context.Context, log *slog.Logger) (srv *mcpserver.Server, closeAll func(), err error) {
	storeLog := log
	if f.inProcess && !f.verbose {
		// ask and chat: the store's notices about its change feed concern
		// a server's subscribers, not a client in this process.
		storeLog = logger(slog.LevelError)
	}
	st, err := f.openStore(ctx, storeLog)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil { // release what was opened
			for _, c := range f.closers {
				c()
			}
			f.closers = nil
			st.Close()
		}
	}()
	traced, flush, err := telemetry.Setup(ctx, mcpserver.Version)
	if err != nil {
		return nil, nil, err
	}
	if traced {
		log.Info("tracing on: spans go out over OTLP/HTTP as the OTEL_* variables say")
		f.closers = append(f.closers, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = flush(ctx)
		})
	}
	f.poolSize = poolSize(st)
	pol, err := f.loadPolicy(ctx, log, st)
	if err != nil {
		return nil, nil, err
	}
	f.pol = pol
	if fs, ok := st.(store.FeedScoped); ok && !f.inProcess {
		switch reach, err := fs.FeedReach(ctx); {
		case reach == store.FeedNone && err != nil && errors.Is(err, store.ErrFeedNotInstalled):
			log.Warn("resource subscriptions are refused: "+err.Error(), "store", "postgres")
		case reach == store.FeedOwnWrites:
			log.Warn("the PostgreSQL change feed is not installed: resource subscriptions see only the writes made through this process; run `parsemcp migrate --store …` once")
		}
	}
	var factory mcpserver.AgentFactory
	if pol != nil {
		factory = f.policyFactory(pol, st)
	} else if factory, err = f.agentFactory(ctx, log, st); err != nil {
		return nil, nil, err
	}
	if f.oauth.enabled() {
		var stop func()
		if factory, stop, err = f.oauth.factory(ctx, log, pol, st, factory); err != nil {
			return nil, nil, err
		}
		f.closers = append(f.closers, stop)
	}
	if f.fed.tokens != "" {
		ts, err := openTokens(ctx, f.fed.tokens, st)
		if err != nil {
			return nil, nil, fmt.Errorf("--tokens: %w", err)
		}
		factory = f.tokenFactory(ts, factory, st, log)
		log.Info("personal access tokens required over HTTP", "tokens", f.fed.tokens)
	}
	if g := f.tools.Gates; g != (agent.Gates{}) {
		log.Warn("write gates open", agent.EnvAllowWriteTools, g.WriteTools, agent.EnvAllowSchemaOps, g.SchemaOps, agent.EnvAllowRawCRUD, g.RawCRUD, agent.EnvAllowRawSchema, g.RawSchema)
	}
	timeouts := map[string]time.Duration{}
	for name, v := range f.timeouts {
		d, err := time.ParseDuration(v)
		_, known := tools.NewRegistry().Get(name)
		known = known || (f.fed.mode != "" && strings.Contains(name, "-")) // a remote tool
		if err != nil || d <= 0 || !known {
			return nil, nil, fmt.Errorf("--timeout %s=%s: want a known tool and a positive duration such as 30s", name, v)
		}
		timeouts[name] = d
	}
	budget := f.maxBytes
	if budget <= 0 {
		if f.budget <= 0 {
			return nil, nil, fmt.Errorf("--response-budget %d: want a positive number of tokens", f.budget)
		}
		budget = f.budget * tools.BytesPerToken
	}
	budgets := map[string]int{}
	for name, n := range f.budgets {
		if _, known := tools.NewRegistry().Get(name); !known || n <= 0 {
			return nil, nil, fmt.Errorf("--tool-response-budget %s=%d: want a known tool and a positive number of tokens", name, n)
		}
		budgets[name] = n * tools.BytesPerToken
	}
	opts := mcpserver.Options{Store: st, Agents: factory, Logger: log, ToolConfig: &f.tools, MaxResponseBytes: budget, ResponseBudgets: budgets, Timeouts: timeouts, CostPerMillionTokens: f.costPerMT,
		ApprovalTimeout: f.approvalTimeout, DisableApproval: f.noApproval, HeartbeatInterval: f.heartbeat, ResultContent: f.resultContent}
	if secret := os.Getenv("PARSEMCP_APPROVAL_SECRET"); secret != "" {
		opts.ApprovalSecret = []byte(secret)
	}
	if f.noApproval {
		log.Warn("destructive changes run without a person's approval (--no-approval)")
	}
	// One Redis client serves the shared rate limit and the live change
	// stream.
	var rc *redis.Client
	if f.redisURL != "" {
		ropt, err := redis.ParseURL(f.redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("--redis: %w", err)
		}
		rc = redis.NewClient(ropt)
		f.closers = append(f.closers, func() { rc.Close() })
	}
	limiter, err := f.limiter(rc)
	if err != nil {
		return nil, nil, err
	}
	opts.RateLimit = limiter
	opts.Live = &mcpserver.LiveOptions{Debounce: f.liveDebounce}
	if rc != nil {
		n := subscribe.NewRedis(rc, f.redisPfx+":live", log)
		opts.Live.Notifier = n
		// Closers run in order: the notifier stops before its client.
		f.closers = append([]func(){func() { n.Close() }}, f.closers...)
	}
	switch f.audit {
	case "", "off":
	case "stderr":
		opts.Audit = audit.NewJSONSink(os.Stderr)
	case "store":
		sink, err := audit.NewStoreSink(ctx, st, log)
		if err != nil {
			return nil, nil, fmt.Errorf("--audit store: %w", err)
		}
		opts.Audit = sink
		f.closers = append(f.closers, sink.Close)
	default:
		file, err := os.OpenFile(f.audit, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--audit: %w", err)
		}
		opts.Audit = audit.NewJSONSink(file)
		f.closers = append(f.closers, func() { file.Close() })
	}
	if err := f.fed.start(ctx, log, &opts, &f.closers); err != nil {
		return nil, nil, err
	}
	if srv, err = mcpserver.New(opts); err != nil {
		return nil, nil, err
	}
	return srv, func() {
		srv.Close()
		for _, c := range f.closers {
			c()
		}
		st.Close()
	}, nil
}

// parseRate reads "N/s" or "N/m" (also a bare N, per minute).
func parseRate(spec string) (n int, window time.Duration, err error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(spec), "/")
	n, err = strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("rate %q: want N/s or N/m", spec)
	}
	switch unit {
	case "s", "sec", "second":
		window = time.Second
	case "", "m", "min", "minute":
		window = time.Minute
	default:
		return 0, 0, fmt.Errorf("rate %q: want N/s or N/m", spec)
	}
	return n, window, nil
}

// limiter builds the per-principal limiter: local token buckets, or a
// Redis-shared window on rc (the --redis client) when there is one.
func (f *storeFlags) limiter(rc *redis.Client) (ratelimit.Limiter, error) {
	n, window, err := parseRate(f.rateLimit)
	if err != nil || n == 0 {
		return nil, err
	}
	if rc != nil {
		return ratelimit.NewRedis(rc, f.redisPfx+":rl", n, window)
	}
	return ratelimit.NewLocal(n, window)
}
