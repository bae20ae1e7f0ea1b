package mcpserver_test

import (
	"context"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// TestWouldPermitAppliesTheTokenScope: would_permit answers as the call
// would be judged. A read-only personal access token may not call a local
// write tool: the call is refused with token_scope, and would_permit says
// so instead of "allowed" (it used to skip the token for local tools).
func TestWouldPermitAppliesTheTokenScope(t *testing.T) {
	gates := agent.Gates{WriteTools: true, RawCRUD: true}
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), ToolConfig: mcpserverToolConfig(gates),
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			a := agent.New(agent.Admin, master) // would_permit needs admin
			a.Policy.Introspection = true       // and a policy exposing it
			a.Token = &agent.TokenScope{ID: "ro"}
			return a, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cs := connect(t, srv, "")
	write := map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "x"}}
	denied(t, cs, "create_object", "token_scope", "read-only")
	v := ok(t, cs, "would_permit", map[string]any{"tool": "create_object", "arguments": write})
	if v["allowed"] == true || v["reason"] != "token_scope" {
		t.Fatalf("would_permit for a call refused with token_scope: %v", v)
	}
	if v := ok(t, cs, "would_permit", map[string]any{"tool": "count_objects", "arguments": map[string]any{"class_name": "Ticket"}}); v["allowed"] != true {
		t.Fatalf("would_permit refuses a read under a read-only token: %v", v)
	}
}
