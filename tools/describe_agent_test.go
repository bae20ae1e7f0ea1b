package tools_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// Every layer that governs the agent: tier, identity, filters (the fields
// its row filters test, never their values), the tools it may call, the
// operator's gates and each class it may access.
func TestDescribeAgent(t *testing.T) {
	e := governed(t)
	out := e.ok("describe_agent", nil)
	if out["permission"] != "admin" || !cmp.Equal(out["auth"], map[string]any{"mode": "master_key"}) {
		t.Fatalf("tier and identity: %v %v", out["permission"], out["auth"])
	}
	if d := cmp.Diff(map[string]any{"Ticket": []any{"status"}}, out["filters"]); d != "" {
		t.Fatalf("filters (-want +got):\n%s", d)
	}
	if !cmp.Equal(out["classes"], map[string]any{"except": []any{"Payroll"}}) {
		t.Fatalf("classes: %v", out["classes"])
	}
	per := out["per_class"].(map[string]any)
	if _, ok := per["Payroll"]; ok {
		t.Fatal("a filtered-out class is described")
	}
	if d := cmp.Diff(map[string]any{"class_name": "Ticket", "accessible": "permitted", "agent_filter_fields": []any{"status"}, "methods": []any{"close", "count", "drop"}}, per["Ticket"]); d != "" {
		t.Fatalf("Ticket (-want +got):\n%s", d)
	}
	effective := out["tools"].(map[string]any)["effective"].([]any)
	if !slices.Contains(effective, any("would_permit")) || slices.Contains(effective, any("create_object")) {
		t.Fatalf("effective tools with the gates closed: %v", effective)
	}
	if out["env_gates"].(map[string]any)[agent.EnvAllowWriteTools] != false {
		t.Fatalf("env_gates: %v", out["env_gates"])
	}
	mustNotMention(t, out, "s3cr3t")
	gated := e.withGates(allGates).ok("describe_agent", nil)
	if !slices.Contains(gated["tools"].(map[string]any)["effective"].([]any), any("create_object")) {
		t.Fatal("the gates open no write tool")
	}
}

// With class_name, only what governs that class; an inaccessible class
// says why.
func TestDescribeAgentClass(t *testing.T) {
	e := governed(t)
	out := e.ok("describe_agent", map[string]any{"class_name": "Ticket"})
	if out["accessible"] != "permitted" || !cmp.Equal(out["agent_filter_fields"], []any{"status"}) {
		t.Fatalf("%v", out)
	}
	mustNotMention(t, out, "s3cr3t")
	if d := cmp.Diff(map[string]any{"class_name": "Payroll", "accessible": "class_filter"}, e.ok("describe_agent", map[string]any{"class_name": "Payroll"})); d != "" {
		t.Fatalf("Payroll (-want +got):\n%s", d)
	}
	if got := e.ok("describe_agent", map[string]any{"class_name": "Nope"})["accessible"]; got != "unknown" {
		t.Fatalf("Nope: %v", got)
	}
}

// Only an admin may ask, and only when its policy exposes introspection:
// otherwise the tool is operator-side, as in the reference guide.
func TestDescribeAgentPermissions(t *testing.T) {
	e := newEnv(t, master(agent.Write))
	e.refused("describe_agent", nil, withKind(tools.CodePermissionDenied, "permission_tier"), "tool describe_agent needs admin permission; this agent is write")
	e.as(master(agent.Admin)).refused("describe_agent", nil, withKind(tools.CodeToolFiltered, "operator_only"), "tool describe_agent is not available to this agent")
	e.as(introspector()).refused("describe_agent", map[string]any{"class": "Ticket"}, tools.CodeInvalidArgument, `unknown argument "class"`)
}
