package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/internal/testing/mqtttest"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// The broker (a private Mosquitto) restarts while a client's call of a
// remote tool runs. The official Go SDK client sees the call end with a
// structured unavailable error (no hang, no protocol error), our own
// tools answer while the broker is down (tools/list warns that it is
// unreachable), and once it is back the remote tools answer again.
func TestFederationBrokerRestartDuringCalls(t *testing.T) {
	m := mqtttest.StartMosquitto(t, mqtttest.Config{})
	w := &fedWorld{conn: federation.ConnOptions{Broker: m.URL(), Platform: "restart"}}
	started, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	ro := &federation.Annotations{ReadOnlyHint: federation.Bool(true)}
	ts := &federation.ToolSet{}
	if err := ts.Add(federation.Tool{Name: "gate", Annotations: ro}, func(ctx context.Context, _ json.RawMessage, _ federation.Caller) (*federation.Result, error) {
		started <- struct{}{}
		select {
		case <-release:
			return federation.TextResult("late"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := ts.Add(federation.Tool{Name: "ping", Annotations: ro}, func(context.Context, json.RawMessage, federation.Caller) (*federation.Result, error) {
		return federation.TextResult("pong"), nil
	}); err != nil {
		t.Fatal(err)
	}
	w.serve(t, fedD1, ts)
	var err error
	if w.p, err = federation.Connect(context.Background(), federation.Options{ConnOptions: w.conn}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.p.Close)
	w.waitTools(t, 2)
	cs := connect(t, fedServer(t, w, mcpserver.Options{}, withToken(agent.Readonly, nil)), "")

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := cs.CallTool(fedBound(t), &mcp.CallToolParams{Name: "device-d1__gate"})
		done <- outcome{res, err}
	}()
	<-started
	m.Stop()
	o := <-done
	if o.err != nil || !o.res.IsError {
		t.Fatalf("the call in flight when the broker stopped: %v %+v", o.err, o.res)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text(t, o.res)), &out); err != nil || out["error_code"] != "unavailable" {
		t.Fatalf("the call in flight when the broker stopped: %s", text(t, o.res))
	}

	// The broker is down: our tools answer, and tools/list says why the
	// remote ones are missing (once the platform has noticed).
	ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
	ctx := fedBound(t)
	for {
		lt, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		fm, _ := lt.Meta["federation"].(map[string]any)
		if ws, _ := json.Marshal(fm["warnings"]); strings.Contains(string(ws), "broker is unreachable") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("tools/list never warned of the unreachable broker: %v", lt.Meta)
		}
		w.waitChange(ctx)
	}

	// Back up: the agent announces itself again, its tools are listed
	// again, and they answer.
	m.Start()
	for !has(listed(t, cs), "device-d1__ping") {
		if ctx.Err() != nil {
			t.Fatalf("the remote tools never came back after the restart\n%s", m.Log())
		}
		w.waitChange(ctx)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "device-d1__ping"})
	if err != nil || res.IsError || text(t, res) != "pong" {
		t.Fatalf("a remote call after the restart: %v %+v", err, res)
	}
}
