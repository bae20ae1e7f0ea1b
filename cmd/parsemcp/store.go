package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/flagconfig"
	"github.com/parsemcp/parsemcp/internal/reqlog"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/policy"
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
