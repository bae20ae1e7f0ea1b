package tools_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

// The shared helpers of the tools tests: a tool call runs against the
// fixture dataset (internal/testing/fixture: users alice and bob,
// projects Apollo, Borealis and Comet, tickets t000000001 to t000000005,
// the master-only Payroll) through the path a call takes in the server,
// and the test reads what the client would read.

// The fixture's tickets, as the tests name them.
const (
	t1 = "t000000001" // Fuel leak, open, priority 1, Apollo, due 2025-06-01
	t2 = "t000000002" // Paint hull, closed, priority 3, Apollo
	t3 = "t000000003" // Ice survey, open, priority 2, Borealis
	t4 = "t000000004" // Orbit calc, in_progress, priority 1, Comet
	t5 = "t000000005" // Hidden task, open, priority 5, no project, ACL {} (master only)
)

// allGates opens every operator gate of the write and schema tools.
var allGates = agent.Gates{WriteTools: true, SchemaOps: true, RawCRUD: true, RawSchema: true}

// master is an agent holding the master key at tier perm.
func master(perm agent.Permission) *agent.Agent {
	return agent.New(perm, agent.Identity{Mode: agent.AuthMaster})
}

// introspector is an admin agent holding the master key whose policy
// exposes the operator-only tools (describe_agent, would_permit).
func introspector() *agent.Agent {
	a := master(agent.Admin)
	a.Policy.Introspection = true
	return a
}

// asUser is an agent acting as the fixture user id at tier perm.
func asUser(perm agent.Permission, id string) *agent.Agent {
	return agent.New(perm, agent.Identity{Mode: agent.AuthUser, UserID: id})
}

// env is the world of a tool call: a fresh fixture store, the built-in
// registry, the calling agent and the operator's configuration.
type env struct {
	t       *testing.T
	store   store.Store
	reg     *tools.Registry
	agent   *agent.Agent
	config  tools.Config
	budget  int
	approve tools.ApproveFunc
}

// newEnv returns a world of its own (a new fixture database) in which a
// calls the tools with the default configuration and response budget.
func newEnv(t *testing.T, a *agent.Agent) *env {
	t.Helper()
	return &env{
		t:      t,
		store:  fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite")),
		reg:    tools.NewRegistry(),
		agent:  a,
		config: tools.DefaultConfig,
		budget: tools.DefaultResponseBudget,
	}
}

// as returns the same world with another caller.
func (e *env) as(a *agent.Agent) *env {
	c := *e
	c.agent = a
	return &c
}

// withGates returns the same world with the operator's gates g.
func (e *env) withGates(g agent.Gates) *env {
	c := *e
	c.config.Gates = g
	return &c
}

// withCatalog gives the caller the operator's class metadata and declared
// methods.
func (e *env) withCatalog(cat *agent.Catalog) *env {
	a := *e.agent
	a.Policy.Catalog = cat
	return e.as(&a)
}

// ticketMethods declares methods on Ticket: close (a write update method,
// with a dry run), count (a readonly Go method returning the tickets it
// sees) and drop (an admin, destructive Go method deleting the ticket).
func ticketMethods() *agent.Catalog {
	ms := []*agent.Method{
		{Class: "Ticket", Name: "close", Permission: agent.Write, Instance: true, Kind: agent.MethodUpdate,
			Set: map[string]any{"status": "closed"}, SupportsDryRun: true},
		{Class: "Ticket", Name: "count", Permission: agent.Readonly, Kind: agent.MethodGo,
			Func: func(ctx context.Context, call *agent.MethodCall) (any, error) {
				n, err := call.Scope.Count(ctx, &query.Query{Class: "Ticket"})
				return map[string]any{"tickets": n}, err
			}},
		{Class: "Ticket", Name: "drop", Permission: agent.Admin, Instance: true, Destructive: true, Kind: agent.MethodGo,
			Func: func(ctx context.Context, call *agent.MethodCall) (any, error) {
				_, err := call.Scope.Delete(ctx, "Ticket", call.ObjectID)
				return map[string]any{"dropped": call.ObjectID}, err
			}},
	}
	cat := &agent.Catalog{Methods: map[string]*agent.Method{}}
	for _, m := range ms {
		cat.Methods[m.QualifiedName()] = m
	}
	return cat
}

// admin is the master key at the admin tier with every gate open: who may
// change the schema.
func admin(t *testing.T) *env { return newEnv(t, master(agent.Admin)).withGates(allGates) }

// governed is an admin agent under a class filter (no Payroll) and a row
// filter on Ticket's status, with Ticket's declared methods.
func governed(t *testing.T) *env {
	a := introspector()
	a.Policy.Filters = []agent.ClassFilters{{"Ticket": {"status": "s3cr3t"}}}
	a.Policy.Classes = agent.NameFilter{Except: []string{"Payroll"}}
	return newEnv(t, a).withCatalog(ticketMethods())
}

// group is one {key, value} group of group_by or group_by_date.
func group(key any, value float64) any { return map[string]any{"key": key, "value": value} }

// rawArgs encodes a call's arguments; a string is taken as JSON text.
func rawArgs(t *testing.T, args any) json.RawMessage {
	t.Helper()
	if s, ok := args.(string); ok {
		return json.RawMessage(s)
	}
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (e *env) tool(name string) *tools.Tool {
	e.t.Helper()
	tool, ok := e.reg.Get(name)
	if !ok {
		e.t.Fatalf("no tool %s", name)
	}
	return tool
}

func (e *env) callOf(args json.RawMessage) *tools.Call {
	cfg := e.config
	return &tools.Call{Scope: agent.NewScope(e.agent, e.store), Args: args, Registry: e.reg, Config: &cfg, Approve: e.approve}
}

// call runs a tool as the server's guard chain does: the agent must be
// allowed the tool (agent.MayCall under the operator's gates), the
// arguments must match its declared schema (tools.CheckArgs), the handler
// runs within the tool's time limit, and its result is encoded within the
// response budget (tools.Fit). It returns the JSON object the client
// reads, or the error it is told (tools.AsError).
func (e *env) call(name string, args any) (map[string]any, *tools.Error) {
	e.t.Helper()
	tool := e.tool(name)
	raw := rawArgs(e.t, args)
	if err := e.agent.MayCall(tool.Info(), e.config.Gates); err != nil {
		return nil, tools.AsError(err)
	}
	if err := tools.CheckArgs(tool, raw); err != nil {
		return nil, tools.AsError(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), tool.Timeout)
	defer cancel()
	res, err := tool.Handler(ctx, e.callOf(raw))
	if err != nil {
		return nil, tools.AsError(err)
	}
	b, err := tools.Fit(res, e.budget)
	if err != nil {
		return nil, tools.AsError(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		e.t.Fatalf("%s: the result is not a JSON object: %v\n%s", name, err, b)
	}
	return out, nil
}

// handle runs a tool's handler alone, as the agent, with no guard before
// it: what the handler itself judges.
func (e *env) handle(name string, args any) (any, error) {
	e.t.Helper()
	return e.tool(name).Handler(context.Background(), e.callOf(rawArgs(e.t, args)))
}

// ok calls a tool that must succeed.
func (e *env) ok(name string, args any) map[string]any {
	e.t.Helper()
	out, err := e.call(name, args)
	if err != nil {
		e.t.Fatalf("%s %s: %v", name, rawArgs(e.t, args), err)
	}
	return out
}

// refused calls a tool that must fail with code and a message holding
// want; it returns the error for further checks.
//
// code may name the refusal's kind too, as "code/kind" (withKind): then
// details.kind must be kind.
func (e *env) refused(name string, args any, code, want string) *tools.Error {
	e.t.Helper()
	out, err := e.call(name, args)
	if err == nil {
		e.t.Fatalf("%s %s: want %s, got %v", name, rawArgs(e.t, args), code, out)
	}
	code, kind, hasKind := strings.Cut(code, "/")
	if err.Code != code || !strings.Contains(err.Message, want) || hasKind && err.Details["kind"] != kind {
		e.t.Fatalf("%s %s: want %s (kind %q) %q, got %s %q (details %v)", name, rawArgs(e.t, args), code, kind, want, err.Code, err.Message, err.Details)
	}
	return err
}

// The "code/kind" forms of refusals the tests meet often.
var (
	// classNotFound: an unknown, a hidden and a filtered-out class alike.
	classNotFound = withKind(tools.CodeAccessDenied, "class_not_found")
	// envGate: an operator gate is closed.
	envGate = withKind(tools.CodeAccessDenied, "env_gate")
	// fieldDenied: a field the agent's view of the class lacks (unknown
	// and hidden alike).
	fieldDenied = withKind(tools.CodeAccessDenied, "field_denied")
)

// withKind is the "code/kind" form refused takes: the top-level
// error_code and the finer reason in details.kind.
func withKind(code, kind string) string { return code + "/" + kind }

// next follows a result's next_call: it must name tool, and the call it
// holds must succeed.
func (e *env) next(tool string, out map[string]any) map[string]any {
	e.t.Helper()
	nc, ok := out["next_call"].(map[string]any)
	if !ok {
		e.t.Fatalf("no next_call in %v", out)
	}
	if nc["tool"] != tool {
		e.t.Fatalf("next_call names %v, want %s", nc["tool"], tool)
	}
	return e.ok(tool, nc["arguments"])
}

// addClass creates the class sch in e's store, holding objs.
func (e *env) addClass(sch parse.Schema, objs ...parse.Object) {
	e.t.Helper()
	ctx := context.Background()
	if err := e.store.CreateClass(ctx, sch); err != nil {
		e.t.Fatal(err)
	}
	if len(objs) > 0 {
		if err := e.store.Create(ctx, sch.ClassName, objs); err != nil {
			e.t.Fatal(err)
		}
	}
}

// count is count_objects' answer for class as the master key.
func (e *env) count(class string) float64 {
	e.t.Helper()
	return e.as(master(agent.Readonly)).ok("count_objects", map[string]any{"class_name": class})["count"].(float64)
}

// objs is a list of objects in a result.
func objs(t *testing.T, v any) []map[string]any {
	t.Helper()
	list, ok := v.([]any)
	if !ok {
		t.Fatalf("not a list: %v", v)
	}
	out := make([]map[string]any, len(list))
	for i, x := range list {
		if out[i], ok = x.(map[string]any); !ok {
			t.Fatalf("item %d is not an object: %v", i, x)
		}
	}
	return out
}

// ids are the objectIds of rows, in order.
func ids(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	for _, r := range objs(t, v) {
		out = append(out, r["objectId"].(string))
	}
	return out
}

// keysOf are the sorted field names of an object.
func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// mustNotMention fails when the JSON of v holds any of words.
func mustNotMention(t *testing.T, v any, words ...string) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		if strings.Contains(string(b), w) {
			t.Fatalf("%q leaks into %s", w, b)
		}
	}
}

// refusingScans returns the same world with full scans refused of every
// class holding more than threshold rows.
func (e *env) refusingScans(threshold int64) *env {
	c := *e
	c.config.RefuseFullScans, c.config.FullScanThreshold = true, threshold
	return &c
}

// scanRefused is the refusal of a full scan of the fixture's 5 tickets
// over a threshold of 2.
var (
	scanRefused       = withKind(tools.CodeSecurityBlocked, "full_scan_refused")
	ticketScanRefused = "the query would scan all 5 rows of Ticket (more than 2)"
)

// allowScans is a catalog whose policy spares classes the full-scan
// refusal (allow_full_scan).
func allowScans(classes ...string) *agent.Catalog {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{}}
	for _, c := range classes {
		cat.Classes[c] = &agent.ClassMeta{AllowFullScan: true}
	}
	return cat
}
