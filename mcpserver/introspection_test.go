package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
)

var introspectionTools = []string{"describe_agent", "would_permit"}

// listedTools is what tools/list and list_tools show the session.
func listedTools(t *testing.T, cs *mcp.ClientSession) (list, listTools []string) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range res.Tools {
		list = append(list, tl.Name)
	}
	for _, e := range ok(t, cs, "list_tools", map[string]any{})["tools"].([]any) {
		listTools = append(listTools, e.(map[string]any)["name"].(string))
	}
	return list, listTools
}

// describe_agent and would_permit are operator-side, as in the reference
// guide: a model's session, even an admin holding the master key, neither
// sees nor calls them unless its policy exposes them (introspection).
func TestIntrospectionIsOperatorOnly(t *testing.T) {
	st := fixtureStore(t)
	for _, c := range []struct {
		name string
		p    agent.Policy
	}{
		{"no policy", agent.Policy{}},
		{"every tool allowed by name", agent.Policy{Tools: agent.NameFilter{Only: []string{"describe_agent", "would_permit", "list_tools", "query_class"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := govClient(t, st, allGates, agent.Admin, master, c.p)
			list, listTools := listedTools(t, cs)
			for _, name := range introspectionTools {
				if slices.Contains(list, name) || slices.Contains(listTools, name) {
					t.Errorf("%s is listed: tools/list %v, list_tools %v", name, list, listTools)
				}
				refused(t, cs, name, map[string]any{"tool": "query_class"}, "tool_filtered", "operator_only", "tool "+name+" is not available to this agent")
			}
		})
	}

	// The tier still applies when the policy exposes them.
	ro := govClient(t, st, agent.Gates{}, agent.Write, master, agent.Policy{Introspection: true})
	refused(t, ro, "describe_agent", map[string]any{}, "permission_denied", "permission_tier", "tool describe_agent needs admin permission; this agent is write")

	// An admin whose policy exposes them sees and calls them, and
	// would_permit judges them as dispatch does.
	on := govClient(t, st, agent.Gates{}, agent.Admin, master, agent.Policy{Introspection: true})
	list, listTools := listedTools(t, on)
	for _, name := range introspectionTools {
		if !slices.Contains(list, name) || !slices.Contains(listTools, name) {
			t.Errorf("%s is not listed: tools/list %v, list_tools %v", name, list, listTools)
		}
		if v := ok(t, on, "would_permit", map[string]any{"tool": name}); v["allowed"] != true {
			t.Errorf("would_permit %s: %v", name, v)
		}
	}
	d := ok(t, on, "describe_agent", map[string]any{})
	tl := d["tools"].(map[string]any)
	if tl["introspection"] != true || !slices.Contains(tl["effective"].([]any), any("would_permit")) {
		t.Fatalf("describe_agent: %v", tl)
	}
}

// A sub-agent does not inherit the switch: it must ask for it, and only
// a parent that has it can give it.
func TestIntrospectionSubAgents(t *testing.T) {
	parent := agent.New(agent.Admin, master)
	parent.Policy.Introspection = true
	admin := agent.Admin
	quiet, err := parent.Sub(agent.SubOptions{Permission: &admin})
	if err != nil || quiet.Policy.Introspection {
		t.Fatalf("a sub-agent that did not ask: %v %v", quiet.Policy.Introspection, err)
	}
	asked, err := parent.Sub(agent.SubOptions{Permission: &admin, Introspection: true})
	if err != nil || !asked.Policy.Introspection {
		t.Fatalf("a sub-agent that asked: %v %v", asked.Policy.Introspection, err)
	}
	if _, err := quiet.Sub(agent.SubOptions{Permission: &admin, Introspection: true}); err == nil {
		t.Fatal("a sub-agent widened its parent's introspection")
	}
	cs := connect(t, agentServer(t, fixtureStore(t), agent.Gates{}, func() *agent.Agent { return quiet }), "")
	refused(t, cs, "describe_agent", map[string]any{}, "tool_filtered", "operator_only", "tool describe_agent is not available to this agent")
}

// The operator at the shell (parsemcp call: Server.CallTool) runs them
// whatever the policy says; the tier still applies. The model's sessions
// of the same server stay without them.
func TestIntrospectionForTheOperator(t *testing.T) {
	st := fixtureStore(t)
	srv := agentServer(t, st, agent.Gates{}, policyAgent(agent.Admin, master, agent.Policy{}))
	out, isErr, err := srv.CallTool(context.Background(), "describe_agent", json.RawMessage(`{}`))
	if err != nil || isErr || out.(map[string]any)["permission"] != "admin" {
		t.Fatalf("describe_agent from the shell: %v %v %v", out, isErr, err)
	}
	out, isErr, err = srv.CallTool(context.Background(), "would_permit", json.RawMessage(`{"tool":"describe_agent"}`))
	if err != nil || isErr || out.(map[string]any)["allowed"] != true {
		t.Fatalf("would_permit from the shell: %v %v %v", out, isErr, err)
	}
	refused(t, connect(t, srv, ""), "describe_agent", map[string]any{}, "tool_filtered", "operator_only", "tool describe_agent is not available to this agent")

	w := agentServer(t, st, agent.Gates{}, policyAgent(agent.Write, master, agent.Policy{}))
	if out, isErr, _ := w.CallTool(context.Background(), "describe_agent", json.RawMessage(`{}`)); !isErr || out.(map[string]any)["error_code"] != "permission_denied" {
		t.Fatalf("a write-tier operator: %v", out)
	}
}
