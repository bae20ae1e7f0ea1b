package tools_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/tools"
)

// Register replaces an application tool of the same name, as the
// reference guide's registry does, and never a built-in one: a
// replacement would not carry the built-in's governance.
func TestRegisterReplacesApplicationToolsOnly(t *testing.T) {
	r := tools.NewRegistry()
	changes := 0
	defer r.OnChange(func() { changes++ })()
	h := func(context.Context, *tools.Call) (any, error) { return "mine", nil }
	for _, name := range []string{"query_class", "describe_agent", "create_object"} {
		if err := r.Register(&tools.Tool{Name: name, Permission: agent.Readonly, ReadOnly: true, Handler: h}); !errors.Is(err, tools.ErrBuiltinTool) {
			t.Fatalf("a built-in name %s: %v", name, err)
		}
	}
	if got, _ := r.Get("query_class"); got.Category != tools.CategoryQuery || got.Op != parse.OpFind {
		t.Fatal("the refused tool replaced the built-in")
	}
	if got, _ := r.Get("create_object"); got.Gate != agent.GateRawCRUD || got.Permission != agent.Write {
		t.Fatal("the refused tool replaced the built-in's governance")
	}
	if changes != 0 {
		t.Fatalf("%d change notices for refused registrations", changes)
	}
	mine := &tools.Tool{Name: "mine", Handler: h}
	if err := r.Register(mine); err != nil {
		t.Fatal(err)
	}
	if mine.Category != "" || mine.Timeout != 0 || mine.Input != nil {
		t.Fatalf("Register changed the caller's value: %+v", mine)
	}
	if err := r.Register(&tools.Tool{Name: "mine", Description: "v2", Timeout: time.Minute, Handler: h}); err != nil {
		t.Fatalf("a second mine: %v", err)
	}
	if got, _ := r.Get("mine"); got.Description != "v2" || got.Category != tools.CategoryCustom || got.Timeout != time.Minute {
		t.Fatalf("replaced: %+v", got)
	}
	if changes != 2 {
		t.Fatalf("%d change notices, want one per registration", changes)
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
		"describe_agent": {Name: "describe_agent", Permission: agent.Admin, ReadOnly: true, OperatorOnly: true},
		"would_permit":   {Name: "would_permit", Permission: agent.Admin, ReadOnly: true, OperatorOnly: true},
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

// The built-in tools' time limits are the reference guide's.
func TestGuideTimeouts(t *testing.T) {
	r := tools.NewRegistry()
	for name, want := range map[string]time.Duration{
		"aggregate": 60 * time.Second, "query_class": 30 * time.Second, "explain_query": 30 * time.Second,
		"call_method": 60 * time.Second, "get_all_schemas": 15 * time.Second, "get_schema": 10 * time.Second,
		"count_objects": 20 * time.Second, "get_object": 10 * time.Second, "get_sample_objects": 15 * time.Second,
	} {
		if tl, ok := r.Get(name); !ok || tl.Timeout != want {
			t.Errorf("%s: time limit %v, want %v", name, tl.Timeout, want)
		}
	}
}
