package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	mqtt "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/parsemcp/parsemcp/federation/broker"
)

// subHook records the subscriptions each client makes and drops at the
// broker.
type subHook struct {
	mqtt.HookBase
	mu     sync.Mutex
	subs   map[string][]string
	unsubs map[string][]string
	events chan string
}

func (h *subHook) ID() string { return "test-subscriptions" }

func (h *subHook) Provides(b byte) bool { return b == mqtt.OnSubscribed || b == mqtt.OnUnsubscribed }

func (h *subHook) OnSubscribed(cl *mqtt.Client, pk packets.Packet, _ []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range pk.Filters {
		h.subs[cl.ID] = append(h.subs[cl.ID], f.Filter)
	}
}

func (h *subHook) OnUnsubscribed(cl *mqtt.Client, pk packets.Packet) {
	h.mu.Lock()
	for _, f := range pk.Filters {
		h.unsubs[cl.ID] = append(h.unsubs[cl.ID], f.Filter)
	}
	h.mu.Unlock()
	for _, f := range pk.Filters {
		select {
		case h.events <- f.Filter:
		default:
		}
	}
}

// count returns how often client subscribed (or unsubscribed) filter.
func (h *subHook) count(m map[string][]string, client, filter string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, f := range m[client] {
		if f == filter {
			n++
		}
	}
	return n
}

// testBroker starts an embedded broker on a free loopback port.
func testBroker(t *testing.T) (*broker.Broker, *subHook) {
	t.Helper()
	h := &subHook{subs: map[string][]string{}, unsubs: map[string][]string{}, events: make(chan string, 100)}
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0", Hooks: []mqtt.Hook{h}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, h
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("FEDERATION_DEBUG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

// bound is a context that only bounds a hang.
func bound(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// startAgent serves ts as entity e on the broker until the test ends,
// and waits until it announced itself.
func startAgent(t *testing.T, conn ConnOptions, e Entity, ts Provider) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{}, 10)
	done := make(chan error, 1)
	conn.Logger = testLogger(t)
	go func() {
		done <- ServeAgent(ctx, AgentOptions{ConnOptions: conn, Entity: e, Ready: func() { ready <- struct{}{} }}, ts)
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("agent %s ended: %v", e, err)
	case <-bound(t).Done():
		t.Fatalf("agent %s never announced itself", e)
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("agent %s: %v", e, err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// startPlatform connects a platform to the broker.
func startPlatform(t *testing.T, o Options) *Platform {
	t.Helper()
	o.Logger = testLogger(t)
	p, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	if err := p.Ready(bound(t)); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitFor waits until cond holds, re-checking on each catalog change.
func waitFor(t *testing.T, p *Platform, what string, cond func() bool) {
	t.Helper()
	ch := make(chan struct{}, 1)
	defer p.OnChange(func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})()
	ctx := bound(t)
	for !cond() {
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond): // re-check; the bound decides failure
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func names(tools []RemoteTool) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// echoTools is a ToolSet with a read-only echo, an unannotated write and
// a tool that blocks until cancelled.
func echoTools(t *testing.T) *ToolSet {
	ts := &ToolSet{}
	must(t, ts.Add(Tool{Name: "echo", Description: "echoes its text", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(ctx context.Context, args json.RawMessage, c Caller) (*Result, error) {
		var in struct{ Text string }
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, err
		}
		return TextResult(fmt.Sprintf("%s (user %s, session %s)", in.Text, c.User, c.Session)), nil
	}))
	must(t, ts.Add(Tool{Name: "set_point"}, func(ctx context.Context, args json.RawMessage, c Caller) (*Result, error) {
		return TextResult("set"), nil
	}))
	must(t, ts.Add(Tool{Name: "hang", Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(ctx context.Context, args json.RawMessage, c Caller) (*Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	must(t, ts.Add(Tool{Name: "fail", Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(ctx context.Context, args json.RawMessage, c Caller) (*Result, error) {
		return ErrorResult("the sensor is broken"), nil
	}))
	return ts
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
