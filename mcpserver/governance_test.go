package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
)

const (
	secretStatus = "SECRET_STATUS_42"
	secretName   = "SECRET_NAME_77"
)

func supportPolicy(t *testing.T) agent.Policy {
	return agent.Policy{
		Name:    "support",
		Classes: agent.NameFilter{Except: []string{"Payroll"}},
		Tools:   agent.NameFilter{Except: []string{"export_data"}},
		Methods: agent.NameFilter{Except: []string{"purge"}},
		Filters: []agent.ClassFilters{
			{"Ticket": {"status": map[string]any{"$ne": secretStatus}}},
			{"Project": {"name": map[string]any{"$nin": []any{secretName}}}, "Ticket": {"title": map[string]any{"$ne": secretName}}},
		},
		Catalog: ticketCatalog(t),
	}
}

// rawCall returns a tool result's text.
func rawCall(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %v", name, err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestDescribeAgent(t *testing.T) {
	st := fixtureStore(t)
	p := supportPolicy(t)
	p.Introspection = true
	cs := connect(t, agentServer(t, st, agent.Gates{WriteTools: true}, func() *agent.Agent {
		a := agent.New(agent.Admin, aliceID)
		a.Policy = p
		a.CorrelationID = "corr-1"
		return a
	}), "")
	text := rawCall(t, cs, "describe_agent", map[string]any{})
	for _, secret := range []string{secretStatus, secretName, "sessionToken", "r:"} {
		if strings.Contains(text, secret) {
			t.Fatalf("describe_agent leaks %q:\n%s", secret, text)
		}
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(text), &d); err != nil {
		t.Fatal(err)
	}
	if d["permission"] != "admin" || d["profile"] != "support" || d["correlation_id"] != "corr-1" ||
		!cmp.Equal(d["auth"], map[string]any{"mode": "acl_user", "user_id": alice}) {
		t.Fatalf("describe_agent header: %v", d)
	}
	if want := map[string]any{"Ticket": []any{"status", "title"}, "Project": []any{"name"}}; !cmp.Equal(d["filters"], want) {
		t.Fatalf("filters: %v", d["filters"])
	}
	if !cmp.Equal(d["env_gates"], map[string]any{"PARSEMCP_ALLOW_WRITE_TOOLS": true, "PARSEMCP_ALLOW_SCHEMA_OPS": false, "PARSEMCP_ALLOW_RAW_CRUD": false, "PARSEMCP_ALLOW_RAW_SCHEMA": false}) {
		t.Fatalf("env_gates: %v", d["env_gates"])
	}
	var effective []string
	for _, n := range d["tools"].(map[string]any)["effective"].([]any) {
		effective = append(effective, n.(string))
	}
	if !slices.Contains(effective, "query_class") || !slices.Contains(effective, "call_method") || !slices.Contains(effective, "describe_agent") ||
		slices.Contains(effective, "export_data") || slices.Contains(effective, "create_object") {
		t.Fatalf("effective tools: %v", effective)
	}
	slices.Sort(effective)
	if !slices.Equal(effective, listed(t, cs)) {
		t.Fatalf("effective tools %v differ from tools/list %v", effective, listed(t, cs))
	}
	if !slices.Contains(d["hidden_classes"].([]any), any("_Session")) {
		t.Fatalf("hidden_classes: %v", d["hidden_classes"])
	}
	per := d["per_class"].(map[string]any)
	if _, has := per["Payroll"]; has {
		t.Fatal("a filtered-out class in per_class")
	}
	ticket := per["Ticket"].(map[string]any)
	if !cmp.Equal(ticket["agent_filter_fields"], []any{"status", "title"}) || ticket["accessible"] != "permitted" {
		t.Fatalf("per_class.Ticket: %v", ticket)
	}
	if _, has := ticket["agent_filter"]; has {
		t.Fatalf("per_class.Ticket carries the filter itself: %v", ticket)
	}
	if !cmp.Equal(ticket["methods"], []any{"close", "open_ticket", "retitle", "summary"}) {
		t.Fatalf("per_class.Ticket.methods: %v", ticket["methods"])
	}

	for class, accessible := range map[string]string{"Ticket": "permitted", "Payroll": "class_filter", "_Session": "hidden_class", "Nope": "unknown"} {
		text := rawCall(t, cs, "describe_agent", map[string]any{"class_name": class})
		if strings.Contains(text, secretStatus) || strings.Contains(text, secretName) {
			t.Fatalf("describe_agent(%s) leaks a filter value:\n%s", class, text)
		}
		var cd map[string]any
		_ = json.Unmarshal([]byte(text), &cd)
		if cd["accessible"] != accessible || cd["class_name"] != class {
			t.Errorf("describe_agent(%s): %v", class, cd)
		}
	}

	// Admin only.
	ro := govClient(t, st, allGates, agent.Write, aliceID, p)
	for _, tool := range []string{"describe_agent", "would_permit"} {
		if has(listed(t, ro), tool) {
			t.Errorf("%s listed for a write agent", tool)
		}
		refused(t, ro, tool, map[string]any{"tool": "query_class"}, "permission_denied", "permission_tier", "tool "+tool+" needs admin permission; this agent is write")
	}
}

func TestWouldPermit(t *testing.T) {
	st := fixtureStore(t)
	p := supportPolicy(t)
	p.Introspection = true
	cs := govClient(t, st, agent.Gates{}, agent.Admin, aliceID, p)
	plain := govClient(t, st, agent.Gates{WriteTools: true}, agent.Admin, aliceID, agent.Policy{Catalog: ticketCatalog(t), Introspection: true})
	const crudGate = "tool create_object is disabled by the operator. Required: PARSEMCP_ALLOW_WRITE_TOOLS=true AND PARSEMCP_ALLOW_RAW_CRUD=true." + crudHint
	for _, tc := range []struct {
		cs   *mcp.ClientSession
		tool string
		args map[string]any
		want map[string]any
	}{
		{cs, "query_class", map[string]any{"class_name": "Ticket"}, map[string]any{"allowed": true}},
		{cs, "get_all_schemas", nil, map[string]any{"allowed": true}},
		{cs, "export_data", map[string]any{"class_name": "Ticket"}, map[string]any{"allowed": false, "reason": "tool_filtered", "denied_at": "tools_filter"}},
		{cs, "create_object", map[string]any{"class_name": "Ticket"}, map[string]any{"allowed": false, "reason": "env_gate", "denied_at": "env_gate", "message": crudGate}},
		{cs, "query_class", map[string]any{"class_name": "Payroll"}, map[string]any{"allowed": false, "reason": "class_filter", "denied_at": "class_access", "message": `class "Payroll" was not found (or is not accessible to this agent)`}},
		{cs, "query_class", map[string]any{"class_name": "_Session"}, map[string]any{"allowed": false, "reason": "hidden_class", "denied_at": "class_access", "message": `class "_Session" was not found (or is not accessible to this agent)`}},
		{cs, "count_objects", map[string]any{"class_name": "Nope"}, map[string]any{"allowed": false, "reason": "unknown", "denied_at": "class_access", "message": `class "Nope" was not found (or is not accessible to this agent)`}},
		{cs, "no_such_tool", nil, map[string]any{"allowed": false, "reason": "unknown_tool", "message": "no tool is named no_such_tool"}},
		{cs, "call_method", map[string]any{"class_name": "Ticket", "method_name": "purge"}, map[string]any{"allowed": false, "reason": "method_filtered", "denied_at": "methods_filter"}},
		{cs, "call_method", map[string]any{"class_name": "Ticket", "method_name": "close"}, map[string]any{"allowed": false, "reason": "env_gate", "denied_at": "env_gate", "message": "method Ticket.close is disabled by the operator. Required: PARSEMCP_ALLOW_WRITE_TOOLS=true."}},
		{cs, "call_method", map[string]any{"class_name": "Ticket", "method_name": "summary"}, map[string]any{"allowed": true}},
		{cs, "call_method", map[string]any{"class_name": "Ticket", "method_name": "nope"}, map[string]any{"allowed": false, "reason": "unknown_method", "denied_at": "call_method"}},
		{plain, "query_class", map[string]any{"class_name": "Payroll"}, map[string]any{"allowed": false, "reason": "clp", "denied_at": "class_access", "message": "class-level permissions of Payroll do not allow find for this agent"}},
		{plain, "call_method", map[string]any{"class_name": "Ticket", "method_name": "close"}, map[string]any{"allowed": true}},
		{plain, "delete_class", map[string]any{"class_name": "Ticket"}, map[string]any{"allowed": false, "reason": "env_gate", "denied_at": "env_gate", "message": "tool delete_class is disabled by the operator. Required: PARSEMCP_ALLOW_SCHEMA_OPS=true AND PARSEMCP_ALLOW_RAW_SCHEMA=true."}},
	} {
		args := map[string]any{"tool": tc.tool}
		if tc.args != nil {
			args["arguments"] = tc.args
		}
		if got := ok(t, tc.cs, "would_permit", args); !cmp.Equal(tc.want, got) {
			t.Errorf("would_permit %s %v:\n got %v\nwant %v", tc.tool, tc.args, got, tc.want)
		}
	}
	// The verdicts match what the calls do.
	refused(t, cs, "export_data", map[string]any{"class_name": "Ticket"}, "tool_filtered", "tool_filtered", "tool export_data is not available to this agent")
	fails(t, cs, "query_class", map[string]any{"class_name": "Payroll"}, "access_denied")
	fails(t, plain, "query_class", map[string]any{"class_name": "Payroll"}, "permission_denied")
	fails(t, cs, "would_permit", map[string]any{}, "invalid_argument")
}
