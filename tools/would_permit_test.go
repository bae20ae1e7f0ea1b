package tools_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/tools"
)

// verdict is a would_permit answer as the client reads it.
func verdict(allowed bool, reason, deniedAt, message string) map[string]any {
	v := map[string]any{"allowed": allowed}
	for k, s := range map[string]string{"reason": reason, "denied_at": deniedAt, "message": message} {
		if s != "" {
			v[k] = s
		}
	}
	return v
}

// would_permit judges the tier first; a call through the server never gets
// that far (the tool is admin only), so the handler is called directly.
func TestWouldPermitTier(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	got, err := e.handle("would_permit", map[string]any{"tool": "create_object", "arguments": map[string]any{"class_name": "Ticket"}})
	if err != nil {
		t.Fatal(err)
	}
	want := agent.Verdict{Reason: "permission_tier", DeniedAt: "permission", Message: "tool create_object needs write permission; this agent is readonly"} // the words dispatch refuses with
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	got, _ = e.handle("would_permit", map[string]any{"tool": "query_class", "arguments": `{"class_name":"Ticket"}`})
	if d := cmp.Diff(agent.Verdict{Allowed: true}, got); d != "" {
		t.Fatalf("arguments as a string (-want +got):\n%s", d)
	}
}

// The class in class_name is judged as the tool's operation on it would
// be: filtered-out, unknown and refused by class-level permissions.
func TestWouldPermitClass(t *testing.T) {
	e := governed(t)
	for _, c := range []struct {
		args map[string]any
		want map[string]any
	}{
		{map[string]any{"tool": "query_class", "arguments": map[string]any{"class_name": "Ticket"}}, verdict(true, "", "", "")},
		{map[string]any{"tool": "query_class", "arguments": map[string]any{"class_name": "Payroll"}}, verdict(false, "class_filter", "class_access", `class "Payroll" was not found (or is not accessible to this agent)`)},
		{map[string]any{"tool": "query_class", "arguments": map[string]any{"class_name": "Nope"}}, verdict(false, "unknown", "class_access", `class "Nope" was not found (or is not accessible to this agent)`)},
		{map[string]any{"tool": "list_tools"}, verdict(true, "", "", "")},
		{map[string]any{"tool": "nope"}, verdict(false, "unknown_tool", "", "no tool is named nope")},
	} {
		if d := cmp.Diff(c.want, e.ok("would_permit", c.args)); d != "" {
			t.Errorf("%v (-want +got):\n%s", c.args, d)
		}
	}
	aliceAgent := asUser(agent.Admin, "uAlice0001")
	aliceAgent.Policy.Introspection = true
	alice := e.as(aliceAgent)
	want := verdict(false, "clp", "class_access", "class-level permissions of Payroll do not allow count for this agent")
	if d := cmp.Diff(want, alice.ok("would_permit", map[string]any{"tool": "count_objects", "arguments": map[string]any{"class_name": "Payroll"}})); d != "" {
		t.Fatalf("clp (-want +got):\n%s", d)
	}
	create := map[string]any{"tool": "create_object", "arguments": map[string]any{"class_name": "Ticket"}}
	if got := e.ok("would_permit", create); got["reason"] != "env_gate" {
		t.Fatalf("gates closed: %v", got)
	}
	if d := cmp.Diff(verdict(true, "", "", ""), e.withGates(allGates).ok("would_permit", create)); d != "" {
		t.Fatalf("gates open (-want +got):\n%s", d)
	}
}

// For call_method the declared method is judged too: unknown, filtered
// out, or behind its own gate.
func TestWouldPermitMethod(t *testing.T) {
	filtered := introspector()
	filtered.Policy.Methods = agent.NameFilter{Except: []string{"Ticket.close"}}
	e := newEnv(t, filtered).withCatalog(ticketMethods())
	judge := func(e *env, method string) map[string]any {
		return e.ok("would_permit", map[string]any{"tool": "call_method", "arguments": map[string]any{"class_name": "Ticket", "method_name": method}})
	}
	if d := cmp.Diff(verdict(false, "unknown_method", "call_method", ""), judge(e, "nope")); d != "" {
		t.Errorf("unknown (-want +got):\n%s", d)
	}
	if d := cmp.Diff(verdict(false, "method_filtered", "methods_filter", ""), judge(e, "close")); d != "" {
		t.Errorf("filtered (-want +got):\n%s", d)
	}
	if d := cmp.Diff(verdict(false, "env_gate", "env_gate", "method Ticket.drop is disabled by the operator. Required: PARSEMCP_ALLOW_SCHEMA_OPS=true."), judge(e, "drop")); d != "" {
		t.Errorf("gated (-want +got):\n%s", d)
	}
	if d := cmp.Diff(verdict(true, "", "", ""), judge(e, "count")); d != "" {
		t.Errorf("allowed (-want +got):\n%s", d)
	}
}

// Which argument names a method is the tool's own declaration
// (Tool.MethodArg): a tool declaring one has that method judged; a tool
// declaring none is judged on its class alone, whatever it is sent.
func TestWouldPermitAsksTheTool(t *testing.T) {
	e := newEnv(t, introspector()).withCatalog(ticketMethods())
	h := func(context.Context, *tools.Call) (any, error) { return nil, nil }
	for _, tl := range []*tools.Tool{
		{Name: "run_action", Op: parse.OpFind, MethodArg: "action", Handler: h},
		{Name: "plain", Op: parse.OpFind, Handler: h},
	} {
		if err := e.reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	judge := func(tool string, args map[string]any) map[string]any {
		return e.ok("would_permit", map[string]any{"tool": tool, "arguments": args})
	}
	if got := judge("run_action", map[string]any{"class_name": "Ticket", "action": "nope"}); got["reason"] != "unknown_method" {
		t.Fatalf("a tool's own method argument: %v", got)
	}
	if got := judge("run_action", map[string]any{"class_name": "Ticket", "method_name": "nope"}); got["allowed"] != true {
		t.Fatalf("another argument is not the method: %v", got)
	}
	if got := judge("plain", map[string]any{"class_name": "Ticket", "method_name": "nope"}); got["allowed"] != true {
		t.Fatalf("a tool without a method argument: %v", got)
	}
}

// Only an admin whose policy exposes introspection may ask, and the tool
// is required.
func TestWouldPermitArguments(t *testing.T) {
	e := newEnv(t, introspector())
	e.refused("would_permit", map[string]any{}, tools.CodeInvalidArgument, `argument "tool" is required`)
	e.refused("would_permit", map[string]any{"tool": " "}, tools.CodeInvalidArgument, `argument "tool" is required`)
	e.refused("would_permit", map[string]any{"tool": "query_class", "arguments": []any{1}}, tools.CodeInvalidArgument, `argument "arguments" must be an object`)
	e.as(master(agent.Write)).refused("would_permit", map[string]any{"tool": "query_class"}, tools.CodePermissionDenied, "tool would_permit needs admin permission; this agent is write")
	e.as(master(agent.Admin)).refused("would_permit", map[string]any{"tool": "query_class"}, withKind(tools.CodeToolFiltered, "operator_only"), "tool would_permit is not available to this agent")
}
