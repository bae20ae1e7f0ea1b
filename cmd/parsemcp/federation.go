package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/federation/broker"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store"
)

// fedFlags are the serve/stdio flags of federation and personal access
// tokens.
type fedFlags struct {
	mode         string
	embeddedAddr string
	platform     string
	prefix       string
	clientID     string
	username     string
	callTimeout  time.Duration
	subTTL       time.Duration
	maxSubs      int
	tokens       string
}

func (f *fedFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.mode, "federation", "", "merge remote agents' tools over MQTT v5: \"embedded\" (a broker in this process, on --federation-broker-addr) or a broker URL mqtt://HOST:PORT (docs/FEDERATION.md); env PARSEMCP_FEDERATION")
	fl.StringVar(&f.embeddedAddr, "federation-broker-addr", broker.DefaultAddr, "listen address of the embedded MQTT broker (loopback only)")
	fl.StringVar(&f.platform, "federation-platform", "parsemcp", "platform id: the topic level that separates this server's agents from others' on a shared broker")
	fl.StringVar(&f.prefix, "federation-prefix", federation.DefaultPrefix, "first level of the federation topics")
	fl.StringVar(&f.clientID, "federation-client-id", "", "MQTT client id of the platform (default: random)")
	fl.StringVar(&f.username, "federation-username", "", "MQTT user name of the platform (password: env PARSEMCP_FEDERATION_PASSWORD); env PARSEMCP_FEDERATION_USERNAME")
	fl.DurationVar(&f.callTimeout, "federation-timeout", 30*time.Second, "time limit of a proxied tool call (--timeout NAME=… overrides one tool)")
	fl.DurationVar(&f.subTTL, "federation-subscription-ttl", federation.DefaultSubscriptionTTL, "how long an unused response subscription is kept (each use extends it)")
	fl.IntVar(&f.maxSubs, "federation-max-subscriptions", federation.DefaultMaxSubscriptions, "response subscriptions held at once (least recently used dropped first)")
}

// registerTokens adds --tokens: serve's alone, since tokens are checked
// on HTTP requests only.
func (f *fedFlags) registerTokens(fl *pflag.FlagSet) {
	fl.StringVar(&f.tokens, "tokens", "", "require personal access tokens over HTTP (parsemcp token create): \"store\" (kept in the store) or a file path (for a read-only store); env PARSEMCP_TOKENS")
}

// start connects the federation (and starts the embedded broker) into
// opts; closers run before the store closes, the platform before the
// broker.
func (f *fedFlags) start(ctx context.Context, log *slog.Logger, opts *mcpserver.Options, closers *[]func()) error {
	if f.mode == "" {
		return nil
	}
	url := f.mode
	if f.mode == "embedded" {
		b, err := broker.Start(broker.Options{Addr: f.embeddedAddr, Logger: log.With("component", "mqtt-broker")})
		if err != nil {
			return err
		}
		*closers = append(*closers, func() { b.Close() })
		url = b.URL()
		log.Info("embedded MQTT broker listening", "url", url)
	}
	p, err := federation.Connect(ctx, federation.Options{
		ConnOptions: federation.ConnOptions{Broker: url, ClientID: f.clientID, Username: f.username, Password: os.Getenv("PARSEMCP_FEDERATION_PASSWORD"),
			Prefix: f.prefix, Platform: f.platform, Logger: log},
		CallTimeout: f.callTimeout, SubscriptionTTL: f.subTTL, MaxSubscriptions: f.maxSubs,
		CheckTool: mcpserver.CheckRemoteTool,
	})
	if err != nil {
		return fmt.Errorf("--federation: %w", err)
	}
	*closers = append([]func(){p.Close}, *closers...)
	opts.Federation = p
	log.Info("federation on", "broker", redact(url), "platform", f.platform, "prefix", f.prefix)
	return nil
}

// openTokens opens the token store --tokens names.
func openTokens(ctx context.Context, spec string, st store.Store) (federation.TokenStore, error) {
	if spec == "store" {
		if st == nil {
			return nil, errors.New("--tokens store: no store")
		}
		return federation.NewStoreTokens(ctx, st)
	}
	return federation.NewFileTokens(spec)
}

// tokenFactory requires a personal access token on every HTTP request
// and builds the request's agent from it: the token's policy profile, or
// its Parse user (with --permission's tier), or else the server's own
// identity; then the token's scope narrows it. Over stdio (no headers)
// the local operator's agent applies, without a token.
func (f *storeFlags) tokenFactory(ts federation.TokenStore, inner mcpserver.AgentFactory, st store.Store, log *slog.Logger) mcpserver.AgentFactory {
	return func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		if r.Header == nil {
			return inner(ctx, r)
		}
		bearer, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !federation.IsToken(bearer) {
			return nil, fmt.Errorf("%w: a personal access token is required (Authorization: Bearer pmcp_…)", agent.ErrUnauthorized)
		}
		tok, err := federation.Verify(ctx, ts, bearer, time.Now())
		if errors.Is(err, federation.ErrBadToken) {
			return nil, fmt.Errorf("%w: %v", agent.ErrUnauthorized, err)
		}
		if err != nil {
			return nil, err
		}
		h := http.Header{}
		for k, v := range r.Header {
			if !strings.EqualFold(k, "Authorization") {
				h[k] = v
			}
		}
		var a *agent.Agent
		switch {
		case tok.Agent != "":
			if f.pol == nil || f.pol.Profile(tok.Agent) == nil {
				log.Warn("personal access token names an unknown agent profile", "token", tok.ID, "agent", tok.Agent)
				return nil, fmt.Errorf("%w: the token's agent profile %q does not exist", agent.ErrUnauthorized, tok.Agent)
			}
			a, err = f.pol.Agent(ctx, tok.Agent, st, h)
		case tok.User != "":
			perm, perr := agent.ParsePermission(f.permission)
			if perr != nil {
				return nil, perr
			}
			id, uerr := agent.UserIdentity(ctx, st, tok.User)
			if uerr != nil {
				log.Warn("personal access token names an unknown user", "token", tok.ID, "user", tok.User, "err", uerr)
				return nil, fmt.Errorf("%w: the token's user does not exist", agent.ErrUnauthorized)
			}
			a = agent.New(perm, id)
		default:
			a, err = inner(ctx, mcpserver.RequestInfo{Header: h, Request: r.Request})
		}
		if err != nil {
			return nil, err
		}
		a.Token = &agent.TokenScope{ID: tok.ID, Write: tok.Scope == federation.ScopeWrite, Team: tok.Team}
		return a, nil
	}
}
