package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/internal/testing/mqtttest"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// TestFederationHostileSchemaThroughMosquitto: an agent on the least
// privileged broker account of an ACL'd Mosquitto announces a tool whose
// input schema nests 3,000 levels (about 110 KB, well under the payload
// cap) beside a well-formed one. The server used to panic in the SDK's
// AddTool, and again on every restart while the retained presence stayed;
// now the tool is left out, the other one is listed and called, and a
// restarted platform holds too.
func TestFederationHostileSchemaThroughMosquitto(t *testing.T) {
	topics := federation.Topics{Prefix: federation.DefaultPrefix, Platform: "p1"}
	evil := federation.Entity{Type: "device", ID: "evil", Team: "acme"}
	m := mqtttest.StartMosquitto(t, mqtttest.Config{
		Users: map[string]string{"platform": "pw-platform", "agent-evil": "pw-evil"},
		ACL:   federation.MosquittoACL(topics, "platform", map[string]federation.Entity{"agent-evil": evil}),
	})
	deep := `{"type":"object","properties":{"x":` + strings.Repeat(`{"type":"array","title":"x","items":`, 3000) + `{}` + strings.Repeat("}", 3000) + `}}`
	if len(deep) < 100_000 {
		t.Fatalf("the deep schema is %d bytes", len(deep))
	}
	agentConn := federation.ConnOptions{Broker: m.URL(), Platform: "p1", Username: "agent-evil", Password: "pw-evil"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	ready := make(chan struct{}, 10)
	go func() {
		defer close(done)
		_ = federation.ServeAgent(ctx, federation.AgentOptions{ConnOptions: agentConn, Entity: evil, Ready: func() { ready <- struct{}{} }},
			rawProvider{tools: []federation.Tool{
				{Name: "deep", InputSchema: json.RawMessage(deep)},
				{Name: "fine", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)}},
				// Within our bounds, but the SDK refuses its header annotation.
				{Name: "header", InputSchema: json.RawMessage(`{"type":"object","properties":{"x":{"type":"object","x-mcp-header":"X-Thing"}}}`)},
			}})
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-fedBound(t).Done():
		t.Fatalf("the agent never came up\n%s", m.Log())
	}

	for restart := range 2 {
		p, err := federation.Connect(context.Background(), federation.Options{ConnOptions: federation.ConnOptions{Broker: m.URL(), Platform: "p1", Username: "platform", Password: "pw-platform"},
			CheckTool: mcpserver.CheckRemoteTool})
		if err != nil {
			t.Fatal(err)
		}
		w := &fedWorld{p: p}
		w.waitTools(t, 1)
		cs := connect(t, fedServer(t, w, mcpserver.Options{}, withToken(agent.Readonly, nil)), "")
		lt, err := cs.ListTools(fedBound(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range lt.Tools {
			names = append(names, tool.Name)
		}
		if !has(names, "device-evil__fine") || has(names, "device-evil__deep") || has(names, "device-evil__header") {
			t.Fatalf("restart %d: tools/list %v", restart, names)
		}
		warnings := fmt.Sprint(lt.Meta["federation"])
		if !strings.Contains(warnings, "tool deep: nested deeper than 32 levels") || !strings.Contains(warnings, "tool header: the MCP SDK refused it") {
			t.Fatalf("restart %d: the warnings do not say which tools were left out and why: %s", restart, warnings)
		}
		res, err := cs.CallTool(fedBound(t), &mcp.CallToolParams{Name: "device-evil__fine", Arguments: map[string]any{}})
		if err != nil || res.IsError || text(t, res) != "called" {
			t.Fatalf("restart %d: the well-formed tool: %v %v", restart, res, err)
		}
		if res, err := cs.CallTool(fedBound(t), &mcp.CallToolParams{Name: "device-evil__deep", Arguments: map[string]any{}}); err == nil && !res.IsError {
			t.Fatalf("restart %d: the refused tool was called", restart)
		}
		ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
		p.Close()
	}
}

// TestFederationArgumentsCheckedBeforeForwarding: arguments are checked
// against the remote tool's own input schema; a mismatch is
// invalid_argument and nothing reaches the agent.
func TestFederationArgumentsCheckedBeforeForwarding(t *testing.T) {
	w := newFedWorld(t)
	ts := &federation.ToolSet{}
	var got []string
	gotCh := make(chan string, 10)
	if err := ts.Add(federation.Tool{Name: "set_level", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"level":{"type":"integer","minimum":1,"maximum":10},"unit":{"enum":["pct","abs"]},
			"tags":{"type":"array","items":{"type":"string"}}},"required":["level"],"additionalProperties":false}`)},
		func(_ context.Context, args json.RawMessage, _ federation.Caller) (*federation.Result, error) {
			gotCh <- string(args)
			return federation.TextResult("ok"), nil
		}); err != nil {
		t.Fatal(err)
	}
	w.serve(t, federation.Entity{Type: "device", ID: "d3", Team: "acme"}, ts)
	w.waitTools(t, 6)
	cs := connect(t, fedServer(t, w, mcpserver.Options{}, withToken(agent.Readonly, nil)), "")
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{}, "level"},
		{map[string]any{"level": "3"}, "level"},
		{map[string]any{"level": 3.5}, "level"},
		{map[string]any{"level": 11}, "level"},
		{map[string]any{"level": 3, "unit": "kg"}, "unit"},
		{map[string]any{"level": 3, "tags": []any{1}}, "tags"},
		{map[string]any{"level": 3, "drop_table": true}, "drop_table"},
	} {
		out := fails(t, cs, "device-d3__set_level", c.args, "invalid_argument")
		if msg, _ := out["error"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("arguments %v: message %q does not name %q", c.args, msg, c.want)
		}
	}
	if res, err := cs.CallTool(fedBound(t), &mcp.CallToolParams{Name: "device-d3__set_level", Arguments: map[string]any{"level": 3, "unit": "pct"}}); err != nil || res.IsError {
		t.Fatalf("valid arguments: %v %v", res, err)
	}
	got = append(got, <-gotCh)
	select {
	case extra := <-gotCh:
		got = append(got, extra)
	default:
	}
	if len(got) != 1 || !strings.Contains(got[0], `"unit":"pct"`) {
		t.Fatalf("the agent received %v; want only the valid call", got)
	}
}
