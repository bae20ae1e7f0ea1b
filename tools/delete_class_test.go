package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// withEmptyClass creates the empty class Note.
func withEmptyClass(t *testing.T) *env {
	e := admin(t)
	e.ok("create_class", map[string]any{"class_name": "Note", "fields": map[string]any{"text": map[string]any{"type": "String"}}})
	return e
}

// An empty class is deleted, once a person approves.
func TestDeleteClass(t *testing.T) {
	e := withEmptyClass(t)
	var asked []tools.Approval
	e.approve = func(ctx context.Context, a tools.Approval) (context.Context, error) {
		asked = append(asked, a)
		return ctx, nil
	}
	out := e.ok("delete_class", map[string]any{"class_name": "Note"})
	if out["deleted"] != true || out["class_name"] != "Note" {
		t.Fatalf("%v", out)
	}
	e.refused("get_schema", map[string]any{"class_name": "Note"}, classNotFound, `class "Note" was not found`)
	if len(asked) != 1 || asked[0].Tool != "delete_class" || !strings.Contains(asked[0].Summary, "delete the class Note") {
		t.Fatalf("the approval asked: %+v", asked)
	}
}

// A refused approval, a dry run and a class holding objects delete
// nothing.
func TestDeleteClassKeeps(t *testing.T) {
	e := withEmptyClass(t)
	e.approve = func(ctx context.Context, a tools.Approval) (context.Context, error) {
		return ctx, &tools.Error{Code: tools.CodeApprovalDenied, Message: "declined"}
	}
	e.refused("delete_class", map[string]any{"class_name": "Note"}, tools.CodeApprovalDenied, "declined")
	out := e.ok("delete_class", map[string]any{"class_name": "Note", "dry_run": true})
	if out["dry_run"] != true || out["would_delete_class"] == nil {
		t.Fatalf("%v", out)
	}
	e.ok("get_schema", map[string]any{"class_name": "Note"})
	e.refused("delete_class", map[string]any{"class_name": "Ticket"}, tools.CodeInvalidArgument, "class is not empty: Ticket holds 5 objects; delete them first")
	e.refused("delete_class", map[string]any{"class_name": "Ticket", "dry_run": true}, tools.CodeInvalidArgument, "class is not empty")
	if e.count("Ticket") != 5 {
		t.Fatal("Ticket lost objects")
	}
}

// The tier, the gates and the master key are needed; system, unknown and
// hidden classes are refused.
func TestDeleteClassPermissions(t *testing.T) {
	e := withEmptyClass(t)
	args := map[string]any{"class_name": "Note"}
	e.as(master(agent.Write)).refused("delete_class", args, tools.CodePermissionDenied, "tool delete_class needs admin permission")
	e.withGates(agent.Gates{WriteTools: true, SchemaOps: true}).refused("delete_class", args, envGate, "PARSEMCP_ALLOW_RAW_SCHEMA=true")
	alice := e.as(asUser(agent.Admin, "uAlice0001"))
	alice.refused("delete_class", args, tools.CodePermissionDenied, "schema changes need an agent acting with the master key")
	alice.refused("delete_class", map[string]any{"class_name": "Note", "dry_run": true}, tools.CodePermissionDenied, "schema changes need an agent acting with the master key")
	e.refused("delete_class", map[string]any{"class_name": "_Role"}, tools.CodeInvalidArgument, "system class _Role cannot be created or deleted by an agent")
	e.refused("delete_class", map[string]any{"class_name": "Nope"}, classNotFound, `class "Nope" was not found`)
	hidden := e.withCatalog(&agent.Catalog{Classes: map[string]*agent.ClassMeta{"Note": {Hidden: agent.HiddenAlways}}})
	hidden.refused("delete_class", args, classNotFound, `class "Note" was not found`)
	e.ok("get_schema", args)
}
