package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// The fields given are set, a null unsets one; the answer and a read
// back show the object after.
func TestUpdateObject(t *testing.T) {
	e := newEnv(t, master(agent.Write)).withGates(allGates)
	out := e.ok("update_object", map[string]any{"class_name": "Ticket", "object_id": t1, "object": map[string]any{"status": "closed", "due": nil}})
	after := out["updated"].(map[string]any)
	if after["status"] != "closed" || after["title"] != "Fuel leak" || after["due"] != nil {
		t.Fatalf("updated: %v", after)
	}
	got := e.ok("get_object", map[string]any{"class_name": "Ticket", "object_id": t1})["object"].(map[string]any)
	if got["status"] != "closed" || got["due"] != nil {
		t.Fatalf("reads back as %v", got)
	}
}

// dry_run shows the values before and after; nothing is written.
func TestUpdateObjectDryRun(t *testing.T) {
	e := newEnv(t, master(agent.Write)).withGates(allGates)
	out := e.ok("update_object", map[string]any{"class_name": "Ticket", "object_id": t1, "dry_run": true, "object": map[string]any{"title": "Fixed", "priority": 2}})
	want := map[string]any{"before": map[string]any{"title": "Fuel leak", "priority": float64(1)}, "after": map[string]any{"title": "Fixed", "priority": float64(2)}}
	if d := cmp.Diff(want, out["would_update"]); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if got := e.ok("get_object", map[string]any{"class_name": "Ticket", "object_id": t1})["object"].(map[string]any); got["title"] != "Fuel leak" {
		t.Fatalf("a dry run wrote: %v", got)
	}
	e.refused("update_object", map[string]any{"class_name": "Ticket", "object_id": t1, "dry_run": true, "object": map[string]any{"priority": "high"}}, tools.CodeInvalidArgument, `field "priority" is a Number`)
}

// An object the user may not write is not found, in the words used for
// one that does not exist, and is left as it was.
func TestUpdateObjectNotWritable(t *testing.T) {
	e := newEnv(t, asUser(agent.Write, "uAlice0001")).withGates(allGates)
	e.refused("update_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2", "object": map[string]any{"name": "Mine"}}, tools.CodeNotFound, "Object not found: Project#pBorealis2")
	e.refused("update_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2", "object": map[string]any{"name": "Mine"}, "dry_run": true}, tools.CodeNotFound, "Object not found: Project#pBorealis2")
	e.refused("update_object", map[string]any{"class_name": "Ticket", "object_id": t5, "object": map[string]any{"title": "Mine"}}, tools.CodeNotFound, "Object not found: Ticket#"+t5)
	e.refused("update_object", map[string]any{"class_name": "Ticket", "object_id": "t999999999", "object": map[string]any{"title": "Mine"}}, tools.CodeNotFound, "Object not found: Ticket#t999999999")
	bob := e.as(asUser(agent.Readonly, "uBob000002"))
	if got := bob.ok("get_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2"})["object"].(map[string]any); got["name"] != "Borealis" {
		t.Fatalf("changed: %v", got)
	}
}

func TestUpdateObjectArguments(t *testing.T) {
	e := newEnv(t, master(agent.Write)).withGates(allGates)
	e.refused("update_object", map[string]any{"class_name": "Ticket", "object_id": t1}, tools.CodeInvalidArgument, `argument "object" is required`)
	e.refused("update_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "x"}}, tools.CodeInvalidArgument, `argument "object_id" is required`)
	e.refused("update_object", map[string]any{"class_name": "Ticket", "object_id": "not an id", "object": map[string]any{"title": "x"}}, tools.CodeInvalidArgument, `argument "object_id": "not an id" is not an objectId`)
	e.refused("update_object", map[string]any{"class_name": "Ticket", "object_id": t1, "object": map[string]any{"nofield": 1}}, tools.CodeInvalidArgument, `unknown field "nofield"`)
	e.as(master(agent.Readonly)).refused("update_object", map[string]any{"class_name": "Ticket", "object_id": t1, "object": map[string]any{"title": "x"}}, tools.CodePermissionDenied, "tool update_object needs write permission")
}
