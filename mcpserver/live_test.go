package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/prompts"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/subscribe"
	"github.com/parsemcp/parsemcp/tools"
)

// watcher is an HTTP client session that records the resources/updated
// notifications it receives.
type watcher struct {
	cs      *mcp.ClientSession
	updates chan string
}

func watch(t *testing.T, srv *mcpserver.Server, url, token string) *watcher {
	t.Helper()
	w := &watcher{updates: make(chan string, 256)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { w.updates <- r.Params.URI },
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	w.cs = cs
	// Wait for the listening stream: notifications sent before it opens
	// have nowhere to go.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if err := srv.Notify(context.Background(), cs.ID(), "notifications/resources/updated", map[string]any{"uri": "probe://ready"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.updates:
			w.drain()
			return w
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("listening stream never opened")
		}
	}
}

func (w *watcher) subscribe(t *testing.T, uri string) error {
	t.Helper()
	return w.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri})
}

// next waits for one notification of uri.
func (w *watcher) next(t *testing.T, uri string) {
	t.Helper()
	select {
	case got := <-w.updates:
		if got != uri {
			t.Fatalf("notification for %s, want %s", got, uri)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no notification for %s", uri)
	}
}

// barrierURI is the resource the "nothing arrived" checks end on.
const barrierURI = "parse://Project/count"

// barrier subscribes ws to barrierURI and returns the change each of them
// sees there: a public Project created.
func barrier(t *testing.T, st store.Store, ws ...*watcher) func() {
	t.Helper()
	for _, w := range ws {
		if err := w.subscribe(t, barrierURI); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	return func() {
		t.Helper()
		n++
		if err := st.Create(context.Background(), "Project", []parse.Object{{"name": fmt.Sprintf("barrier %d", n), "ACL": map[string]any{"*": map[string]any{"read": true}}}}); err != nil {
			t.Fatal(err)
		}
	}
}

// quiet is a "nothing arrived" check that ends with a barrier: change
// (from barrier) is made after what ws must not hear of, and the next
// notification each of ws gets must be that one. The feed hands changes
// on in order and the debouncer fires in trigger order (one sender,
// LiveOptions.Senders: 1, keeps that order on the wire), so a late leak
// arrives before the barrier's notification and fails the test; no fixed
// wait decides anything.
func quiet(t *testing.T, why string, change func(), ws ...*watcher) {
	t.Helper()
	change()
	for _, w := range ws {
		select {
		case got := <-w.updates:
			if got != barrierURI {
				t.Fatalf("%s: unexpected notification for %s", why, got)
			}
		case <-time.After(10 * time.Second): // bounds a hang
			t.Fatalf("%s: no notification for the barrier %s", why, barrierURI)
		}
	}
}

func (w *watcher) drain() {
	for {
		select {
		case <-w.updates:
		default:
			return
		}
	}
}

// liveServer builds a server over st with live options o, mounted behind
// the handler's bearer-token agents (alice-token, bob-token).
func liveServer(t *testing.T, st store.Store, o *mcpserver.LiveOptions) (*mcpserver.Server, string) {
	t.Helper()
	srv := newLiveServer(t, st, o, noAgents)
	return srv, mount(t, mcpserver.HandlerOptions{Server: srv})
}

// newLiveServer builds a server over st with live options o and agents.
func newLiveServer(t *testing.T, st store.Store, o *mcpserver.LiveOptions, agents mcpserver.AgentFactory) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Live: o, Agents: agents})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// noAgents refuses every request: the HTTP handler resolves the agents.
func noAgents(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
	return nil, agent.ErrUnauthorized
}

// masterAgents gives every request a read-only master-key agent.
func masterAgents(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
	return agent.New(agent.Readonly, master), nil
}

func aclFor(users ...string) map[string]any {
	acl := map[string]any{}
	for _, u := range users {
		acl[u] = map[string]any{"read": true, "write": true}
	}
	return acl
}

// A subscriber is told about a change only when it could see the row
// before or after it (enter and leave included), once per burst; the
// schema cannot be subscribed; unsubscribe and the end of the session
// release everything. The debounce windows run on a fake clock: a window
// closes when the test says so, once the changes it must hold are in.
func TestLiveSubscriptions(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	const window = 150 * time.Millisecond
	clock := clockwork.NewFakeClock()
	srv, url := liveServer(t, st, &mcpserver.LiveOptions{Debounce: window, Clock: clock, Senders: 1})
	// settle closes the debounce windows once n notifications wait in
	// them (the changes before are then all decided).
	settle := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // bounds a hang
		for srv.LivePending() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d notifications pending, want %d", srv.LivePending(), n)
			}
			time.Sleep(time.Millisecond)
		}
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := clock.BlockUntilContext(bctx, 1); err != nil {
			t.Fatal(err)
		}
		clock.Advance(window)
	}
	count := "parse://Ticket/count"
	a, b := watch(t, srv, url, "alice-token"), watch(t, srv, url, "bob-token")
	for _, w := range []*watcher{a, b} {
		if err := w.subscribe(t, count); err != nil {
			t.Fatal(err)
		}
	}
	project := barrier(t, st, a, b)
	change := func() { project(); settle(2) } // a's and b's barriers
	snap := srv.LiveSnapshot()
	if snap.Sessions != 2 || len(snap.ByURI[count]) != 2 {
		t.Fatalf("index after two subscriptions: %+v", snap)
	}

	// A row only alice can read: alice hears of it, bob does not.
	objs := []parse.Object{{"title": "alice's", "ACL": aclFor(alice)}}
	if err := st.Create(ctx, "Ticket", objs); err != nil {
		t.Fatal(err)
	}
	id := objs[0]["objectId"].(string)
	settle(1)
	a.next(t, count)
	quiet(t, "a row bob cannot read was created", change, b, a)

	// It moves to bob: it leaves alice's view and enters bob's.
	if _, _, err := st.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Ticket", ID: id}, parse.Object{"ACL": aclFor(bob)}); err != nil {
		t.Fatal(err)
	}
	settle(2)
	a.next(t, count)
	b.next(t, count)

	// A change invisible before and after tells alice nothing.
	if _, _, err := st.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Ticket", ID: id}, parse.Object{"title": "bob's"}); err != nil {
		t.Fatal(err)
	}
	settle(1)
	b.next(t, count)
	quiet(t, "bob's row changed", change, a, b)

	// A burst is one notification per subscriber: 20 creates, then the
	// barrier, all in one window.
	for i := range 20 {
		if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "burst " + string(rune('a'+i))}}); err != nil {
			t.Fatal(err)
		}
	}
	project()
	settle(4) // each one's count and barrier
	a.next(t, count)
	b.next(t, count)
	quiet(t, "after the burst's one notification", func() {}, a, b)

	// Unsubscribed: nothing more.
	if err := a.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: count}); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "after unsubscribe"}}); err != nil {
		t.Fatal(err)
	}
	settle(1)
	b.next(t, count)
	quiet(t, "unsubscribed", change, a, b)
	if err := a.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: barrierURI}); err != nil {
		t.Fatal(err)
	}

	// Closing bob's session releases his subscriptions.
	b.cs.Close()
	deadline := time.Now().Add(5 * time.Second)
	for srv.LiveSnapshot().Subscriptions != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("subscriptions left after the sessions ended: %+v", srv.LiveSnapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Refusals: the schema, unknown and hidden classes, malformed URIs, and
// the per-session cap, each with a message saying why.
func TestLiveSubscribeRefusals(t *testing.T) {
	st := fixtureStore(t)
	srv, url := liveServer(t, st, &mcpserver.LiveOptions{Limits: subscribe.Limits{PerSession: 2}})
	w := watch(t, srv, url, "alice-token")
	for uri, want := range map[string]string{
		"parse://Ticket/schema":     "a class's schema is not a live resource",
		"parse://NoSuchClass/count": "was not found",
		"parse://_Session/count":    "was not found",
		"parse://Ticket/rows":       "subscribe to parse://{Class}/count or parse://{Class}/samples",
		"http://example.com/x":      "subscribe to parse://{Class}/count or parse://{Class}/samples",
	} {
		err := w.subscribe(t, uri)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("subscribe %s: %v, want %q", uri, err, want)
		}
	}
	for _, uri := range []string{"parse://Ticket/count", "parse://Ticket/samples", "parse://Ticket/count"} {
		if err := w.subscribe(t, uri); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	if err := w.subscribe(t, "parse://Project/count"); err == nil || !strings.Contains(err.Error(), "the limit is 2 per session") {
		t.Fatalf("over the cap: %v", err)
	}
	if snap := srv.LiveSnapshot(); snap.Subscriptions != 2 {
		t.Fatalf("index: %+v", snap)
	}
}

// Tools and prompts registered at run time reach every session's list
// through tools/list_changed and prompts/list_changed.
func TestListChanged(t *testing.T) {
	st := fixtureStore(t)
	reg, preg := tools.NewRegistry(), prompts.NewRegistry()
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Tools: reg, Prompts: preg, Agents: masterAgents})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	changed := make(chan string, 8)
	ct, stt := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), stt); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "lc", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { changed <- "tools" },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- "prompts" },
	}).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := reg.Register(&tools.Tool{Name: "added_later", Description: "x", Permission: agent.Readonly, ReadOnly: true,
		Handler: func(context.Context, *tools.Call) (any, error) { return map[string]any{}, nil }}); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-changed:
		if got != "tools" {
			t.Fatalf("got %s list_changed", got)
		}
	case <-time.After(30 * time.Second): // bounds a hang
		t.Fatal("no tools/list_changed")
	}
	lt, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range lt.Tools {
		found = found || tl.Name == "added_later"
	}
	if !found {
		t.Fatal("the new tool is not listed")
	}
	// Registering the name again replaces the application's tool (the
	// reference guide's behaviour): listed and called anew.
	if err := reg.Register(&tools.Tool{Name: "added_later", Description: "v2", Permission: agent.Readonly, ReadOnly: true,
		Handler: func(context.Context, *tools.Call) (any, error) { return map[string]any{"v": 2}, nil }}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(&tools.Tool{Name: "query_class", Description: "mine", Permission: agent.Readonly, ReadOnly: true,
		Handler: func(context.Context, *tools.Call) (any, error) { return map[string]any{}, nil }}); !errors.Is(err, tools.ErrBuiltinTool) {
		t.Fatalf("replacing a built-in: %v", err)
	}
	if lt, err = cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.Name == "added_later" && tl.Description != "v2" || tl.Name == "query_class" && tl.Description == "mine" {
			t.Fatalf("after re-registering: %s is described %q", tl.Name, tl.Description)
		}
	}
	if out := ok(t, cs, "added_later", map[string]any{}); out["v"] != 2.0 {
		t.Fatalf("the replaced tool answered %v", out)
	}
	if err := preg.Register(prompts.Prompt{Name: "added_prompt", Description: "x",
		Render: func(context.Context, prompts.Env, map[string]string) (prompts.Rendered, error) {
			return prompts.Rendered{Text: "x"}, nil
		}}); err != nil {
		t.Fatal(err)
	}
	// The SDK debounces each list's notifications (by 10 ms): a slow
	// machine may split the first tools change into two notifications, so
	// a late tools/list_changed may come first.
	bound := time.After(30 * time.Second) // bounds a hang
	for {
		select {
		case got := <-changed:
			if got == "prompts" {
				return
			}
		case <-bound:
			t.Fatal("no prompts/list_changed")
		}
	}
}

// Subscribers are grouped by visibility rule, never by principal alone:
// two sessions of the same user, one of them narrowed by a row filter,
// are told about different changes, and so are sessions of different
// users whose rows differ. Sessions with the same rule share one group and
// are each told once.
func TestLiveGroupsNeverMergeRules(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	srv := newLiveServer(t, st, &mcpserver.LiveOptions{Debounce: 100 * time.Millisecond, Senders: 1}, noAgents)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, Agent: func(r *http.Request) (*agent.Agent, error) {
		a := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: alice})
		switch r.Header.Get("Authorization") {
		case "Bearer all-a", "Bearer all-b":
		case "Bearer open-only":
			a.Policy.Filters = []agent.ClassFilters{{"Ticket": {"status": "open"}}}
		default:
			return nil, agent.ErrUnauthorized
		}
		return a, nil
	}})
	const count = "parse://Ticket/count"
	all1, all2, open := watch(t, srv, url, "all-a"), watch(t, srv, url, "all-b"), watch(t, srv, url, "open-only")
	for _, w := range []*watcher{all1, all2, open} {
		if err := w.subscribe(t, count); err != nil {
			t.Fatal(err)
		}
	}
	change := barrier(t, st, all1, all2, open)
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "closed one", "status": "closed", "ACL": aclFor(alice)}}); err != nil {
		t.Fatal(err)
	}
	all1.next(t, count)
	all2.next(t, count)
	quiet(t, "a closed ticket, filtered out of this session's rows (or a second notification)", change, open, all1, all2)
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "open one", "status": "open", "ACL": aclFor(alice)}}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []*watcher{all1, all2, open} {
		w.next(t, count)
	}
}

// A client that stops reading its notifications holds up nobody else: its
// send is given up after LiveOptions.SendTimeout, it loses its
// subscriptions, and the other subscribers go on being notified (here
// more stuck clients than senders, with the healthy one in the same
// batch). The send timeout is measured on a fake clock that the test
// moves only while the one sender waits on a stuck client, so a healthy
// client, however slow the machine, is never taken for a stuck one.
func TestLiveStuckClient(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	clock := clockwork.NewFakeClock()
	const timeout = 10 * time.Second
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Agents: masterAgents, Clock: clock,
		Live: &mcpserver.LiveOptions{Debounce: 50 * time.Millisecond, Senders: 1, SendTimeout: timeout}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	const count = "parse://Ticket/count"
	var stall atomic.Bool
	held := make(chan struct{}, 16)
	// A stuck client's session, once given up, is closed, and that close
	// waits for the write it holds: the writes end with the test.
	release := make(chan struct{})
	defer close(release)
	// open connects a client over a pipe and subscribes it. The server
	// side's writes to a stuck one go through a stallingWriter: once
	// stall is set they wait, as writes to a client that stopped reading
	// do, until the test ends.
	open := func(stuck bool, handler func(uri string), uris ...string) {
		sc, cc := net.Pipe()
		var w io.WriteCloser = sc
		if stuck {
			w = &stallingWriter{w: sc, stall: &stall, held: held, release: release}
		}
		ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: sc, Writer: w})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ss.Close() })
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { handler(r.Params.URI) },
		}).Connect(ctx, &mcp.IOTransport{Reader: cc, Writer: cc}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		for _, uri := range append([]string{count}, uris...) {
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
		}
	}
	const stuck = 5
	for range stuck {
		open(true, func(string) {})
	}
	// The healthy client is also subscribed to the projects' count, which
	// only the last write changes.
	const projects = "parse://Project/count"
	healthy := make(chan string, 64)
	open(false, func(uri string) {
		select {
		case healthy <- uri:
		default: // the test looks for one URI at a time; none is lost that it waits for
		}
	}, projects)
	write := func(what string) {
		t.Helper()
		if err := st.Create(ctx, "Ticket", []parse.Object{{"title": what}}); err != nil {
			t.Fatal(err)
		}
	}
	// The waits below bound a hang; none decides the result.
	notified := func(uri string) {
		t.Helper()
		deadline := time.After(time.Minute)
		for {
			select {
			case got := <-healthy:
				if got == uri {
					return
				}
			case <-deadline:
				t.Fatalf("the healthy client was not notified of %s (%+v)", uri, srv.LiveSnapshot())
			}
		}
	}
	write("first")
	notified(count)
	stall.Store(true) // from here on every write to a stuck client waits
	// The one sender works through each batch in its own order: a stuck
	// client holds it until the clock passes the send timeout, then that
	// client's session is closed and the rest of the batch goes on. The
	// clock moves only while the sender waits on a stuck client. Each
	// round writes a ticket first, so that a batch holding every session
	// still subscribed is on its way whatever became of the earlier ones.
	for i := range stuck {
		write(fmt.Sprintf("while %d are stuck", stuck-i))
		select {
		case <-held:
		case <-time.After(time.Minute):
			buf := make([]byte, 1<<20)
			t.Fatalf("the sender never waited on a stuck client (%+v); goroutines:\n%s", srv.LiveSnapshot(), buf[:runtime.Stack(buf, true)])
		}
		clock.Advance(timeout + time.Second)
		// The janitor looks at the senders at least once a second (real
		// time); the minute bounds a hang.
		deadline := time.Now().Add(time.Minute)
		for srv.LiveSnapshot().Sessions != stuck-i {
			if time.Now().After(deadline) {
				t.Fatalf("a stuck client kept its subscriptions past the send timeout (%+v)", srv.LiveSnapshot())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n := srv.LiveSnapshot().Sessions; n != 1 {
		t.Fatalf("%d sessions hold subscriptions, want the healthy one", n)
	}
	if err := st.Create(ctx, "Project", []parse.Object{{"name": "after"}}); err != nil {
		t.Fatal(err)
	}
	notified(projects)
}

// stallingWriter writes to w until stall is set, then waits for release,
// as a write to a client that stopped reading waits; the first write
// that waits signals held.
type stallingWriter struct {
	w       io.WriteCloser
	stall   *atomic.Bool
	held    chan<- struct{}
	waited  atomic.Bool
	release <-chan struct{}
}

func (s *stallingWriter) Write(p []byte) (int, error) {
	if !s.stall.Load() {
		return s.w.Write(p)
	}
	if s.waited.CompareAndSwap(false, true) {
		s.held <- struct{}{}
	}
	<-s.release
	return 0, io.ErrClosedPipe
}

func (s *stallingWriter) Close() error { return s.w.Close() }

// A class's samples are read with a find and its count with a count:
// when CLP allows counting but not finding, the count can be subscribed
// and the samples cannot (subscribing is refused like reading).
func TestLiveSamplesFollowFindCLP(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	ledger := parse.NewSchema("Ledger")
	ledger.Fields["amount"] = parse.Field{Type: parse.TypeNumber}
	none := parse.OpPerm{Entries: map[string]bool{}}
	ledger.CLP = parse.CLP{Find: &none, Get: &none}.Completed()
	if err := st.CreateClass(ctx, ledger); err != nil {
		t.Fatal(err)
	}
	srv, url := liveServer(t, st, &mcpserver.LiveOptions{Debounce: 50 * time.Millisecond, Senders: 1})
	w := watch(t, srv, url, "alice-token")
	if _, err := w.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://Ledger/samples"}); err == nil {
		t.Fatal("reading the samples of a class alice may not find succeeded")
	}
	if err := w.subscribe(t, "parse://Ledger/samples"); err == nil {
		t.Fatal("subscribing to the samples of a class alice may not find succeeded")
	}
	if err := w.subscribe(t, "parse://Ledger/count"); err != nil {
		t.Fatalf("subscribing to the count alice may read: %v", err)
	}
	change := barrier(t, st, w)
	if err := st.Create(ctx, "Ledger", []parse.Object{{"amount": 5.0}}); err != nil {
		t.Fatal(err)
	}
	w.next(t, "parse://Ledger/count")
	quiet(t, "only the count is subscribed", change, w)
}

// A client that holds its listening stream open but stops reading it does
// not hold the server's writer: once the socket's buffers are full, the
// next write fails within HTTPOptions.WriteTimeout.
func TestHTTPWriteTimeout(t *testing.T) {
	srv := newLiveServer(t, fixtureStore(t), nil, noAgents)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, HTTPOptions: mcpserver.HTTPOptions{WriteTimeout: 300 * time.Millisecond}})
	sid := initSession(t, url, "alice-token")
	host := strings.TrimPrefix(strings.TrimSuffix(url, "/api/mcp"), "http://")
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /api/mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nAuthorization: Bearer alice-token\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n", host, sid)
	// Never read. Large notifications fill the buffers quickly.
	big := map[string]any{"level": "info", "data": strings.Repeat("x", 256<<10)}
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		done := make(chan error, 1)
		go func() { done <- srv.Notify(context.Background(), sid, "notifications/message", big) }()
		select {
		case err := <-done:
			if err != nil {
				t.Logf("notification %d: %v", i, err)
				return // the stream's write failed: the writer is free
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("notification %d still being written after 3s (the write timeout is 300ms)", i)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications of 256 KiB written to a client that reads nothing", i+1)
		}
	}
}
