package mcpserver_test

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/federation/broker"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/tools"
)

var (
	fedD1 = federation.Entity{Type: "device", ID: "d1", Team: "acme"}
	fedD2 = federation.Entity{Type: "device", ID: "d2", Team: "globex"}
)

// fedWorld is a broker, two agents and a platform.
type fedWorld struct {
	broker *broker.Broker
	conn   federation.ConnOptions
	p      *federation.Platform
	d1     *federation.ToolSet
	calls  atomic.Int64 // calls d1's tools received
}

func fedBound(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newFedWorld(t *testing.T) *fedWorld {
	t.Helper()
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	w := &fedWorld{broker: b, conn: federation.ConnOptions{Broker: b.URL(), Platform: "test"}}
	w.d1 = &federation.ToolSet{}
	add := func(ts *federation.ToolSet, tool federation.Tool, f federation.HandlerFunc) {
		if err := ts.Add(tool, f); err != nil {
			t.Fatal(err)
		}
	}
	counted := func(text string) federation.HandlerFunc {
		return func(ctx context.Context, args json.RawMessage, c federation.Caller) (*federation.Result, error) {
			w.calls.Add(1)
			return federation.TextResult(text + " for " + c.User), nil
		}
	}
	add(w.d1, federation.Tool{Name: "read_sensor", Description: "reads the sensor", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)}}, counted("21.5 C"))
	add(w.d1, federation.Tool{Name: "set_point", Description: "sets the target temperature (no annotations: counts as writing)"}, counted("set"))
	add(w.d1, federation.Tool{Name: "hang", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)}}, func(ctx context.Context, _ json.RawMessage, _ federation.Caller) (*federation.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	add(w.d1, federation.Tool{Name: "broken", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)}}, func(context.Context, json.RawMessage, federation.Caller) (*federation.Result, error) {
		return federation.ErrorResult("sensor offline"), nil
	})
	d2 := &federation.ToolSet{}
	add(d2, federation.Tool{Name: "ping", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)}}, counted("pong"))
	w.serve(t, fedD1, w.d1)
	w.serve(t, fedD2, d2)
	w.p, err = federation.Connect(context.Background(), federation.Options{ConnOptions: w.conn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.p.Close)
	w.waitTools(t, 5)
	return w
}

func (w *fedWorld) serve(t *testing.T, e federation.Entity, p federation.Provider) {
	w.serveWith(t, w.conn, e, p)
}

// serveWith serves p as e with the connection options conn.
func (w *fedWorld) serveWith(t *testing.T, conn federation.ConnOptions, e federation.Entity, p federation.Provider) {
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{}, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = federation.ServeAgent(ctx, federation.AgentOptions{ConnOptions: conn, Entity: e, Ready: func() { ready <- struct{}{} }}, p)
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-ready:
	case <-fedBound(t).Done():
		t.Fatalf("agent %s never came up", e)
	}
}

func (w *fedWorld) waitTools(t *testing.T, n int) {
	t.Helper()
	ch := make(chan struct{}, 1)
	defer w.p.OnChange(func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})()
	ctx := fedBound(t)
	for len(w.p.Tools()) != n {
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("the platform lists %d remote tools, want %d", len(w.p.Tools()), n)
		}
	}
}

// waitChange waits for a change of the platform's catalog or agents, or
// a short while (the caller checks its condition again; ctx bounds it).
func (w *fedWorld) waitChange(ctx context.Context) {
	ch := make(chan struct{}, 1)
	defer w.p.OnChange(func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})()
	select {
	case <-ch:
	case <-time.After(100 * time.Millisecond):
	case <-ctx.Done():
	}
}

// fedServer builds a server over the fixture store with the platform,
// whose agents come from mk.
func fedServer(t *testing.T, w *fedWorld, opts mcpserver.Options, mk func() *agent.Agent) *mcpserver.Server {
	t.Helper()
	opts.Store = fixtureStore(t)
	opts.Federation = w.p
	opts.Agents = func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return mk(), nil }
	srv, err := mcpserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func withToken(perm agent.Permission, tok *agent.TokenScope) func() *agent.Agent {
	return func() *agent.Agent {
		a := agent.New(perm, master)
		a.Token = tok
		return a
	}
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want one content item, got %d", len(res.Content))
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestFederationUnionAndRouting(t *testing.T) {
	w := newFedWorld(t)
	cs := connect(t, fedServer(t, w, mcpserver.Options{}, withToken(agent.Write, nil)), "")
	names := listed(t, cs)
	for _, want := range []string{"query_class", "count_objects", "device-d1__read_sensor", "device-d1__set_point", "device-d2__ping"} {
		if !has(names, want) {
			t.Errorf("tools/list lacks %s: %v", want, names)
		}
	}
	// A local tool runs locally: no agent sees the call.
	before := w.calls.Load()
	out := ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
	if _, isNum := out["count"].(float64); !isNum || w.calls.Load() != before {
		t.Fatalf("count_objects = %v (agent calls %d → %d)", out, before, w.calls.Load())
	}
	// A remote tool is proxied to its agent, and its result passed on as is.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "device-d1__read_sensor", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.HasPrefix(text(t, res), "21.5 C for ") || w.calls.Load() != before+1 {
		t.Fatalf("read_sensor = %v %v (calls %d)", res, err, w.calls.Load())
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "device-d2__ping"})
	if err != nil || text(t, res) != "pong for master_key" {
		t.Fatalf("ping = %v %v", res, err)
	}
	// A remote tool's own error keeps its content.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "device-d1__broken"})
	if err != nil || !res.IsError || text(t, res) != "sensor offline" {
		t.Fatalf("broken = %+v %v", res, err)
	}
	// Remote tools carry their annotations and agent.
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range lt.Tools {
		switch tool.Name {
		case "device-d1__read_sensor":
			if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint || tool.Meta["category"] != "remote" {
				t.Errorf("read_sensor: %+v %v", tool.Annotations, tool.Meta)
			}
		case "device-d1__set_point":
			if tool.Annotations != nil {
				t.Errorf("set_point has annotations %+v", tool.Annotations)
			}
		}
	}
}

func TestFederationRemoteWritesNeedTheWriteTier(t *testing.T) {
	w := newFedWorld(t)
	cs := connect(t, fedServer(t, w, mcpserver.Options{}, withToken(agent.Readonly, nil)), "")
	if names := listed(t, cs); has(names, "device-d1__set_point") || !has(names, "device-d1__read_sensor") {
		t.Fatalf("a read-only agent lists %v", names)
	}
	denied(t, cs, "device-d1__set_point", "permission_tier", "needs write")
}

func TestFederationTokenScopes(t *testing.T) {
	w := newFedWorld(t)
	gates := agent.Gates{WriteTools: true, RawCRUD: true}
	cfg := mcpserverToolConfig(gates)
	readAcme := connect(t, fedServer(t, w, mcpserver.Options{ToolConfig: cfg}, withToken(agent.Write, &agent.TokenScope{ID: "r", Team: "acme"})), "")
	writeAcme := connect(t, fedServer(t, w, mcpserver.Options{ToolConfig: cfg}, withToken(agent.Write, &agent.TokenScope{ID: "w", Write: true, Team: "acme"})), "")
	writeAll := connect(t, fedServer(t, w, mcpserver.Options{ToolConfig: cfg}, withToken(agent.Write, &agent.TokenScope{ID: "a", Write: true})), "")

	// Listing: a read-only token sees no writing tool of either source; a
	// team token sees no other team's agent.
	rl := listed(t, readAcme)
	for _, gone := range []string{"create_object", "update_object", "device-d1__set_point", "device-d2__ping"} {
		if has(rl, gone) {
			t.Errorf("read-only acme token lists %s", gone)
		}
	}
	if !has(rl, "query_class") || !has(rl, "device-d1__read_sensor") {
		t.Errorf("read-only acme token lists %v", rl)
	}
	if wl := listed(t, writeAcme); !has(wl, "create_object") || !has(wl, "device-d1__set_point") || has(wl, "device-d2__ping") {
		t.Errorf("write acme token lists %v", wl)
	}
	if al := listed(t, writeAll); !has(al, "device-d2__ping") || !has(al, "device-d1__set_point") {
		t.Errorf("unscoped write token lists %v", al)
	}

	// Calling: the same rules, whatever the list showed.
	before := w.calls.Load()
	denied(t, readAcme, "create_object", "token_scope", "read-only")
	denied(t, readAcme, "device-d1__set_point", "token_scope", "read-only")
	denied(t, readAcme, "device-d2__ping", "token_team", "team acme")
	denied(t, writeAcme, "device-d2__ping", "token_team", "team acme")
	if w.calls.Load() != before {
		t.Fatal("a refused call reached an agent")
	}
	ok(t, readAcme, "count_objects", map[string]any{"class_name": "Ticket"})
	if res, err := readAcme.CallTool(context.Background(), &mcp.CallToolParams{Name: "device-d1__read_sensor"}); err != nil || res.IsError {
		t.Fatalf("read-only token, read tool: %v %v", res, err)
	}
	if res, err := writeAcme.CallTool(context.Background(), &mcp.CallToolParams{Name: "device-d1__set_point"}); err != nil || res.IsError {
		t.Fatalf("write token, write tool: %v %v", res, err)
	}
	if res, err := writeAll.CallTool(context.Background(), &mcp.CallToolParams{Name: "device-d2__ping"}); err != nil || res.IsError {
		t.Fatalf("unscoped token, other team: %v %v", res, err)
	}
}

func TestFederationTimeoutIsStructured(t *testing.T) {
	w := newFedWorld(t)
	srv := fedServer(t, w, mcpserver.Options{Timeouts: map[string]time.Duration{"device-d1__hang": 300 * time.Millisecond}}, withToken(agent.Readonly, nil))
	cs := connect(t, srv, "")
	out := fails(t, cs, "device-d1__hang", map[string]any{}, "timeout")
	if !strings.Contains(out["error"].(string), "device/d1") {
		t.Fatalf("timeout message %q", out["error"])
	}
	ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
}

func TestFederationUnavailableAgent(t *testing.T) {
	w := newFedWorld(t)
	cs, changed := listChangedClient(t, fedServer(t, w, mcpserver.Options{}, withToken(agent.Write, nil)))
	// d1 vanishes: its will marks it offline (published here as the will
	// would be, since a test agent reconnects).
	offline, _ := json.Marshal(federation.Presence{Status: "offline"})
	pubOpts := w.conn
	pubOpts.ClientID = "will-sim"
	if err := publishOnce(fedBound(t), pubOpts, federation.Topics{Platform: "test"}.Presence(fedD1), offline); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-fedBound(t).Done():
		t.Fatal("no notifications/tools/list_changed")
	}
	w.waitTools(t, 1)
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	if has(names, "device-d1__read_sensor") || !has(names, "device-d2__ping") || !has(names, "query_class") {
		t.Fatalf("tools with d1 offline: %v", names)
	}
	fm, _ := lt.Meta["federation"].(map[string]any)
	warnings, _ := fm["warnings"].([]any)
	if len(warnings) != 1 || !strings.Contains(warnings[0].(string), "device/d1 is offline") {
		t.Fatalf("_meta = %v", lt.Meta)
	}
	// Our tools keep working; a call of the absent tool is an unknown tool.
	ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "device-d1__read_sensor"}); err == nil {
		t.Fatal("a call to an offline agent's tool succeeded")
	}
}

func TestFederationListChangedOnAnnounce(t *testing.T) {
	w := newFedWorld(t)
	cs, changed := listChangedClient(t, fedServer(t, w, mcpserver.Options{}, withToken(agent.Write, nil)))
	if err := w.d1.Add(federation.Tool{Name: "calibrate", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(false)}}, func(context.Context, json.RawMessage, federation.Caller) (*federation.Result, error) {
		return federation.TextResult("ok"), nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-fedBound(t).Done():
		t.Fatal("no notifications/tools/list_changed")
	}
	w.waitTools(t, 6)
	if !slices.Contains(listed(t, cs), "device-d1__calibrate") {
		t.Fatal("the new tool is not listed")
	}
}

// denied calls a tool that must be refused with permission_denied of kind,
// its message holding msg.
// The error_code each may-call refusal kind travels under.
var deniedCodes = map[string]string{"permission_tier": "permission_denied", "token_scope": "permission_denied", "token_team": "permission_denied", "tool_filtered": "tool_filtered"}

func denied(t *testing.T, cs *mcp.ClientSession, name, kind, msg string) {
	t.Helper()
	out := fails(t, cs, name, map[string]any{}, deniedCodes[kind])
	d, _ := out["details"].(map[string]any)
	if d["kind"] != kind || !strings.Contains(out["error"].(string), msg) {
		t.Errorf("%s: refused with %v (%v), want kind %s and %q", name, out["error"], d, kind, msg)
	}
}

func mcpserverToolConfig(g agent.Gates) *tools.Config {
	cfg := tools.DefaultConfig
	cfg.Gates = g
	return &cfg
}

// publishOnce publishes one retained message as a separate MQTT client.
func publishOnce(ctx context.Context, o federation.ConnOptions, topic string, payload []byte) error {
	u, err := url.Parse(o.Broker)
	if err != nil {
		return err
	}
	nc, err := net.Dial("tcp", u.Host)
	if err != nil {
		return err
	}
	c := paho.NewClient(paho.ClientConfig{Conn: nc})
	if _, err := c.Connect(ctx, &paho.Connect{ClientID: o.ClientID, CleanStart: true, KeepAlive: 30}); err != nil {
		return err
	}
	defer c.Disconnect(&paho.Disconnect{})
	_, err = c.Publish(ctx, &paho.Publish{Topic: topic, Payload: payload, QoS: 1, Retain: true})
	return err
}

// listChangedClient connects a client that reports each
// notifications/tools/list_changed on the returned channel.
func listChangedClient(t *testing.T, srv *mcpserver.Server) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	changed := make(chan struct{}, 10)
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), stt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}
