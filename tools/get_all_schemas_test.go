package tools_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// classEntries are the built_in and custom entries of get_all_schemas by
// class name.
func classEntries(t *testing.T, out map[string]any) map[string]map[string]any {
	t.Helper()
	byName := map[string]map[string]any{}
	for _, part := range []string{"built_in", "custom"} {
		for _, c := range objs(t, out[part]) {
			c["part"] = part
			byName[c["name"].(string)] = c
		}
	}
	return byName
}

// Every class the agent can access, split into Parse's and the
// application's, with each field's type (pointers with their target).
func TestGetAllSchemas(t *testing.T) {
	out := newEnv(t, master(agent.Readonly)).ok("get_all_schemas", nil)
	got := classEntries(t, out)
	want := map[string]string{"_Role": "built_in", "_User": "built_in", "Payroll": "custom", "Project": "custom", "Ticket": "custom"}
	parts := map[string]string{}
	for name, c := range got {
		parts[name] = c["part"].(string)
	}
	if d := cmp.Diff(want, parts); d != "" {
		t.Fatalf("classes (-want +got):\n%s", d)
	}
	if out["total"] != float64(5) {
		t.Fatalf("total: %v", out["total"])
	}
	ticket := got["Ticket"]
	wantFields := map[string]any{"ACL": "ACL", "createdAt": "Date", "due": "Date", "objectId": "String", "priority": "Number",
		"project": "Pointer<Project>", "status": "String", "title": "String", "updatedAt": "Date"}
	if d := cmp.Diff(wantFields, ticket["fields"]); d != "" {
		t.Fatalf("Ticket's fields (-want +got):\n%s", d)
	}
	if ticket["field_count"] != float64(len(wantFields)) {
		t.Fatalf("field_count: %v", ticket["field_count"])
	}
	if f := got["Project"]["fields"].(map[string]any); f["members"] != "Relation<_User>" || f["owner"] != "Pointer<_User>" {
		t.Fatalf("Project's references: %v", f)
	}
}

// names and prefix narrow the answer.
func TestGetAllSchemasNarrowed(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	names := func(out map[string]any) []string { return slices.Sorted(maps.Keys(classEntries(t, out))) }
	if got := names(e.ok("get_all_schemas", map[string]any{"names": []string{"Ticket", "Nope"}})); !cmp.Equal(got, []string{"Ticket"}) {
		t.Fatalf("names: %v", got)
	}
	if got := names(e.ok("get_all_schemas", map[string]any{"names": "Ticket,Project"})); !cmp.Equal(got, []string{"Project", "Ticket"}) {
		t.Fatalf("names as a comma-separated string: %v", got)
	}
	if got := names(e.ok("get_all_schemas", map[string]any{"prefix": "_"})); !cmp.Equal(got, []string{"_Role", "_User"}) {
		t.Fatalf("prefix: %v", got)
	}
	e.refused("get_all_schemas", map[string]any{"names": 3}, tools.CodeInvalidArgument, `argument "names"`)
}

// A hidden class is absent, a field the agent may not see is absent (as
// are the protected fields of another user), and the operator's class
// description is shown.
func TestGetAllSchemasHidesWhatTheAgentMayNotSee(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{
		"Payroll": {Hidden: agent.HiddenAlways},
		"Ticket":  {Description: "Work items.", AgentFields: []string{"title", "status"}},
	}}
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001")).withCatalog(cat)
	got := classEntries(t, e.ok("get_all_schemas", nil))
	if _, ok := got["Payroll"]; ok {
		t.Fatal("a hidden class is listed")
	}
	ticket := got["Ticket"]
	if d := cmp.Diff([]string{"ACL", "createdAt", "objectId", "status", "title", "updatedAt"}, keysOf(ticket["fields"].(map[string]any))); d != "" {
		t.Fatalf("Ticket's fields beyond agent_fields (-want +got):\n%s", d)
	}
	if ticket["description"] != "Work items." {
		t.Fatalf("description: %v", ticket["description"])
	}
	if _, ok := got["_User"]["fields"].(map[string]any)["email"]; ok {
		t.Fatal("a user sees _User's protected email field")
	}
}
