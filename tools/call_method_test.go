package tools_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// methods is a world where the caller has Ticket's declared methods and
// the operator allows methods that write.
func methods(t *testing.T, a *agent.Agent) *env {
	return newEnv(t, a).withGates(agent.Gates{WriteTools: true}).withCatalog(ticketMethods())
}

// An instance method changes its object; the answer names the method and
// holds its result.
func TestCallMethod(t *testing.T) {
	e := methods(t, asUser(agent.Write, "uAlice0001"))
	out := e.ok("call_method", map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": t1})
	if out["method"] != "close" || out["object_id"] != t1 || out["class_name"] != "Ticket" {
		t.Fatalf("%v", out)
	}
	if got := out["result"].(map[string]any)["updated"].(map[string]any)["status"]; got != "closed" {
		t.Fatalf("result: %v", out["result"])
	}
	if got := e.ok("get_object", map[string]any{"class_name": "Ticket", "object_id": t1})["object"].(map[string]any)["status"]; got != "closed" {
		t.Fatalf("reads back as %v", got)
	}
	// A readonly method runs for a readonly agent, in its scope.
	out = e.as(asUser(agent.Readonly, "uAlice0001")).withCatalog(ticketMethods()).ok("call_method", map[string]any{"class_name": "Ticket", "method_name": "count"})
	if d := cmp.Diff(map[string]any{"tickets": float64(4)}, out["result"]); d != "" {
		t.Fatalf("count as alice (-want +got):\n%s", d)
	}
}

// dry_run, as an argument or inside arguments, previews and writes
// nothing; it is not passed on as a method argument.
func TestCallMethodDryRun(t *testing.T) {
	e := methods(t, master(agent.Write))
	for _, args := range []map[string]any{
		{"class_name": "Ticket", "method_name": "close", "object_id": t1, "dry_run": true},
		{"class_name": "Ticket", "method_name": "close", "object_id": t1, "arguments": map[string]any{"dry_run": true}},
	} {
		out := e.ok("call_method", args)
		if out["dry_run"] != true {
			t.Fatalf("%v: %v", args, out)
		}
	}
	if got := e.ok("get_object", map[string]any{"class_name": "Ticket", "object_id": t1})["object"].(map[string]any)["status"]; got != "open" {
		t.Fatalf("a dry run wrote: %v", got)
	}
}

// The method's tier, the agent's method filter and the operator's gate
// are each checked; a destructive method asks a person first.
func TestCallMethodPermissions(t *testing.T) {
	args := map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": t1}
	ro := methods(t, master(agent.Readonly))
	ro.refused("call_method", args, tools.CodePermissionDenied, "method Ticket.close needs write permission; this agent is readonly")
	filtered := master(agent.Write)
	filtered.Policy.Methods = agent.NameFilter{Except: []string{"Ticket.close"}}
	methods(t, filtered).refused("call_method", args, withKind(tools.CodeToolFiltered, "method_filtered"), "method Ticket.close is not available to this agent")
	methods(t, master(agent.Write)).withGates(agent.Gates{}).refused("call_method", args, envGate, "PARSEMCP_ALLOW_WRITE_TOOLS")
	if ro.count("Ticket") != 5 {
		t.Fatal("a refused method wrote")
	}

	e := methods(t, master(agent.Admin)).withGates(allGates)
	var asked []tools.Approval
	e.approve = func(ctx context.Context, a tools.Approval) (context.Context, error) {
		asked = append(asked, a)
		return ctx, &tools.Error{Code: tools.CodeApprovalDenied, Message: "declined"}
	}
	e.refused("call_method", map[string]any{"class_name": "Ticket", "method_name": "drop", "object_id": t2}, tools.CodeApprovalDenied, "declined")
	if len(asked) != 1 || asked[0].Tool != "call_method" || !strings.Contains(asked[0].Summary, "drop") {
		t.Fatalf("the approval asked: %+v", asked)
	}
	if e.count("Ticket") != 5 {
		t.Fatal("dropped without approval")
	}
}

func TestCallMethodArguments(t *testing.T) {
	e := methods(t, asUser(agent.Write, "uAlice0001"))
	for _, c := range []struct {
		args       map[string]any
		code, want string
	}{
		{map[string]any{"class_name": "Ticket"}, tools.CodeInvalidArgument, `argument "method_name" is required`},
		{map[string]any{"class_name": "Ticket", "method_name": " "}, tools.CodeInvalidArgument, `argument "method_name" is required`},
		{map[string]any{"method_name": "close"}, tools.CodeInvalidArgument, `argument "class_name" is required`},
		{map[string]any{"class_name": "Ticket", "method_name": "nope"}, tools.CodeInvalidArgument, `class Ticket declares no method "nope"`},
		{map[string]any{"class_name": "Ticket", "method_name": "close"}, tools.CodeInvalidArgument, "method Ticket.close acts on one object: give a valid object_id"},
		{map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": t5}, tools.CodeNotFound, "Object not found: Ticket#" + t5},
		{map[string]any{"class_name": "Nope", "method_name": "close"}, classNotFound, `class "Nope" was not found`},
		{map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": t1, "arguments": 3}, tools.CodeInvalidArgument, `argument "arguments" must be an object`},
	} {
		e.refused("call_method", c.args, c.code, c.want)
	}
}
