package tools_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/tools"
)

// run calls a registered tool's handler directly, as the agent a: no
// guard runs, so the handler's own judgement is what is tested.
func run(t *testing.T, a *agent.Agent, gates agent.Gates, name string, args any) (any, error) {
	t.Helper()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	reg := tools.NewRegistry()
	tool, ok := reg.Get(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cfg := tools.DefaultConfig
	cfg.Gates = gates
	return tool.Handler(context.Background(), &tools.Call{Scope: agent.NewScope(a, st), Args: raw, Registry: reg, Config: &cfg})
}

// would_permit judges the tier first; a call through the server never gets
// that far (the tool is admin only), so the handler is called directly.
func TestWouldPermitTier(t *testing.T) {
	ro := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster})
	got, err := run(t, ro, agent.Gates{}, "would_permit", map[string]any{"tool": "create_object", "arguments": map[string]any{"class_name": "Ticket"}})
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Verdict{Reason: "permission_tier", DeniedAt: "permission", Message: "tool create_object needs write permission; this agent is readonly"} // the words dispatch refuses with
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	got, _ = run(t, ro, agent.Gates{}, "would_permit", map[string]any{"tool": "query_class", "arguments": `{"class_name":"Ticket"}`})
	if d := cmp.Diff(agent.Verdict{Allowed: true}, got); d != "" {
		t.Fatalf("arguments as a string (-want +got):\n%s", d)
	}
}

func TestToolInfo(t *testing.T) {
	reg := tools.NewRegistry()
	for name, want := range map[string]agent.ToolInfo{
		"query_class":    {Name: "query_class", Permission: agent.Readonly, ReadOnly: true, Op: parse.OpFind},
		"count_objects":  {Name: "count_objects", Permission: agent.Readonly, ReadOnly: true, Op: parse.OpCount},
		"get_objects":    {Name: "get_objects", Permission: agent.Readonly, ReadOnly: true, Op: parse.OpGet},
		"aggregate":      {Name: "aggregate", Permission: agent.Readonly, ReadOnly: true, Op: parse.OpFind},
		"create_object":  {Name: "create_object", Permission: agent.Write, Gate: agent.GateRawCRUD, Op: parse.OpCreate},
		"update_object":  {Name: "update_object", Permission: agent.Write, Gate: agent.GateRawCRUD, Op: parse.OpUpdate},
		"delete_object":  {Name: "delete_object", Permission: agent.Write, Gate: agent.GateRawCRUD, Op: parse.OpDelete},
		"create_class":   {Name: "create_class", Permission: agent.Admin, Gate: agent.GateRawSchema, Op: parse.OpAddField},
		"delete_class":   {Name: "delete_class", Permission: agent.Admin, Gate: agent.GateRawSchema, Op: parse.OpAddField},
		"call_method":    {Name: "call_method", Permission: agent.Readonly},
		"describe_agent": {Name: "describe_agent", Permission: agent.Admin, ReadOnly: true},
		"would_permit":   {Name: "would_permit", Permission: agent.Admin, ReadOnly: true},
	} {
		tool, ok := reg.Get(name)
		if !ok {
			t.Fatalf("no tool %s", name)
		}
		if d := cmp.Diff(want, tool.Info()); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
}

func TestAllowed(t *testing.T) {
	reg := tools.NewRegistry()
	names := func(a *agent.Agent, g agent.Gates, cat string) []string {
		var out []string
		for _, tool := range reg.Allowed(a, g, cat) {
			out = append(out, tool.Name)
		}
		return out
	}
	admin := agent.New(agent.Admin, agent.Identity{Mode: agent.AuthMaster})
	if got := names(admin, agent.Gates{}, "mutation"); !cmp.Equal(got, []string{"call_method"}) {
		t.Fatalf("gates closed: %v", got)
	}
	if got := names(admin, agent.Gates{WriteTools: true, RawCRUD: true}, "mutation"); !cmp.Equal(got, []string{"call_method", "create_object", "delete_object", "update_object"}) {
		t.Fatalf("raw CRUD open: %v", got)
	}
	all := agent.Gates{WriteTools: true, SchemaOps: true, RawCRUD: true, RawSchema: true}
	if got := names(admin, all, "mutation"); len(got) != 6 {
		t.Fatalf("all open: %v", got)
	}
	admin.Policy.Tools = agent.NameFilter{Only: []string{"delete_class", "query_class"}}
	if got := names(admin, all, ""); !cmp.Equal(got, []string{"query_class", "delete_class"}) {
		t.Fatalf("only: %v", got)
	}
	w := agent.New(agent.Write, agent.Identity{Mode: agent.AuthMaster})
	w.Policy.Tools = agent.NameFilter{Only: []string{"delete_class", "query_class"}}
	if got := names(w, all, ""); !cmp.Equal(got, []string{"query_class"}) {
		t.Fatalf("a filter cannot elevate: %v", got)
	}
}

func TestMethodsFor(t *testing.T) {
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	params := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"reason": {Type: "string"}}}
	cat := &agent.Catalog{Methods: map[string]*agent.Method{
		"Ticket.close":   {Class: "Ticket", Name: "close", Description: "Close it.", Permission: agent.Write, Instance: true, Kind: agent.MethodUpdate, SupportsDryRun: true, Parameters: params, Set: map[string]any{"status": "closed", "secret_field": "x"}},
		"Ticket.summary": {Class: "Ticket", Name: "summary", Permission: agent.Readonly, Kind: agent.MethodGo},
		"Ticket.purge":   {Class: "Ticket", Name: "purge", Permission: agent.Admin, Instance: true, Destructive: true, Kind: agent.MethodGo},
		"Project.rename": {Class: "Project", Name: "rename", Permission: agent.Write, Kind: agent.MethodUpdate},
	}}
	mk := func(perm agent.Permission, methods agent.NameFilter, classes agent.NameFilter) *agent.Scope {
		a := agent.New(perm, agent.Identity{Mode: agent.AuthMaster})
		a.Policy = agent.Policy{Catalog: cat, Methods: methods, Classes: classes}
		return agent.NewScope(a, st)
	}
	names := func(ms []map[string]any) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m["name"].(string))
		}
		return out
	}
	if got := names(tools.MethodsFor(mk(agent.Readonly, agent.NameFilter{}, agent.NameFilter{}), "Ticket")); !cmp.Equal(got, []string{"summary"}) {
		t.Fatalf("readonly: %v", got)
	}
	if got := names(tools.MethodsFor(mk(agent.Admin, agent.NameFilter{}, agent.NameFilter{}), "Ticket")); !cmp.Equal(got, []string{"close", "purge", "summary"}) {
		t.Fatalf("admin: %v", got)
	}
	if got := names(tools.MethodsFor(mk(agent.Admin, agent.NameFilter{Except: []string{"Ticket.purge"}}, agent.NameFilter{}), "Ticket")); !cmp.Equal(got, []string{"close", "summary"}) {
		t.Fatalf("method filter: %v", got)
	}
	if got := tools.MethodsFor(mk(agent.Admin, agent.NameFilter{}, agent.NameFilter{Except: []string{"Ticket"}}), "Ticket"); got != nil {
		t.Fatalf("filtered-out class: %v", got)
	}
	ms := tools.MethodsFor(mk(agent.Write, agent.NameFilter{}, agent.NameFilter{}), "Ticket")
	want := map[string]any{"name": "close", "description": "Close it.", "permission": "write", "instance": true, "destructive": false, "supports_dry_run": true, "parameters": params}
	if d := cmp.Diff(want, ms[0]); d != "" {
		t.Fatalf("close (-want +got):\n%s", d)
	}
	if b, _ := json.Marshal(ms); strings.Contains(string(b), "secret_field") {
		t.Fatal("the method's field template is disclosed")
	}
}
