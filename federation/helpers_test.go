package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
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
	if o.Logger == nil {
		o.Logger = testLogger(t)
	}
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

// fakeClock is a platform clock that moves only when a test advances it.
type fakeClock struct {
	mu     sync.Mutex
	t      time.Time
	timers []*fakeTimer
	added  chan time.Duration // each afterFunc's delay
}

type fakeTimer struct {
	at   time.Time
	f    func()
	done bool // fired or stopped
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), added: make(chan time.Duration, 1000)}
}

// install makes c o's clock.
func (c *fakeClock) install(o *Options) { o.now, o.afterFunc = c.now, c.afterFunc }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) afterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	tm := &fakeTimer{at: c.t.Add(d), f: f}
	c.timers = append(c.timers, tm)
	c.mu.Unlock()
	c.added <- d
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !tm.done
		tm.done = true
		return was
	}
}

// advance moves the clock by d and runs the timers due, each in its own
// goroutine (as time.AfterFunc does).
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	var due []func()
	for _, tm := range c.timers {
		if !tm.done && !tm.at.After(c.t) {
			tm.done = true
			due = append(due, tm.f)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		go f()
	}
}

// nextTimer waits for the next afterFunc and returns its delay.
func (c *fakeClock) nextTimer(t *testing.T) time.Duration {
	t.Helper()
	select {
	case d := <-c.added:
		return d
	case <-bound(t).Done():
		t.Fatal("no timer was set")
		return 0
	}
}

// logRecorder is a slog handler keeping every record.
type logRecorder struct {
	mu     sync.Mutex
	recs   []slog.Record
	logged chan struct{} // signalled on each record
}

func newLogRecorder() *logRecorder { return &logRecorder{logged: make(chan struct{}, 1)} }

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.recs = append(h.recs, r.Clone())
	h.mu.Unlock()
	select {
	case h.logged <- struct{}{}:
	default:
	}
	return nil
}

// wait waits until cond holds, re-checking on each record.
func (h *logRecorder) wait(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx := bound(t)
	for !cond() {
		select {
		case <-h.logged:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// attr returns attribute key of the first record of level holding substr.
func (h *logRecorder) attr(level slog.Level, substr, key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.recs {
		if r.Level != level || !strings.Contains(r.Message, substr) {
			continue
		}
		v := ""
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				v = a.Value.String()
				return false
			}
			return true
		})
		return v
	}
	return ""
}

// count returns how many records of level hold substr in their message.
func (h *logRecorder) count(level slog.Level, substr string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level == level && strings.Contains(r.Message, substr) {
			n++
		}
	}
	return n
}

// scriptedAgent answers requests for e on the broker as answer says (nil:
// no answer), echoing the correlation data; it counts the requests.
type scriptedAgent struct {
	c             *conn
	requests      atomic.Int64
	noCorrelation atomic.Bool // answer without correlation data
}

func startScriptedAgent(t *testing.T, url string, topics Topics, e Entity, answer func(req *request) []byte) *scriptedAgent {
	t.Helper()
	a := &scriptedAgent{}
	ready := make(chan struct{})
	a.c = rogue(t, url, func(pub *paho.Publish) {
		var req request
		if json.Unmarshal(pub.Payload, &req) != nil {
			return
		}
		a.requests.Add(1)
		body := answer(&req)
		if body == nil {
			return
		}
		go func() {
			<-ready
			var props *paho.PublishProperties
			if pub.Properties != nil && !a.noCorrelation.Load() {
				props = &paho.PublishProperties{CorrelationData: pub.Properties.CorrelationData}
			}
			_ = a.c.publish(context.Background(), &paho.Publish{Topic: strings.TrimSuffix(pub.Topic, "/req") + "/res", Payload: body, Properties: props})
		}()
	})
	close(ready)
	must(t, a.c.subscribe(bound(t), topics.AgentRequests(e)))
	return a
}

// refuse is an answer refusing every request.
func refuse(req *request) []byte {
	b, _ := json.Marshal(response{ID: req.ID, Error: &WireError{Code: "refused", Message: "not today"}})
	return b
}
