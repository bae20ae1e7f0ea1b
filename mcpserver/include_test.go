package mcpserver_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
)

// Nested include paths go through included objects, each level governed.
func TestNestedInclude(t *testing.T) {
	st := fixtureStore(t)
	cs := connect(t, newServer(t, st, agent.Readonly, master), "")
	out := ok(t, cs, "get_object", map[string]any{"class_name": "Ticket", "object_id": "t000000003", "include": []string{"project.owner"}})
	owner := out["object"].(map[string]any)["project"].(map[string]any)["owner"].(map[string]any)
	if owner["__type"] != "Object" || owner["username"] != "bob" {
		t.Fatalf("project.owner: %v", owner)
	}
	// keys project included objects; the nested pointer is still followed.
	out = ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"objectId": "t000000001"},
		"keys": []string{"project.name"}, "include": []string{"project", "project.owner"}})
	row := out["results"].([]any)[0].(map[string]any)
	want := map[string]any{"__type": "Object", "className": "_User", "objectId": alice, "username": "alice",
		"createdAt": "2025-01-01T00:00:00.000Z", "updatedAt": "2025-01-01T00:00:00.000Z", "email": "alice@example.com"}
	if d := cmp.Diff(want, row["project"].(map[string]any)["owner"]); d != "" {
		t.Fatalf("nested include (-want +got):\n%s", d)
	}
	// An anonymous agent cannot read bob's project, so the key is removed
	// (as Parse Server does) and the nested include goes no further; emails
	// stay protected.
	anon := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}), "")
	out = ok(t, anon, "get_object", map[string]any{"class_name": "Ticket", "object_id": "t000000001", "include": []string{"project.owner"}})
	o := out["object"].(map[string]any)["project"].(map[string]any)["owner"].(map[string]any)
	if _, has := o["email"]; has || o["username"] != "alice" {
		t.Fatalf("anonymous nested include: %v", o)
	}
	out = ok(t, anon, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"objectId": "t000000003"}, "include": "project.owner"})
	if p, has := out["results"].([]any)[0].(map[string]any)["project"]; has {
		t.Fatalf("bob's project must be removed for an anonymous agent: %v", p)
	}
}
