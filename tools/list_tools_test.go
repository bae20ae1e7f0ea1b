package tools_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// listed are the names list_tools gives, in its order.
func listed(t *testing.T, out map[string]any) []string {
	t.Helper()
	var names []string
	for _, tl := range objs(t, out["tools"]) {
		names = append(names, tl["name"].(string))
	}
	return names
}

// A readonly agent is offered the read tools, never a write or an admin
// one; each entry names the tool, its category and its description, and
// the categories are explained once.
func TestListToolsReadonly(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("list_tools", nil)
	names := listed(t, out)
	for _, want := range []string{"list_tools", "get_all_schemas", "get_schema", "query_class", "count_objects", "export_data", "aggregate", "call_method"} {
		if !slices.Contains(names, want) {
			t.Errorf("%s is not listed: %v", want, names)
		}
	}
	for _, never := range []string{"create_object", "update_object", "delete_object", "create_class", "delete_class", "describe_agent", "would_permit"} {
		if slices.Contains(names, never) {
			t.Errorf("a readonly agent is offered %s", never)
		}
	}
	first := objs(t, out["tools"])[0]
	if d := cmp.Diff([]string{"category", "description", "name"}, keysOf(first)); d != "" {
		t.Fatalf("an entry's fields (-want +got):\n%s", d)
	}
	if first["name"] != "list_tools" || first["category"] != tools.CategoryDiscovery {
		t.Fatalf("the discovery tools come first: %v", first)
	}
	cats, _ := out["categories"].(map[string]any)
	if len(cats) != len(tools.Categories) || cats[tools.CategoryQuery] != tools.Categories[tools.CategoryQuery] {
		t.Fatalf("categories: %v", cats)
	}
}

// category narrows the list (in any case); the write tools appear as the
// operator's gates open.
func TestListToolsCategory(t *testing.T) {
	e := newEnv(t, master(agent.Admin))
	if got := listed(t, e.ok("list_tools", map[string]any{"category": "mutation"})); !cmp.Equal(got, []string{"call_method"}) {
		t.Fatalf("gates closed: %v", got)
	}
	want := []string{"call_method", "create_class", "create_object", "delete_class", "delete_object", "update_object"}
	if got := listed(t, e.withGates(allGates).ok("list_tools", map[string]any{"category": "Mutation"})); !cmp.Equal(got, want) {
		t.Fatalf("gates open: %v", got)
	}
	if got := listed(t, e.ok("list_tools", map[string]any{"category": "query"})); !cmp.Equal(got, []string{"count_objects", "explain_query", "get_object", "get_objects", "get_sample_objects", "query_class"}) {
		t.Fatalf("query: %v", got)
	}
}

// An unknown category is refused with the categories there are; an
// unknown argument is named.
func TestListToolsArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	err := e.refused("list_tools", map[string]any{"category": "nope"}, tools.CodeInvalidArgument, `argument "category" must be one of`)
	if err.Details["argument"] != "category" {
		t.Fatalf("details: %v", err.Details)
	}
	e.refused("list_tools", map[string]any{"categroy": "query"}, tools.CodeInvalidArgument, `unknown argument "categroy"`)
}

// The agent's tool filter hides the tools it leaves out.
func TestListToolsFilter(t *testing.T) {
	a := master(agent.Readonly)
	a.Policy.Tools = agent.NameFilter{Except: []string{"query_class", "aggregate"}}
	names := listed(t, newEnv(t, a).ok("list_tools", nil))
	if slices.Contains(names, "query_class") || slices.Contains(names, "aggregate") || !slices.Contains(names, "count_objects") {
		t.Fatalf("filtered: %v", names)
	}
}
