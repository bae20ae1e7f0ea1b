package tools_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// schemaFields are get_schema's field entries by name, and the names in
// their order.
func schemaFields(t *testing.T, out map[string]any) (map[string]map[string]any, []string) {
	t.Helper()
	byName := map[string]map[string]any{}
	var order []string
	for _, f := range objs(t, out["fields"]) {
		byName[f["name"].(string)] = f
		order = append(order, f["name"].(string))
	}
	return byName, order
}

// One class in detail: its fields in order, each with its type, pointer
// targets and query hints, and its class-level permissions; index names
// only when the operator exposes plans.
func TestGetSchema(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("get_schema", map[string]any{"class_name": "Ticket"})
	fields, order := schemaFields(t, out)
	if d := cmp.Diff([]string{"objectId", "createdAt", "updatedAt", "ACL", "due", "priority", "project", "status", "title"}, order); d != "" {
		t.Fatalf("fields (-want +got):\n%s", d)
	}
	if out["class_name"] != "Ticket" || out["type"] != "custom" || out["class_level_permissions"] == nil {
		t.Fatalf("header: %v", out)
	}
	p := fields["project"]
	if p["type"] != "Pointer" || p["target_class"] != "Project" || !strings.Contains(p["query_hint"].(string), `include:["project"]`) {
		t.Fatalf("the pointer field: %v", p)
	}
	if !strings.Contains(fields["due"]["query_hint"].(string), `{"due":{"$gte":{"__type":"Date"`) {
		t.Fatalf("the date field: %v", fields["due"])
	}
	if _, ok := out["indexes"]; ok {
		t.Fatal("index names are shown without ExposeExplain")
	}
	user := e.ok("get_schema", map[string]any{"class_name": "_User"})
	if user["type"] != "built_in" {
		t.Fatalf("_User: %v", user["type"])
	}
}

// With ExposeExplain the indexes are listed, but not one on a field the
// agent cannot see.
func TestGetSchemaIndexes(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.config.ExposeExplain = true
	want := []any{
		map[string]any{"name": "_id_", "keys": map[string]any{"objectId": float64(1)}},
		map[string]any{"name": "name_1", "keys": map[string]any{"name": float64(1)}},
	}
	if d := cmp.Diff(want, e.ok("get_schema", map[string]any{"class_name": "Project"})["indexes"]); d != "" {
		t.Fatalf("indexes (-want +got):\n%s", d)
	}
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Project": {AgentFields: []string{"budget"}}}}
	got := e.withCatalog(cat).ok("get_schema", map[string]any{"class_name": "Project"})
	if d := cmp.Diff(want[:1], got["indexes"]); d != "" {
		t.Fatalf("an index on a hidden field (-want +got):\n%s", d)
	}
	if _, order := schemaFields(t, got); strings.Join(order, ",") != "objectId,createdAt,updatedAt,ACL,budget" {
		t.Fatalf("fields beyond agent_fields: %v", order)
	}
}

// An unknown class, a hidden one and one outside the agent's class filter
// read alike: not_found with the same words.
func TestGetSchemaUnknownAndHiddenReadAlike(t *testing.T) {
	a := master(agent.Readonly)
	a.Policy.Classes = agent.NameFilter{Except: []string{"Project"}}
	e := newEnv(t, a).withCatalog(&agent.Catalog{Classes: map[string]*agent.ClassMeta{"Payroll": {Hidden: agent.HiddenAlways}}})
	for _, class := range []string{"Nope", "Payroll", "Project", "_Session"} {
		err := e.refused("get_schema", map[string]any{"class_name": class}, classNotFound, `class "`+class+`" was not found (or is not accessible to this agent)`)
		if d := cmp.Diff(map[string]any{"kind": "class_not_found"}, err.Details); d != "" {
			t.Fatalf("%s: details (-want +got):\n%s", class, d)
		}
	}
	e.refused("get_schema", map[string]any{}, tools.CodeInvalidArgument, `argument "class_name" is required`)
	e.refused("get_schema", map[string]any{"class_name": ""}, tools.CodeInvalidArgument, `argument "class_name" is required`)
}

// The operator's metadata: descriptions, allowed values, large fields,
// the canonical filter (its value only when the agent sees its fields)
// and the tenant field.
func TestGetSchemaOperatorMetadata(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{
		"Ticket": {
			Description: "Work items.",
			Fields: map[string]*agent.FieldMeta{"status": {Description: "Where it stands.",
				Enum: []agent.EnumValue{{Value: "open"}, {Value: "closed"}}}},
			LargeFields:     []string{"title"},
			CanonicalFilter: map[string]any{"status": map[string]any{"$ne": "closed"}},
		},
		"Project": {AgentFields: []string{"name"}, CanonicalFilter: map[string]any{"active": true}},
	}}
	e := newEnv(t, master(agent.Readonly)).withCatalog(cat)
	out := e.ok("get_schema", map[string]any{"class_name": "Ticket"})
	fields, _ := schemaFields(t, out)
	if out["description"] != "Work items." || fields["status"]["description"] != "Where it stands." {
		t.Fatalf("descriptions: %v / %v", out["description"], fields["status"])
	}
	if d := cmp.Diff([]any{map[string]any{"value": "open"}, map[string]any{"value": "closed"}}, fields["status"]["allowed_values"]); d != "" {
		t.Fatalf("allowed_values (-want +got):\n%s", d)
	}
	if fields["title"]["large"] != true || !cmp.Equal(out["large_fields"], []any{"title"}) {
		t.Fatalf("large fields: %v, %v", fields["title"], out["large_fields"])
	}
	if d := cmp.Diff(map[string]any{"status": map[string]any{"$ne": "closed"}}, out["canonical_filter"]); d != "" {
		t.Fatalf("canonical_filter (-want +got):\n%s", d)
	}
	project := e.ok("get_schema", map[string]any{"class_name": "Project"})
	if project["canonical_filter"] != "set by the operator on fields this agent cannot see" {
		t.Fatalf("a canonical filter on a hidden field: %v", project["canonical_filter"])
	}
	mustNotMention(t, project, `"active"`)
}

// The declared methods the agent may call are listed with the class.
func TestGetSchemaMethods(t *testing.T) {
	cat := &agent.Catalog{Methods: map[string]*agent.Method{
		"Ticket.summary": {Class: "Ticket", Name: "summary", Description: "Count them.", Permission: agent.Readonly, Kind: agent.MethodGo},
		"Ticket.purge":   {Class: "Ticket", Name: "purge", Permission: agent.Admin, Instance: true, Kind: agent.MethodGo},
	}}
	out := newEnv(t, master(agent.Readonly)).withCatalog(cat).ok("get_schema", map[string]any{"class_name": "Ticket"})
	want := []any{map[string]any{"name": "summary", "description": "Count them.", "permission": "readonly", "instance": false,
		"destructive": false, "supports_dry_run": false, "parameters": map[string]any{"type": "object"}}}
	if d := cmp.Diff(want, out["methods"]); d != "" {
		t.Fatalf("methods (-want +got):\n%s", d)
	}
}

func TestMethodsFor(t *testing.T) {
	st := newEnv(t, master(agent.Readonly)).store
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
