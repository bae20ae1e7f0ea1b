package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/tools"
)

// The object is created with the values given (REST JSON) and a new
// objectId, and reads back.
func TestCreateObject(t *testing.T) {
	e := newEnv(t, master(agent.Write)).withGates(allGates)
	obj := map[string]any{"title": "Check the valves", "priority": 4,
		"project": map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pApollo001"},
		"due":     map[string]any{"__type": "Date", "iso": "2025-07-01T00:00:00.000Z"}}
	out := e.ok("create_object", map[string]any{"class_name": "Ticket", "object": obj})
	id, _ := out["object_id"].(string)
	if !parse.ValidObjectID(id) || out["class_name"] != "Ticket" {
		t.Fatalf("%v", out)
	}
	got := e.ok("get_object", map[string]any{"class_name": "Ticket", "object_id": id})["object"].(map[string]any)
	for k, v := range map[string]any{"title": "Check the valves", "priority": float64(4), "project": obj["project"], "due": obj["due"]} {
		if !cmp.Equal(got[k], v) {
			t.Errorf("%s reads back as %v, want %v", k, got[k], v)
		}
	}
	if e.count("Ticket") != 6 {
		t.Fatal("not one more ticket")
	}
}

// A user's object gets its creator's ACL; a pointer to an object it may
// not read is refused, as is a class whose permissions refuse it.
func TestCreateObjectAsUser(t *testing.T) {
	e := newEnv(t, asUser(agent.Write, "uAlice0001")).withGates(allGates)
	out := e.ok("create_object", map[string]any{"class_name": "Ticket", "object": `{"title":"Mine"}`})
	if d := cmp.Diff(map[string]any{"uAlice0001": map[string]any{"read": true, "write": true}}, out["created"].(map[string]any)["ACL"]); d != "" {
		t.Fatalf("ACL (-want +got):\n%s", d)
	}
	borealis := map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pBorealis2"}
	e.refused("create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"project": borealis}}, tools.CodeNotFound, `field "project": Object not found: Project#pBorealis2`)
	e.refused("create_object", map[string]any{"class_name": "Payroll", "object": map[string]any{"amount": 1}}, tools.CodePermissionDenied, "class-level permissions of Payroll do not allow create")
	if e.count("Ticket") != 6 || e.count("Payroll") != 1 {
		t.Fatal("a refused create wrote")
	}
}

// dry_run validates and shows the object; nothing is written.
func TestCreateObjectDryRun(t *testing.T) {
	e := newEnv(t, master(agent.Write)).withGates(allGates)
	out := e.ok("create_object", map[string]any{"class_name": "Ticket", "dry_run": true, "object": map[string]any{"title": "x"}})
	if out["dry_run"] != true || !cmp.Equal(out["would_create"], map[string]any{"title": "x"}) {
		t.Fatalf("%v", out)
	}
	e.refused("create_object", map[string]any{"class_name": "Ticket", "dry_run": true, "object": map[string]any{"priority": "high"}}, tools.CodeInvalidArgument, `field "priority" is a Number`)
	if e.count("Ticket") != 5 {
		t.Fatal("a dry run wrote")
	}
}

// A write tool needs the write tier and both operator gates.
func TestCreateObjectPermissions(t *testing.T) {
	e := newEnv(t, master(agent.Readonly)).withGates(allGates)
	args := map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "x"}}
	err := e.refused("create_object", args, tools.CodePermissionDenied, "tool create_object needs write permission; this agent is readonly")
	if err.Details["kind"] != "permission_tier" {
		t.Fatalf("details: %v", err.Details)
	}
	w := e.as(master(agent.Write))
	w.withGates(agent.Gates{}).refused("create_object", args, envGate, "PARSEMCP_ALLOW_WRITE_TOOLS=true AND PARSEMCP_ALLOW_RAW_CRUD=true")
	w.withGates(agent.Gates{WriteTools: true}).refused("create_object", args, envGate, "Required: PARSEMCP_ALLOW_RAW_CRUD=true")
	if e.count("Ticket") != 5 {
		t.Fatal("a refused call wrote")
	}
}

func TestCreateObjectArguments(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {AgentFields: []string{"title"}}}}
	e := newEnv(t, master(agent.Write)).withGates(allGates).withCatalog(cat)
	e.refused("create_object", map[string]any{"class_name": "Ticket"}, tools.CodeInvalidArgument, `argument "object" is required`)
	e.refused("create_object", map[string]any{"class_name": "Ticket", "object": 3}, tools.CodeInvalidArgument, `argument "object" must be an object`)
	e.refused("create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"nofield": "x"}}, tools.CodeInvalidArgument, `unknown field "nofield" on class Ticket`)
	// A field beyond the agent's fields cannot be written, and reads as
	// one that does not exist.
	e.refused("create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"status": "x"}}, tools.CodeInvalidArgument, `unknown field "status" on class Ticket`)
	e.refused("create_object", map[string]any{"class_name": "Nope", "object": map[string]any{}}, classNotFound, `class "Nope" was not found`)
}
