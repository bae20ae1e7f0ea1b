package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// update is one notifications/resources/updated as a 2026-07-28 client
// sees it: the URI and the subscription id it names.
type update struct{ uri, subscription string }

// listener is a 2026-07-28 (stateless) client session: each Subscribe
// opens a subscriptions/listen stream.
type listener struct {
	cs      *mcp.ClientSession
	updates chan update
}

func newListener(t *testing.T, url, token string) *listener {
	t.Helper()
	l := &listener{updates: make(chan update, 256)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			u := update{uri: r.Params.URI}
			if id, ok := r.Params.Meta[mcp.MetaKeySubscriptionID]; ok {
				u.subscription = fmt.Sprint(id)
			}
			l.updates <- u
		},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: token}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	l.cs = cs
	return l
}

func (l *listener) next(t *testing.T, uri string) update {
	t.Helper()
	select {
	case got := <-l.updates:
		if got.uri != uri {
			t.Fatalf("notification for %s, want %s", got.uri, uri)
		}
		if got.subscription == "" {
			t.Fatalf("notification for %s names no subscription (_meta %s)", uri, mcp.MetaKeySubscriptionID)
		}
		return got
	case <-time.After(5 * time.Second):
		t.Fatalf("no notification for %s", uri)
	}
	return update{}
}

// quietListen is quiet for listeners (subscribed to barrierURI).
func quietListen(t *testing.T, why string, change func(), ls ...*listener) {
	t.Helper()
	change()
	for _, l := range ls {
		select {
		case got := <-l.updates:
			if got.uri != barrierURI {
				t.Fatalf("%s: unexpected notification for %s", why, got.uri)
			}
		case <-time.After(10 * time.Second): // bounds a hang
			t.Fatalf("%s: no notification for the barrier %s", why, barrierURI)
		}
	}
}

// waitSubscriptions waits until the index holds n subscriptions.
func waitSubscriptions(t *testing.T, srv *mcpserver.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for srv.LiveSnapshot().Subscriptions != n {
		if time.Now().After(deadline) {
			t.Fatalf("want %d subscriptions, index holds %+v", n, srv.LiveSnapshot())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Clients at 2026-07-28 subscribe through subscriptions/listen streams
// (no session): each listener hears only of rows it can see, each
// notification names its listen request, a refused URI fails the listen
// with the reason, and ending the listen releases the subscription.
func TestLiveListenStateless(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	srv, url := liveServer(t, st, &mcpserver.LiveOptions{Debounce: 100 * time.Millisecond, Senders: 1})
	const count, samples = "parse://Ticket/count", "parse://Ticket/samples"
	a, b := newListener(t, url, "alice-token"), newListener(t, url, "bob-token")
	for _, l := range []*listener{a, b} {
		if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: count}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: samples}); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*listener{a, b} {
		if err := l.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: barrierURI}); err != nil {
			t.Fatal(err)
		}
	}
	change := barrier(t, st)
	waitSubscriptions(t, srv, 5)

	// A row only alice can read.
	objs := []parse.Object{{"title": "alice's", "ACL": aclFor(alice)}}
	if err := st.Create(ctx, "Ticket", objs); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for range 2 {
		u := <-firstOf(t, a.updates)
		got[u.uri] = u.subscription
	}
	if got[count] == "" || got[samples] == "" || got[count] == got[samples] {
		t.Fatalf("alice's two listens: %v (want two notifications naming different subscriptions)", got)
	}
	quietListen(t, "a row bob cannot read was created", change, b, a)

	// It moves to bob: it leaves alice's view and enters bob's.
	if _, _, err := st.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Ticket", ID: objs[0]["objectId"].(string)}, parse.Object{"ACL": aclFor(bob)}); err != nil {
		t.Fatal(err)
	}
	b.next(t, count)
	left := map[string]bool{}
	for range 2 {
		left[(<-firstOf(t, a.updates)).uri] = true
	}
	if !left[count] || !left[samples] {
		t.Fatalf("the row left alice's view: notified of %v, want both URIs", left)
	}

	// Refused URIs fail the listen with the reason, and hold nothing. (The
	// SDK client does not wait for a listen's answer: ask over raw HTTP.)
	for uri, want := range map[string]string{
		"parse://Ticket/schema":  "not a live resource",
		"parse://_Session/count": "was not found",
		"parse://Ticket/rows":    "subscribe to parse://{Class}/count or parse://{Class}/samples",
	} {
		body := `{"jsonrpc":"2.0","id":9,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + uri + `"]},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
		r := raw(t, http.MethodPost, url, "alice-token", "", body, "Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen")
		if !strings.Contains(r.body, `"error"`) || !strings.Contains(r.body, want) || strings.Contains(r.body, "subscriptions/acknowledged") {
			t.Errorf("listen to %s: %d %s, want an error saying %q", uri, r.status, r.body, want)
		}
	}
	waitSubscriptions(t, srv, 5)

	// Ending a listen releases its subscription; the others stay.
	if err := a.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: samples}); err != nil {
		t.Fatal(err)
	}
	waitSubscriptions(t, srv, 4)
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "public"}}); err != nil {
		t.Fatal(err)
	}
	a.next(t, count)
	b.next(t, count)
	quietListen(t, "after the one notification of its remaining listen", change, a, b)

	a.cs.Close()
	b.cs.Close()
	waitSubscriptions(t, srv, 0)
}

// Over a session transport (in memory, as stdio), a 2026-07-28 client's
// listens share one session: notifications name the right listen.
func TestLiveListenOnSession(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	srv := newLiveServer(t, st, &mcpserver.LiveOptions{Debounce: 100 * time.Millisecond}, masterAgents)
	updates := make(chan update, 16)
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, stt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "listener", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			updates <- update{uri: r.Params.URI, subscription: fmt.Sprint(r.Params.Meta[mcp.MetaKeySubscriptionID])}
		},
	}).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	for _, uri := range []string{"parse://Ticket/count", "parse://Project/count"} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	waitSubscriptions(t, srv, 2)
	ids := map[string]string{}
	for class, obj := range map[string]parse.Object{"Ticket": {"title": "x"}, "Project": {"name": "x"}} {
		if err := st.Create(ctx, class, []parse.Object{obj}); err != nil {
			t.Fatal(err)
		}
		u := <-firstOf(t, updates)
		if u.uri != "parse://"+class+"/count" || u.subscription == "" || u.subscription == "<nil>" {
			t.Fatalf("after a %s write: %+v", class, u)
		}
		ids[class] = u.subscription
	}
	if ids["Ticket"] == ids["Project"] {
		t.Fatalf("two listens, one subscription id: %v", ids)
	}
	cs.Close()
	waitSubscriptions(t, srv, 0)
}

// firstOf returns ch after checking that something arrives on it within
// 5 s.
func firstOf[T any](t *testing.T, ch chan T) chan T {
	t.Helper()
	select {
	case v := <-ch:
		out := make(chan T, 1)
		out <- v
		return out
	case <-time.After(5 * time.Second):
		t.Fatal("nothing arrived")
	}
	return nil
}

func (l *listener) drain() {
	for {
		select {
		case <-l.updates:
		default:
			return
		}
	}
}

// Two listens of one session on the same URI (2026-07-28 over a session
// transport, as stdio): each gets its own notification, naming it, and
// ending one leaves the other subscribed.
func TestLiveOverlappingListens(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	srv := newLiveServer(t, st, &mcpserver.LiveOptions{Debounce: 50 * time.Millisecond, Senders: 1}, masterAgents)
	sc, cc := net.Pipe()
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: sc, Writer: sc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	lines := make(chan map[string]any, 64)
	go func() {
		dec := json.NewDecoder(cc)
		for {
			var m map[string]any
			if dec.Decode(&m) != nil {
				close(lines)
				return
			}
			lines <- m
		}
	}()
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	send := func(s string) {
		t.Helper()
		if _, err := cc.Write([]byte(s + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the next notification of method (others are skipped).
	next := func(method string) map[string]any {
		t.Helper()
		timeout := time.After(5 * time.Second)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatal("connection closed")
				}
				if m["method"] == method {
					return m
				}
				if m["error"] != nil {
					t.Fatalf("error: %v", m)
				}
			case <-timeout:
				t.Fatalf("no %s", method)
			}
		}
	}
	const count = "parse://Ticket/count"
	for _, id := range []string{"1", `"two"`} {
		send(`{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + count + `"]},` + meta + `}}`)
		next("notifications/subscriptions/acknowledged")
	}
	// A third listen, on the barrier resource.
	send(`{"jsonrpc":"2.0","id":"b","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + barrierURI + `"]},` + meta + `}}`)
	next("notifications/subscriptions/acknowledged")
	subscriptionOf := func(m map[string]any) string {
		p, _ := m["params"].(map[string]any)
		mt, _ := p["_meta"].(map[string]any)
		return fmt.Sprint(mt[mcp.MetaKeySubscriptionID])
	}
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "x"}}); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for range 2 {
		got[subscriptionOf(next("notifications/resources/updated"))] = true
	}
	if !got["1"] || !got["two"] {
		t.Fatalf("two listens notified as %v, want 1 and two", got)
	}
	// The second listen ends (its answer comes back); the first goes on.
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"two"}}`)
	timeout := time.After(5 * time.Second)
	for ended := false; !ended; {
		select {
		case m := <-lines:
			ended = m["id"] == "two"
		case <-timeout:
			t.Fatal("the cancelled listen never ended")
		}
	}
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "y"}}); err != nil {
		t.Fatal(err)
	}
	if s := subscriptionOf(next("notifications/resources/updated")); s != "1" {
		t.Fatalf("after listen two ended: notification for %s", s)
	}
	// The barrier: the next notification must be the barrier listen's.
	if err := st.Create(ctx, "Project", []parse.Object{{"name": "barrier"}}); err != nil {
		t.Fatal(err)
	}
	if m := next("notifications/resources/updated"); subscriptionOf(m) != "b" {
		t.Fatalf("a second notification after listen two ended: %v", m)
	}
	if snap := srv.LiveSnapshot(); snap.Subscriptions != 2 {
		t.Fatalf("index after one of two listens ended: %+v", snap)
	}
}

// Open subscriptions/listen requests count against MaxListeners, as GET
// streams do, not against MaxStreams: however many are open, other
// clients' calls are still answered, and one listen too many gets 503.
func TestLiveListensAreListeners(t *testing.T) {
	st := fixtureStore(t)
	srv := newLiveServer(t, st, &mcpserver.LiveOptions{}, noAgents)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, HTTPOptions: mcpserver.HTTPOptions{MaxStreams: 2, MaxListeners: 3, MaxListenersPerPrincipal: 2}})
	if s := openListen(t, url, "bob-token", "parse://Ticket/count"); s.status != http.StatusOK {
		t.Fatalf("bob's listen: %d %s", s.status, s.body)
	}
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	post := func(method, params string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+params+meta+`}}`))
		for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
			"Authorization": "Bearer alice-token", "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method} {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	listen := `"notifications":{"resourceSubscriptions":["parse://Ticket/count"]},`
	for range 2 {
		resp := post("subscriptions/listen", listen)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen: %d", resp.StatusCode)
		}
		buf := make([]byte, 4096)
		n, _ := resp.Body.Read(buf) // the acknowledgement
		if !strings.Contains(string(buf[:n]), "subscriptions/acknowledged") {
			t.Fatalf("listen: %q", buf[:n])
		}
	}
	waitSubscriptions(t, srv, 3)
	for range 3 {
		resp := post("tools/list", "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list with three listens open: %d", resp.StatusCode)
		}
		io.Copy(io.Discard, resp.Body)
	}
	// Bob is within his share; the server's cap is reached.
	if s := openListen(t, url, "bob-token", "parse://Ticket/count"); s.status != http.StatusServiceUnavailable {
		t.Fatalf("a listen over MaxListeners 3: %d, want 503", s.status)
	}
}
