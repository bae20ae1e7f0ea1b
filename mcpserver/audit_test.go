package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// lockedBuffer is an io.Writer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// One JSON event per call, with argument names but never argument values or
// row data, sizes and cost estimates, and the error code of a refusal.
func TestAuditEvents(t *testing.T) {
	var out lockedBuffer
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Audit: audit.NewJSONSink(&out), CostPerMillionTokens: 3,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := connect(t, srv, "")
	ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": map[string]any{"$regex": "SECRET-NEEDLE|Fuel"}}})
	ok(t, cs, "get_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2"})
	fails(t, cs, "query_class", map[string]any{"class_name": "Payroll", "where": map[string]any{"amount": 424242}}, "permission_denied")

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 events, got %d:\n%s", len(lines), out.String())
	}
	for _, leak := range []string{"SECRET-NEEDLE", "Fuel leak", "Borealis", "424242", "pBorealis2", "Ticket\",\"where"} {
		if strings.Contains(out.String(), leak) {
			t.Fatalf("the audit stream contains %q:\n%s", leak, out.String())
		}
	}
	var ev []map[string]any
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		ev = append(ev, m)
	}
	if ev[0]["msg"] != "tool_call" || ev[0]["tool"] != "query_class" || ev[0]["success"] != true || ev[0]["auth_type"] != "acl_user" || ev[0]["permission"] != "readonly" {
		t.Fatalf("event 0: %v", ev[0])
	}
	if got := ev[0]["args_keys"].([]any); len(got) != 2 || got[0] != "class_name" || got[1] != "where" {
		t.Fatalf("args_keys: %v", got)
	}
	size := ev[1]["result_bytes"].(float64)
	if size <= 0 || ev[1]["est_input_tokens"] != float64(int(size)/4) || ev[1]["est_cost_usd"].(float64) != float64(int(size)/4)*3/1e6 {
		t.Fatalf("estimates: %v", ev[1])
	}
	if ev[2]["success"] != false || ev[2]["error_code"] != "permission_denied" || ev[2]["denial_kind"] != "clp" {
		t.Fatalf("refusal event: %v", ev[2])
	}
}
