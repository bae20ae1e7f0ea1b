package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/tools"
)

// The hostile-client tests run the standalone HTTP server
// (mcpserver.NewHTTPServer) over PostgreSQL. Slow queries are made slow
// by a lock the test holds on the class Big: they wait in the database,
// using a connection and no CPU, until the test lets go, so no outcome
// depends on the machine's speed. Alice (admin) is the hostile client,
// Bob (read-only) the other client whose calls must answer normally.

type hostile struct {
	st  *postgres.Store
	srv *mcpserver.Server
	url string
	// base carries the clients' requests (nil: http.DefaultTransport).
	base http.RoundTripper
}

// slowArgs aggregates Big: it waits while the test holds Big's lock.
var slowArgs = map[string]any{"class_name": "Big", "pipeline": `[{"$group": {"_id": "$title", "n": {"$sum": 1}}}]`}

func hostileServer(t *testing.T, ho mcpserver.HTTPOptions, so mcpserver.ServerOptions, po ...postgres.Option) *hostile {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Create(ctx, pgtest.Schema(t, "h_"+strings.ToLower(t.Name())), po...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, class := range []string{"Big", "Small"} {
		sch := parse.NewSchema(class)
		sch.Fields["title"] = parse.Field{Type: parse.TypeString}
		if err := st.CreateClass(ctx, sch); err != nil {
			t.Fatal(err)
		}
		var objs []parse.Object
		for i := range 5 {
			objs = append(objs, parse.Object{"objectId": fmt.Sprintf("%s%07d", strings.ToLower(class[:1]), i), "title": fmt.Sprint("t", i)})
		}
		if err := st.Create(ctx, class, objs); err != nil {
			t.Fatal(err)
		}
	}
	cfg := tools.DefaultConfig
	cfg.Gates = allGates
	mk := func(r *http.Request) (*agent.Agent, error) {
		var a *agent.Agent
		switch r.Header.Get("Authorization") {
		case "Bearer alice":
			a = agent.New(agent.Admin, master)
		case "Bearer bob":
			a = agent.New(agent.Readonly, master)
		default:
			return nil, agent.ErrUnauthorized
		}
		a.Policy.Name = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") // one principal each
		return a, nil
	}
	long := 5 * time.Minute // no call ends by its time limit here
	srv, err := mcpserver.New(mcpserver.Options{Store: st, ToolConfig: &cfg, Timeouts: map[string]time.Duration{"aggregate": long, "count_objects": long, "delete_object": long},
		Agents: func(ctx context.Context, ri mcpserver.RequestInfo) (*agent.Agent, error) { return mk(ri.Request) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	h, err := mcpserver.NewHandler(mcpserver.HandlerOptions{Server: srv, HTTPOptions: ho, Agent: mk})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := mcpserver.NewHTTPServer(mux, so)
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })
	return &hostile{st: st, srv: srv, url: "http://" + ln.Addr().String() + "/mcp"}
}

// lock holds an exclusive lock on class until the returned function (also
// run at cleanup) releases it.
func (h *hostile) lock(t *testing.T, class string) func() { return pgtest.LockClass(t, h.st, class) }

// active counts the statements on Big running in this test's database.
func (h *hostile) active(t *testing.T) int { return pgtest.Active(t, h.st, "Big") }

// waitActive waits until want statements on Big run; the deadline only
// bounds a hang.
func (h *hostile) waitActive(t *testing.T, want int) { pgtest.WaitActive(t, h.st, "Big", want) }

func (h *hostile) client(t *testing.T, token string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	t.Helper()
	var opts *mcp.ClientOptions
	if elicit != nil {
		opts = &mcp.ClientOptions{ElicitationHandler: elicit}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: token, Version: "1"}, opts).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: h.url, HTTPClient: &http.Client{Transport: &bearerTransport{token: token, base: h.base}}, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%s connects: %v", token, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// bobAnswers checks that Bob, another principal, connects and gets normal
// answers.
func (h *hostile) bobAnswers(t *testing.T) {
	t.Helper()
	bob := h.client(t, "bob", nil)
	if _, err := bob.ListTools(context.Background(), nil); err != nil {
		t.Fatalf("bob's tools/list: %v", err)
	}
	out, isErr := toolResult(t, bob, "count_objects", map[string]any{"class_name": "Small"})
	if isErr || out["count"] != 5.0 {
		t.Fatalf("bob's count: %v", out)
	}
}

// post sends one JSON-RPC body to the endpoint as token in session sid;
// the response is returned unread.
func (h *hostile) post(ctx context.Context, token, sid, body string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return http.DefaultClient.Do(req)
}

func slowCallBody(id int) string {
	args, _ := json.Marshal(slowArgs)
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"aggregate","arguments":%s}}`, id, args)
}

// A flood of slow queries from one principal: MaxInFlight of them run,
// the rest wait briefly and get 429 rate_limited with Retry-After, and
// another principal's calls answer normally meanwhile. The pool holds one
// connection more than one principal's share (the least
// mcpserver.CheckPoolShare admits): the per-principal cap alone leaves
// that connection to the others.
func TestSlowQueryFlood(t *testing.T) {
	if err := mcpserver.CheckPoolShare(4, 5); err != nil {
		t.Fatal(err)
	}
	if mcpserver.CheckPoolShare(4, 4) == nil || mcpserver.CheckPoolShare(0, mcpserver.DefaultMaxInFlight) == nil {
		t.Fatal("a pool no larger than one principal's share passed")
	}
	h := hostileServer(t, mcpserver.HTTPOptions{MaxInFlight: 4, AdmissionWait: 100 * time.Millisecond}, mcpserver.ServerOptions{}, postgres.WithMaxConns(5))
	release := h.lock(t, "Big")
	alice := h.client(t, "alice", nil)
	type outcome struct {
		status int
		retry  string
		body   string
	}
	outcomes := make(chan outcome, 12)
	for i := range 12 {
		go func() {
			resp, err := h.post(context.Background(), "alice", alice.ID(), slowCallBody(100+i))
			if err != nil {
				outcomes <- outcome{body: err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			outcomes <- outcome{resp.StatusCode, resp.Header.Get("Retry-After"), string(b)}
		}()
	}
	h.waitActive(t, 4)
	for range 8 {
		o := <-outcomes
		if o.status != http.StatusTooManyRequests || o.retry == "" || !strings.Contains(o.body, `"error_code":"rate_limited"`) || !strings.Contains(o.body, `"retry_after":`) {
			t.Fatalf("a call over alice's in-flight cap: %+v", o)
		}
	}
	h.bobAnswers(t)
	if n := h.active(t); n != 4 {
		t.Fatalf("alice's statements: %d, want 4", n)
	}
	release()
	for range 4 {
		if o := <-outcomes; o.status != 200 || !strings.Contains(o.body, `"results`) {
			t.Fatalf("an admitted slow call: %+v", o)
		}
	}
}

// Four slow aggregates hold four connections; a cheap call of another
// agent still gets one (pgx's default pool, max(4, CPUs), made it wait
// for them).
func TestCheapCallBesideSlowAggregates(t *testing.T) {
	h := hostileServer(t, mcpserver.HTTPOptions{}, mcpserver.ServerOptions{})
	defer h.lock(t, "Big")() // released before the clients close
	alice := h.client(t, "alice", nil)
	for range 4 {
		go func() {
			_, _ = alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "aggregate", Arguments: slowArgs})
		}()
	}
	h.waitActive(t, 4)
	h.bobAnswers(t)
}

// A client that drops its connections: each dropped call's statement is
// cancelled (while the lock is still held, so it did not just finish),
// round after round, and another client is unaffected.
func TestConnectionDroppingClient(t *testing.T) {
	h := hostileServer(t, mcpserver.HTTPOptions{}, mcpserver.ServerOptions{})
	defer h.lock(t, "Big")()
	alice := h.client(t, "alice", nil)
	for round := range 3 {
		ctx, drop := context.WithCancel(context.Background())
		done := make(chan struct{}, 6)
		for i := range 6 {
			go func() {
				if resp, err := h.post(ctx, "alice", alice.ID(), slowCallBody(1000*round+i)); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				done <- struct{}{}
			}()
		}
		h.waitActive(t, 6)
		drop()
		for range 6 {
			<-done
		}
		h.waitActive(t, 0)
	}
	h.bobAnswers(t)
}

// Slow-loris clients (headers or a body trickling in, idle connections)
// are cut off by the server's timeouts and do not stop another client.
//
// Bob opens a connection per request: a kept-alive one could be closed by
// the server's idle timeout just as his client reuses it (a POST is not
// retried), which would make his answer depend on the machine's speed.
func TestSlowLorisClient(t *testing.T) {
	limit := 3 * time.Second // past it a stalled connection is cut; only the test's length depends on it
	h := hostileServer(t, mcpserver.HTTPOptions{ReadTimeout: limit}, mcpserver.ServerOptions{HeaderTimeout: limit, ReadTimeout: limit, IdleTimeout: limit})
	h.base = &http.Transport{DisableKeepAlives: true}
	addr := strings.TrimSuffix(strings.TrimPrefix(h.url, "http://"), "/mcp")
	body := slowCallBody(1)
	openers := map[string]string{
		"half a header":    "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Ty",
		"half a body":      "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nAuthorization: Bearer alice\r\nContent-Length: " + fmt.Sprint(len(body)) + "\r\n\r\n" + body[:10],
		"nothing at all":   "",
		"idle keep-alive":  "GET /health HTTP/1.1\r\nHost: " + addr + "\r\n\r\n",
		"one byte, stalls": "P",
	}
	var conns []net.Conn
	var names []string
	for range 10 {
		for name, opener := range openers {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, opener); err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			names = append(names, name)
		}
	}
	h.bobAnswers(t)
	for i, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(60 * time.Second)) // bounds a hang
		if _, err := io.Copy(io.Discard, bufio.NewReader(c)); err != nil {
			t.Fatalf("%s: the server did not close the connection: %v", names[i], err)
		}
	}
	h.bobAnswers(t)
}

// A client parking destructive calls on approvals it never answers holds
// its own in-flight slots, not the server's stream slots: another client
// connects and is answered, the parked calls change nothing, and the
// parker's next call is refused as its own excess.
func TestApprovalParkingClient(t *testing.T) {
	h := hostileServer(t, mcpserver.HTTPOptions{MaxStreams: 4, MaxInFlight: 4, AdmissionWait: 100 * time.Millisecond}, mcpserver.ServerOptions{})
	parked, leave := make(chan struct{}, 8), make(chan struct{})
	alice := h.client(t, "alice", func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		parked <- struct{}{}
		select {
		case <-ctx.Done():
		case <-leave:
		}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	})
	// At the end alice gives up: her calls are cancelled, the person's
	// prompts answered, and her four calls have returned before her client
	// closes (a client's Close waits for the calls it still tracks).
	calls, stopCalls := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer func() {
		stopCalls()
		close(leave)
		running.Wait()
	}()
	for i := range 4 {
		running.Go(func() {
			_, _ = alice.CallTool(calls, &mcp.CallToolParams{Name: "delete_object", Arguments: map[string]any{"class_name": "Small", "object_id": fmt.Sprintf("s%07d", i)}})
		})
	}
	for range 4 {
		<-parked
	}
	h.bobAnswers(t)
	resp, err := h.post(context.Background(), "alice", alice.ID(), `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("alice past her own cap: %d", resp.StatusCode)
	}
	n, err := h.st.Count(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: "Small", Limit: -1})
	if err != nil || n != 5 {
		t.Fatalf("objects after parked deletes: %d %v", n, err)
	}
}

// Every way a call can end early stops its statement in PostgreSQL while
// the statement could not have finished on its own (the lock is still
// held): the client's notifications/cancelled, DELETE of the session,
// and server shutdown. (A dropped connection: TestConnectionDroppingClient;
// session expiry: TestSessionExpiryCancelsItsCalls.)
func TestEarlyEndsStopStatements(t *testing.T) {
	for _, end := range []string{"notifications/cancelled", "DELETE", "shutdown"} {
		t.Run(end, func(t *testing.T) {
			h := hostileServer(t, mcpserver.HTTPOptions{}, mcpserver.ServerOptions{})
			defer h.lock(t, "Big")()
			alice := h.client(t, "alice", nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan struct{})
			go func() {
				_, _ = alice.CallTool(ctx, &mcp.CallToolParams{Name: "aggregate", Arguments: slowArgs})
				close(done)
			}()
			h.waitActive(t, 1)
			switch end {
			case "notifications/cancelled":
				cancel()
			case "DELETE":
				if r := raw(t, http.MethodDelete, h.url, "alice", alice.ID(), ""); r.status != http.StatusNoContent {
					t.Fatalf("DELETE: %d %s", r.status, r.body)
				}
			case "shutdown":
				now, stop := context.WithCancel(context.Background())
				stop() // no grace
				if err := h.srv.Shutdown(now); err == nil {
					t.Fatal("Shutdown had nothing to cancel")
				}
			}
			h.waitActive(t, 0)
			cancel()
			<-done
		})
	}
}

// On SQLite a dropped connection interrupts the statement: the call ends
// as cancelled (had it run to the end it would have succeeded) and its
// connection goes back to the pool.
func TestDroppedConnectionInterruptsSQLite(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "slow.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sch := parse.NewSchema("Big")
	sch.Fields["title"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().ExecContext(ctx, `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM g WHERE n < 200000)
		INSERT INTO "Big" ("objectId", "title") SELECT printf('b%09d', n), hex(randomblob(128)) FROM g`); err != nil {
		t.Fatal(err)
	}
	var ors []any
	for i := range 80 { // unanchored, never matching (hex has no z): every row is scanned 80 times
		ors = append(ors, map[string]any{"title": map[string]any{"$regex": fmt.Sprintf("(%X|a|b)+.*z", i%16)}})
	}
	sink := &eventSink{}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Audit: sink, Timeouts: map[string]time.Duration{"count_objects": 10 * time.Minute},
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := mount(t, mcpserver.HandlerOptions{Server: srv})
	sid := initSession(t, url, "alice-token")
	args, _ := json.Marshal(map[string]any{"class_name": "Big", "where": map[string]any{"$or": ors}})
	cctx, drop := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(cctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count_objects","arguments":`+string(args)+`}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(60 * time.Second) // bounds a hang
	for st.DB().Stats().InUse == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the count did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if m := scrape(t, srv); !strings.Contains(m, "\nparsemcp_running_requests 1\n") || !strings.Contains(m, "\nparsemcp_abandoned_requests_total 0\n") {
		t.Fatalf("metrics while the count runs:\n%s", m)
	}
	drop()
	for len(sink.all()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the call did not end")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if e := sink.all()[0]; e.Success || e.ErrorCode != tools.CodeCancelled {
		t.Fatalf("the dropped call ended %+v, want cancelled", e)
	}
	if m := scrape(t, srv); !strings.Contains(m, "\nparsemcp_abandoned_requests_total 1\n") {
		t.Fatalf("the dropped call is not counted as abandoned:\n%s", m)
	}
	for st.DB().Stats().InUse != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the interrupted statement still holds its connection")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A where too large for the database is the caller's mistake, refused the
// same way on every backend (SQLite used to answer internal_error for an
// $or of 5,000 branches).
func TestHugeWhereRefused(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	var ors []any
	for i := range 5000 {
		ors = append(ors, map[string]any{"title": fmt.Sprint("t", i)})
	}
	e := fails(t, cs, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{"$or": ors}}, "invalid_query")
	if msg, _ := e["error"].(string); !strings.Contains(msg, "at most 300") {
		t.Fatalf("refusal: %v", e)
	}
}
