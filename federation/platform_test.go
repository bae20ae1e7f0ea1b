package federation

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/parsemcp/parsemcp/federation/broker"
)

var d1 = Entity{Type: "device", ID: "d1", Team: "acme"}

func TestCatalogAndProxiedCall(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	startAgent(t, conn, d1, echoTools(t))
	p := startPlatform(t, Options{ConnOptions: conn})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	want := []string{"device-d1__echo", "device-d1__fail", "device-d1__hang", "device-d1__set_point"}
	if got := names(p.Tools()); !slices.Equal(got, want) {
		t.Fatalf("catalog = %v, want %v", got, want)
	}
	rt, _ := p.Lookup("device-d1__echo")
	if rt.Entity != d1 || rt.Tool.Name != "echo" || !rt.Tool.Annotations.ReadOnly() {
		t.Fatalf("lookup = %+v", rt)
	}
	raw, err := p.Call(bound(t), Caller{User: "u1", Session: "s1"}, "device-d1__echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	must(t, json.Unmarshal(raw, &res))
	if len(res.Content) != 1 || res.Content[0].Text != "hi (user u1, session s1)" || res.IsError {
		t.Fatalf("result = %s", raw)
	}
	// A tool's own error comes back as a ToolError holding its result.
	_, err = p.Call(bound(t), Caller{User: "u1", Session: "s1"}, "device-d1__fail", nil)
	var te *ToolError
	if !errors.As(err, &te) || te.Text != "the sensor is broken" || !strings.Contains(string(te.Result), `"isError":true`) {
		t.Fatalf("fail: %v", err)
	}
	// Annotations: read-only from the cache; an unannotated tool is nil
	// (counted as writing).
	a, e, err := p.Annotations(bound(t), "device-d1__set_point")
	if err != nil || a.ReadOnly() || e != d1 {
		t.Fatalf("annotations of set_point = %+v %v %v", a, e, err)
	}
	if _, err := p.Call(bound(t), Caller{User: "u1", Session: "s1"}, "echo", nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
}

func TestTimeoutIsStructured(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	startAgent(t, conn, d1, echoTools(t))
	p := startPlatform(t, Options{ConnOptions: conn})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := p.Call(ctx, Caller{User: "u", Session: "s"}, "device-d1__hang", nil)
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want a timeout", err)
	}
	// The platform still works after the timeout.
	if _, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__echo", json.RawMessage(`{"text":"x"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestAgentOfflineLeavesWarning(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	p := startPlatform(t, Options{ConnOptions: conn})
	stop := startAgent(t, conn, d1, echoTools(t))
	d2 := Entity{Type: "device", ID: "d2"}
	ts2 := &ToolSet{}
	must(t, ts2.Add(Tool{Name: "ping", Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(context.Context, json.RawMessage, Caller) (*Result, error) { return TextResult("pong"), nil }))
	startAgent(t, conn, d2, ts2)
	waitFor(t, p, "both agents", func() bool { return len(p.Tools()) == 5 })
	stop() // a clean end clears d1's presence: it left
	waitFor(t, p, "d1 gone", func() bool { return len(p.Tools()) == 1 })
	if w := p.Warnings(); len(w) != 0 {
		t.Fatalf("warnings after a clean leave = %v", w)
	}
	if _, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__echo", nil); !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("call of a departed agent's tool: %v", err)
	}
}

func TestListChangedOnAnnounce(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	ts := echoTools(t)
	startAgent(t, conn, d1, ts)
	p := startPlatform(t, Options{ConnOptions: conn})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	changed := make(chan struct{}, 10)
	defer p.OnChange(func() { changed <- struct{}{} })()
	must(t, ts.Add(Tool{Name: "new_tool", Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(context.Context, json.RawMessage, Caller) (*Result, error) { return TextResult("new"), nil }))
	waitFor(t, p, "the new tool", func() bool { _, ok := p.Lookup("device-d1__new_tool"); return ok })
	select {
	case <-changed:
	default:
		t.Fatal("no change notification")
	}
	ts.Remove("hang")
	waitFor(t, p, "hang removed", func() bool { _, ok := p.Lookup("device-d1__hang"); return !ok })
}

func TestExposedNamesCannotShadow(t *testing.T) {
	for _, tc := range []struct {
		e    Entity
		tool string
		want string
	}{
		{Entity{Type: "device", ID: "d1"}, "echo", "device-d1__echo"},
		{Entity{Type: "mcp", ID: "everything"}, "get-sum", "mcp-everything__get-sum"},
		{Entity{Type: "mcp", ID: "x"}, "a.b/c d", "mcp-x__a_b_c_d"},
	} {
		if got := ExposedName(tc.e, tc.tool); got != tc.want {
			t.Errorf("ExposedName(%v, %q) = %q, want %q", tc.e, tc.tool, got, tc.want)
		}
	}
	long := ExposedName(Entity{Type: "t", ID: strings.Repeat("i", 60)}, strings.Repeat("x", 100))
	if len(long) != 64 || !strings.Contains(long, "-") {
		t.Fatalf("long name %q (%d)", long, len(long))
	}
}

// refuseClient is a broker hook that refuses connections of one client id
// while it is set: it holds a dropped agent away until the test lets it
// reconnect.
type refuseClient struct {
	mqtt.HookBase
	id      string
	refused atomic.Bool
}

func (h *refuseClient) ID() string           { return "test-refuse-client" }
func (h *refuseClient) Provides(b byte) bool { return b == mqtt.OnConnect }
func (h *refuseClient) OnConnect(cl *mqtt.Client, _ packets.Packet) error {
	if h.refused.Load() && cl.ID == h.id {
		return packets.ErrNotAuthorized
	}
	return nil
}

func TestWillMarksAgentOfflineUntilItReconnects(t *testing.T) {
	// The dropped agent is kept away until the platform saw it offline:
	// reconnecting at once (autopaho retries within 50 ms) would race its
	// will, which the broker publishes as the old connection ends.
	gate := &refuseClient{id: "agent-d1-will"}
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0", Hooks: []mqtt.Hook{gate}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	ac := conn
	ac.ClientID = "agent-d1-will"
	startAgent(t, ac, d1, echoTools(t))
	p := startPlatform(t, Options{ConnOptions: conn})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	offline := make(chan struct{})
	var once sync.Once
	defer p.OnChange(func() {
		for _, w := range p.Warnings() {
			if strings.Contains(w, "device/d1 is offline") && len(p.Tools()) == 0 {
				once.Do(func() { close(offline) })
			}
		}
	})()
	gate.refused.Store(true)
	if !b.Disconnect("agent-d1-will") {
		t.Fatal("the agent was not connected")
	}
	select {
	case <-offline: // the broker published the agent's will
	case <-bound(t).Done():
		t.Fatal("the platform never saw the agent offline")
	}
	gate.refused.Store(false)
	// autopaho reconnects the agent, which announces itself again.
	waitFor(t, p, "d1 back", func() bool { return len(p.Tools()) == 4 && len(p.Warnings()) == 0 })
}

// TestAgentLeavesWhileCalled stops an agent while calls keep arriving:
// the requests that reach it as it leaves get no answer (their callers
// see the agent gone or time out), and none starts a handler after the
// agent has begun to wait for its running ones (run with -race).
func TestAgentLeavesWhileCalled(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	p := startPlatform(t, Options{ConnOptions: conn})
	stop := startAgent(t, conn, d1, echoTools(t))
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	var wg sync.WaitGroup
	done := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, err := p.Call(ctx, Caller{User: "u", Session: "s"}, "device-d1__echo", json.RawMessage(`{"text":"x"}`))
				cancel()
				if errors.Is(err, ErrUnknownTool) {
					return // the agent has left
				}
			}
		}()
	}
	stop()
	waitFor(t, p, "d1 gone", func() bool { return len(p.Tools()) == 0 })
	close(done)
	wg.Wait()
}
