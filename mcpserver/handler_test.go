package mcpserver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// bearerAgents is a per-request factory: one user per bearer token.
func bearerAgents(r *http.Request) (*agent.Agent, error) {
	switch r.Header.Get("Authorization") {
	case "Bearer alice-token":
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: alice}), nil
	case "Bearer bob-token":
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), nil
	}
	return nil, agent.ErrUnauthorized
}

// mount serves NewHandler(opts) at /api/mcp of a ServeMux; it returns the
// endpoint URL.
func mount(t *testing.T, opts mcpserver.HandlerOptions) string {
	t.Helper()
	if opts.Server == nil {
		opts.Server = newServer(t, fixtureStore(t), agent.Readonly, master)
	}
	if opts.Agent == nil {
		opts.Agent = bearerAgents
	}
	h, err := mcpserver.NewHandler(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/mcp", h)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/api/mcp"
}

type rawResp struct {
	status int
	header http.Header
	body   string
}

// raw sends one request; headers with an empty value are removed.
func raw(t *testing.T, method, url, token, session, body string, extra ...string) rawResp {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	for i := 0; i+1 < len(extra); i += 2 {
		req.Header.Set(extra[i], extra[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{resp.StatusCode, resp.Header, strings.TrimSpace(string(b))}
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// initSession opens a session for token and returns its id.
func initSession(t *testing.T, url, token string) string {
	t.Helper()
	r := raw(t, http.MethodPost, url, token, "", initBody)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || sid == "" {
		t.Fatalf("initialize: %d %q %s", r.status, sid, r.body)
	}
	if r := raw(t, http.MethodPost, url, token, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return sid
}

func TestHandlerUnauthorized(t *testing.T) {
	url := mount(t, mcpserver.HandlerOptions{})
	for _, tc := range []struct{ token, body, want string }{
		{"", initBody, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"unauthorized"}}`},
		{"wrong", `{"jsonrpc":"2.0","id":"req-7","method":"ping"}`, `{"jsonrpc":"2.0","id":"req-7","error":{"code":-32001,"message":"unauthorized"}}`},
		{"", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"unauthorized"}}`},
	} {
		r := raw(t, http.MethodPost, url, tc.token, "", tc.body)
		if r.status != http.StatusUnauthorized || r.body != tc.want {
			t.Errorf("token %q: %d %s, want 401 %s", tc.token, r.status, r.body, tc.want)
		}
		if r.header.Get("Content-Type") != "application/json" {
			t.Errorf("401 content type %q", r.header.Get("Content-Type"))
		}
	}
	// A session id does not get an unauthenticated request further.
	sid := initSession(t, url, "alice-token")
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := raw(t, m, url, "", sid, ""); r.status != 401 || r.body != `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"unauthorized"}}` {
			t.Errorf("%s without a token: %d %s", m, r.status, r.body)
		}
	}
}

func TestHandlerFactoryErrorIs500(t *testing.T) {
	url := mount(t, mcpserver.HandlerOptions{Agent: func(*http.Request) (*agent.Agent, error) { return nil, errors.New("db down") }})
	if r := raw(t, http.MethodPost, url, "", "", initBody); r.status != 500 || r.body != `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}` {
		t.Fatalf("factory failure: %d %s", r.status, r.body)
	}
}

func TestHandlerSessionIDChecks(t *testing.T) {
	url := mount(t, mcpserver.HandlerOptions{})
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	for _, bad := range []string{"has space", "a/b", "semi;colon", strings.Repeat("a", 129), "ünï", "a\tb"} {
		for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			body := ""
			if m == http.MethodPost {
				body = ping
			}
			r := raw(t, m, url, "alice-token", bad, body)
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, `"code":-32600,"message":"invalid Mcp-Session-Id"`) {
				t.Errorf("%s with session id %q: %d %s", m, bad, r.status, r.body)
			}
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if r := raw(t, m, url, "alice-token", "", ""); r.status != http.StatusBadRequest || !strings.Contains(r.body, "missing Mcp-Session-Id") {
			t.Errorf("%s without a session id: %d %s", m, r.status, r.body)
		}
	}
	// 128 characters of the allowed alphabet are well-formed: unknown, 404.
	if r := raw(t, http.MethodPost, url, "alice-token", strings.Repeat("aZ0._-", 21)+"ab", ping); r.status != http.StatusNotFound {
		t.Errorf("well-formed unknown id: %d %s", r.status, r.body)
	}
}

// Another principal holding a session id gets the unknown-session answer on
// POST, GET and DELETE, and the session stays intact for its owner.
func TestHandlerForeignSession(t *testing.T) {
	url := mount(t, mcpserver.HandlerOptions{})
	sid := initSession(t, url, "alice-token")
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	unknown := raw(t, http.MethodPost, url, "bob-token", "UnknownSession0123", ping)
	if unknown.status != http.StatusNotFound || unknown.body != `{"jsonrpc":"2.0","id":3,"error":{"code":-32600,"message":"session not found"}}` {
		t.Fatalf("unknown session: %d %s", unknown.status, unknown.body)
	}
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		body := ""
		if m == http.MethodPost {
			body = ping
		}
		r := raw(t, m, url, "bob-token", sid, body)
		u := raw(t, m, url, "bob-token", "UnknownSession0123", body)
		if r.status != http.StatusNotFound || r.body != u.body || r.header.Get("Content-Type") != u.header.Get("Content-Type") {
			t.Errorf("bob %s on alice's session: %d %s; unknown session: %d %s", m, r.status, r.body, u.status, u.body)
		}
	}
	r := raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	if r.status != 200 || !strings.Contains(r.body, "query_class") {
		t.Fatalf("alice's session after bob's attempts: %d %s", r.status, r.body)
	}
}

func TestHandlerDeleteSession(t *testing.T) {
	url := mount(t, mcpserver.HandlerOptions{})
	sid := initSession(t, url, "alice-token")
	if r := raw(t, http.MethodDelete, url, "alice-token", sid, ""); r.status != http.StatusNoContent || r.body != "" {
		t.Fatalf("DELETE own session: %d %s", r.status, r.body)
	}
	if r := raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","id":5,"method":"ping"}`); r.status != http.StatusNotFound {
		t.Fatalf("after DELETE: %d %s", r.status, r.body)
	}
	if r := raw(t, http.MethodDelete, url, "alice-token", sid, ""); r.status != http.StatusNotFound {
		t.Fatalf("second DELETE: %d %s", r.status, r.body)
	}
}

func TestHandlerStreamCap(t *testing.T) {
	srv, started, release := holdServer(t, nil)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, HTTPOptions: mcpserver.HTTPOptions{MaxStreams: 1, AdmissionWait: -1}})
	sid := initSession(t, url, "alice-token")
	first := make(chan rawResp, 1)
	go func() {
		first <- raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"hold_test","arguments":{}}}`)
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the blocking tool did not start")
	}
	busy := raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","id":11,"method":"tools/list"}`)
	if busy.status != http.StatusServiceUnavailable || busy.header.Get("Retry-After") != "2" ||
		busy.body != `{"jsonrpc":"2.0","id":11,"error":{"code":-32000,"message":"server busy","data":{"error_code":"busy","retry_after":2}}}` {
		t.Fatalf("over the stream cap: %d %s", busy.status, busy.body)
	}
	// Notifications are not streams: they pass.
	if r := raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`); r.status != http.StatusAccepted {
		t.Fatalf("notification at the cap: %d %s", r.status, r.body)
	}
	close(release)
	r := <-first
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/event-stream") || r.header.Get("X-Accel-Buffering") != "no" {
		t.Fatalf("streamed call: %d %v %s", r.status, r.header, r.body)
	}
	if r := raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","id":12,"method":"tools/list"}`); r.status != 200 {
		t.Fatalf("after the stream ended: %d %s", r.status, r.body)
	}
}

func TestHandlerListenerCap(t *testing.T) {
	// Alice takes her share (2), bob one stream: the server's 3 are open.
	url := mount(t, mcpserver.HandlerOptions{HTTPOptions: mcpserver.HTTPOptions{MaxListeners: 3, MaxListenersPerPrincipal: 2}})
	s1, a2 := initSession(t, url, "alice-token"), initSession(t, url, "alice-token")
	b1, s2 := initSession(t, url, "bob-token"), initSession(t, url, "bob-token")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Mcp-Session-Id", s1)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("X-Accel-Buffering") != "no" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("listening stream: %d %v", resp.StatusCode, resp.Header)
	}
	for _, l := range []struct{ token, sid string }{{"alice-token", a2}, {"bob-token", b1}} {
		if s := openGET(t, url, l.token, l.sid); s.status != http.StatusOK {
			t.Fatalf("listening stream of %s: %d %s", l.token, s.status, s.body)
		}
	}
	busy := raw(t, http.MethodGet, url, "bob-token", s2, "")
	if busy.status != http.StatusServiceUnavailable || busy.header.Get("Retry-After") != "2" ||
		busy.body != `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"server busy","data":{"error_code":"busy","retry_after":2}}}` {
		t.Fatalf("over the listener cap: %d %s", busy.status, busy.body)
	}
	// POST streams have their own cap.
	if r := raw(t, http.MethodPost, url, "bob-token", s2, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); r.status != 200 {
		t.Fatalf("POST while listeners are capped: %d %s", r.status, r.body)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx2, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx2, http.MethodGet, url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer bob-token")
		req.Header.Set("Mcp-Session-Id", s2)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		status := 0
		if err == nil {
			status = resp.StatusCode
			resp.Body.Close()
		}
		cancel2()
		if status == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listener slot was not released: %d %v", status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestHandlerJSONResponse(t *testing.T) {
	url := mount(t, mcpserver.HandlerOptions{HTTPOptions: mcpserver.HTTPOptions{JSONResponse: true}})
	sid := initSession(t, url, "alice-token")
	r := raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Ticket"}}}`)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" || r.header.Get("X-Accel-Buffering") != "" || !strings.HasPrefix(r.body, `{"jsonrpc":"2.0","id":2,"result":`) {
		t.Fatalf("JSON response: %d %v %s", r.status, r.header, r.body)
	}
}

// The per-request factory takes precedence over the Server's, sees the
// *http.Request, and runs once per HTTP request; the Server's factory gets
// the request too when it is the one in use.
func TestHandlerAgentFactories(t *testing.T) {
	var serverCalls, handlerCalls atomic.Int32
	var sawRequest atomic.Bool
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Agents: func(_ context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		serverCalls.Add(1)
		if r.Request != nil && r.Request.URL.Path == "/api/mcp" {
			sawRequest.Store(true)
		}
		return agent.New(agent.Readonly, master), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, Agent: func(r *http.Request) (*agent.Agent, error) {
		handlerCalls.Add(1)
		if r.URL.Path != "/api/mcp" {
			t.Errorf("factory saw path %q", r.URL.Path)
		}
		return bearerAgents(r)
	}})
	sid := initSession(t, url, "alice-token")
	r := raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Ticket"}}}`)
	if r.status != 200 || !strings.Contains(r.body, `count`) {
		t.Fatalf("call: %d %s", r.status, r.body)
	}
	if serverCalls.Load() != 0 || handlerCalls.Load() != 3 {
		t.Fatalf("server factory %d calls (want 0), handler factory %d (want 3)", serverCalls.Load(), handlerCalls.Load())
	}

	// Stateless (2026-07-28) requests too.
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stateless", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: "alice-token"}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}}); err != nil || res.IsError {
		t.Fatalf("stateless call: %v %v", res, err)
	}
	if serverCalls.Load() != 0 {
		t.Fatalf("stateless: the server factory ran %d times", serverCalls.Load())
	}

	h, err := mcpserver.NewHandler(mcpserver.HandlerOptions{Server: srv})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/mcp", h)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	serverCalls.Store(0)
	sid = initSession(t, ts.URL+"/api/mcp", "")
	if r := raw(t, http.MethodPost, ts.URL+"/api/mcp", "", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.status != 200 {
		t.Fatalf("tools/list: %d %s", r.status, r.body)
	}
	if serverCalls.Load() != 3 || !sawRequest.Load() {
		t.Fatalf("server factory: %d calls, saw the request: %v", serverCalls.Load(), sawRequest.Load())
	}
	if _, err := mcpserver.NewHandler(mcpserver.HandlerOptions{}); err == nil {
		t.Fatal("NewHandler without a Server must fail")
	}
}

// bearerTransport adds a bearer token and, once set, replaces the session
// id the client sends (a stolen session id).
type bearerTransport struct {
	token  string
	steal  atomic.Pointer[string]
	status atomic.Int32
	base   http.RoundTripper // nil: http.DefaultTransport
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	if s := b.steal.Load(); s != nil && r.Header.Get("Mcp-Session-Id") != "" {
		r.Header.Set("Mcp-Session-Id", *s)
	}
	base := b.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		b.status.Store(int32(resp.StatusCode))
	}
	return resp, err
}

// Session hijack with the official Go SDK client: bob replays alice's
// session id and is refused as if it did not exist; alice is unaffected.
func TestHandlerSessionHijackSDK(t *testing.T) {
	url := mount(t, mcpserver.HandlerOptions{})
	ctx := context.Background()
	connect := func(bt *bearerTransport) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "hijack", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bt}, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	aliceT, bobT := &bearerTransport{token: "alice-token"}, &bearerTransport{token: "bob-token"}
	a, b := connect(aliceT), connect(bobT)
	if a.ID() == "" || a.ID() == b.ID() {
		t.Fatalf("session ids %q %q", a.ID(), b.ID())
	}
	if _, err := b.ListTools(ctx, nil); err != nil {
		t.Fatalf("bob in his own session: %v", err)
	}
	stolen := a.ID()
	bobT.steal.Store(&stolen)
	if _, err := b.CallTool(ctx, &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}}); err == nil {
		t.Fatal("bob's call in alice's session succeeded")
	}
	if got := bobT.status.Load(); got != http.StatusNotFound {
		t.Fatalf("bob's call in alice's session: HTTP %d, want 404", got)
	}
	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}})
	if err != nil || res.IsError {
		t.Fatalf("alice after the hijack attempt: %v %v", res, err)
	}
	if !bytes.Contains([]byte(res.Content[0].(*mcp.TextContent).Text), []byte("count")) {
		t.Fatalf("alice's count: %v", res.Content)
	}
}
