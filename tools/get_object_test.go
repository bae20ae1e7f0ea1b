package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// One object in full, by objectId; include inlines its pointers.
func TestGetObject(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("get_object", map[string]any{"class_name": "Ticket", "object_id": t1})
	want := map[string]any{"objectId": t1, "title": "Fuel leak", "status": "open", "priority": float64(1),
		"project":   map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pApollo001"},
		"due":       map[string]any{"__type": "Date", "iso": "2025-06-01T00:00:00.000Z"},
		"createdAt": "2025-05-01T00:00:00.000Z", "updatedAt": "2025-05-01T00:00:00.000Z"}
	if d := cmp.Diff(map[string]any{"class_name": "Ticket", "object": want}, out); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	out = e.ok("get_object", map[string]any{"class_name": "Ticket", "object_id": t1, "include": "project"})
	p := out["object"].(map[string]any)["project"].(map[string]any)
	if p["__type"] != "Object" || p["name"] != "Apollo" || p["budget"] != float64(1000) {
		t.Fatalf("included: %v", p)
	}
}

// An object the caller may not read is not found, in the words used for
// one that does not exist.
func TestGetObjectUnreadableReadsAsMissing(t *testing.T) {
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001"))
	hidden := e.refused("get_object", map[string]any{"class_name": "Ticket", "object_id": t5}, tools.CodeNotFound, "Object not found: Ticket#"+t5)
	missing := e.refused("get_object", map[string]any{"class_name": "Ticket", "object_id": "t999999999"}, tools.CodeNotFound, "Object not found: Ticket#t999999999")
	if !cmp.Equal(hidden.Details, missing.Details) {
		t.Fatalf("details differ: %v / %v", hidden.Details, missing.Details)
	}
	e.refused("get_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2"}, tools.CodeNotFound, "Object not found: Project#pBorealis2")
	if e.as(asUser(agent.Readonly, "uBob000002")).ok("get_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2"})["object"] == nil {
		t.Fatal("bob cannot read his own project")
	}
}

// The fields beyond the agent's fields are not in the object.
func TestGetObjectHiddenFields(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {AgentFields: []string{"title"}}}}
	out := newEnv(t, master(agent.Readonly)).withCatalog(cat).ok("get_object", map[string]any{"class_name": "Ticket", "object_id": t1})
	if d := cmp.Diff([]string{"createdAt", "objectId", "title", "updatedAt"}, keysOf(out["object"].(map[string]any))); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

func TestGetObjectArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.refused("get_object", map[string]any{"class_name": "Ticket"}, tools.CodeInvalidArgument, `argument "object_id" is required`)
	e.refused("get_object", map[string]any{"class_name": "Ticket", "object_id": "t1; drop"}, tools.CodeInvalidArgument, `argument "object_id": "t1; drop" is not an objectId`)
	e.refused("get_object", map[string]any{"class_name": "Nope", "object_id": t1}, classNotFound, `class "Nope" was not found`)
	e.refused("get_object", map[string]any{"class_name": "Ticket", "object_id": t1, "include": []string{"status"}}, tools.CodeInvalidArgument, `include "status": only Pointer fields can be included`)
}
