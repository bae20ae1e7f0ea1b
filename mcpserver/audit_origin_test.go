package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// Every audit event says where the call came from and who made it: the
// MCP session, the conversation the client names (the _meta's before
// the X-MCP-Session-Id header's; a value outside [A-Za-z0-9._-]{1,128}
// is dropped), the agent's depth and parent, its narrowing lists and the
// fields (never the values) its filters constrain.
func TestAuditCallOrigin(t *testing.T) {
	var out lockedBuffer
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Audit: audit.NewJSONSink(&out),
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			root := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob})
			return root.Sub(agent.SubOptions{Name: "triage",
				Tools:   agent.NameFilter{Except: []string{"export_data", "aggregate"}},
				Classes: agent.NameFilter{Only: []string{"Ticket", "Project"}},
				Filters: agent.ClassFilters{"Ticket": {"status": "open-SECRET-VALUE"}}})
		}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Mux(mcpserver.HTTPOptions{}))
	t.Cleanup(func() { ts.Close(); srv.Close() }) // after the sessions' own cleanups
	connectAs := func(conversation, version string) *mcp.ClientSession {
		tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{mcpserver.ConversationHeader, conversation}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	cs := connectAs("conv-42.a_b", "2025-06-18")
	ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}, Meta: mcp.Meta{"conversation_id": "from-meta"}}); err != nil {
		t.Fatal(err)
	}
	bad := connectAs("bad value; forged=1", "") // the stateless era: no session
	fails(t, bad, "count_objects", map[string]any{"class_name": "Payroll"}, "access_denied")
	long := connectAs(strings.Repeat("a", 129), "2025-06-18") // over 128: dropped
	if _, err := long.CallTool(context.Background(), &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}, Meta: mcp.Meta{"conversation_id": 42}}); err != nil {
		t.Fatal(err) // a conversation id that is not a string: ignored
	}

	var ev []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		ev = append(ev, m)
	}
	if len(ev) != 4 {
		t.Fatalf("want 4 events, got %d:\n%s", len(ev), out.String())
	}
	if ev[3]["conversation_id"] != nil || ev[3]["session_id"] != long.ID() {
		t.Fatalf("an over-long header and a number in _meta: %v", ev[3])
	}
	if strings.Contains(out.String(), "SECRET-VALUE") || strings.Contains(out.String(), "forged") {
		t.Fatalf("a filter value or an injected conversation id reached the audit stream:\n%s", out.String())
	}
	if ev[0]["session_id"] != cs.ID() || ev[1]["session_id"] != cs.ID() || ev[2]["session_id"] != nil || cs.ID() == "" {
		t.Fatalf("session ids %v %v %v, want %s, %s, none", ev[0]["session_id"], ev[1]["session_id"], ev[2]["session_id"], cs.ID(), cs.ID())
	}
	if ev[0]["conversation_id"] != "conv-42.a_b" || ev[1]["conversation_id"] != "from-meta" || ev[2]["conversation_id"] != nil {
		t.Fatalf("conversation ids %v %v %v", ev[0]["conversation_id"], ev[1]["conversation_id"], ev[2]["conversation_id"])
	}
	want := map[string]any{
		"agent_depth": 1.0, "classes_only": []any{"Project", "Ticket"}, "tools_except": []any{"aggregate", "export_data"},
		"filters": map[string]any{"Ticket": []any{"status"}},
	}
	for k, w := range want {
		if d := cmp.Diff(w, ev[0][k]); d != "" {
			t.Errorf("%s (-want +got):\n%s", k, d)
		}
	}
	if p, _ := ev[0]["parent_agent_id"].(string); p == "" || p == ev[0]["agent_id"] {
		t.Errorf("parent_agent_id %v (agent %v)", ev[0]["parent_agent_id"], ev[0]["agent_id"])
	}
	for _, absent := range []string{"classes_except", "tools_only", "methods_only", "methods_except"} {
		if v, has := ev[0][absent]; has {
			t.Errorf("%s: %v, want absent", absent, v)
		}
	}
}
