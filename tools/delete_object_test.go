package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// The object is deleted and the answer shows it as it was.
func TestDeleteObject(t *testing.T) {
	e := newEnv(t, master(agent.Write)).withGates(allGates)
	var asked []tools.Approval
	e.approve = func(ctx context.Context, a tools.Approval) (context.Context, error) {
		asked = append(asked, a)
		return ctx, nil
	}
	out := e.ok("delete_object", map[string]any{"class_name": "Ticket", "object_id": t2})
	if out["deleted"].(map[string]any)["title"] != "Paint hull" {
		t.Fatalf("%v", out)
	}
	e.refused("get_object", map[string]any{"class_name": "Ticket", "object_id": t2}, tools.CodeNotFound, "Object not found")
	if len(asked) != 1 || asked[0].Tool != "delete_object" || !strings.Contains(asked[0].Summary, "Ticket object "+t2) {
		t.Fatalf("the approval asked: %+v", asked)
	}
}

// A person who refuses the deletion stops it.
func TestDeleteObjectApprovalDenied(t *testing.T) {
	e := newEnv(t, master(agent.Write)).withGates(allGates)
	e.approve = func(ctx context.Context, a tools.Approval) (context.Context, error) {
		return ctx, &tools.Error{Code: tools.CodeApprovalDenied, Message: "declined"}
	}
	e.refused("delete_object", map[string]any{"class_name": "Ticket", "object_id": t2}, tools.CodeApprovalDenied, "declined")
	if e.count("Ticket") != 5 {
		t.Fatal("deleted without approval")
	}
}

// dry_run shows the object that would go; nothing is asked or deleted.
func TestDeleteObjectDryRun(t *testing.T) {
	e := newEnv(t, master(agent.Write)).withGates(allGates)
	e.approve = func(ctx context.Context, a tools.Approval) (context.Context, error) {
		t.Fatal("a dry run asks for approval")
		return ctx, nil
	}
	out := e.ok("delete_object", map[string]any{"class_name": "Ticket", "object_id": t2, "dry_run": true})
	if out["dry_run"] != true || out["would_delete"].(map[string]any)["title"] != "Paint hull" {
		t.Fatalf("%v", out)
	}
	if e.count("Ticket") != 5 {
		t.Fatal("a dry run deleted")
	}
}

// An object the user may not write is not found, as a missing one; a
// readonly agent may not call the tool.
func TestDeleteObjectPermissions(t *testing.T) {
	e := newEnv(t, asUser(agent.Write, "uAlice0001")).withGates(allGates)
	e.refused("delete_object", map[string]any{"class_name": "Ticket", "object_id": t5}, tools.CodeNotFound, "Object not found: Ticket#"+t5)
	e.refused("delete_object", map[string]any{"class_name": "Project", "object_id": "pComet0003", "dry_run": true}, tools.CodeNotFound, "Object not found: Project#pComet0003")
	e.as(master(agent.Readonly)).refused("delete_object", map[string]any{"class_name": "Ticket", "object_id": t1}, tools.CodePermissionDenied, "tool delete_object needs write permission")
	e.withGates(agent.Gates{WriteTools: true}).refused("delete_object", map[string]any{"class_name": "Ticket", "object_id": t1}, envGate, "PARSEMCP_ALLOW_RAW_CRUD=true")
	e.refused("delete_object", map[string]any{"class_name": "Ticket", "object_id": "../x"}, tools.CodeInvalidArgument, `argument "object_id": "../x" is not an objectId`)
	if e.count("Ticket") != 5 || e.count("Project") != 3 {
		t.Fatal("a refused delete deleted")
	}
}
