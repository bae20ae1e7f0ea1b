package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// stream is a listening stream opened with raw HTTP: a GET of a session,
// or a subscriptions/listen POST. A refused one has its body read.
type stream struct {
	status int
	header http.Header
	body   string
}

// openGET opens session sid's GET listening stream for token; it stays
// open until the test ends.
func openGET(t *testing.T, url, token, sid string) stream {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	return tryStream(t, req)
}

// openListen opens a 2026-07-28 subscriptions/listen stream for token on
// uri; it stays open until the test ends.
func openListen(t *testing.T, url, token, uri string) stream {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + uri + `"]},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Authorization": "Bearer " + token, "Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	return tryStream(t, req)
}

func tryStream(t *testing.T, req *http.Request) stream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	s := stream{status: resp.StatusCode, header: resp.Header}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		s.body = strings.TrimSpace(string(b))
		resp.Body.Close()
		cancel()
		return s
	}
	t.Cleanup(func() { cancel(); resp.Body.Close() })
	return s
}

// refused429 reports whether a refusal is the per-principal one: 429,
// Retry-After, and a JSON-RPC -32029 error saying rate_limited.
func refused429(status int, header http.Header, body string) bool {
	var e struct {
		Error struct {
			Code int
			Data struct {
				ErrorCode  string `json:"error_code"`
				RetryAfter int    `json:"retry_after"`
			}
		}
	}
	return status == http.StatusTooManyRequests && header.Get("Retry-After") == "2" &&
		json.Unmarshal([]byte(body), &e) == nil && e.Error.Code == mcpserver.CodeRateLimited &&
		e.Error.Data.ErrorCode == "rate_limited" && e.Error.Data.RetryAfter == 2
}

// A greedy principal (alice: raw HTTP, one session after another, each
// with its GET stream, then a 2026-07-28 listen) gets its share of the
// listening streams and sessions and then 429 with Retry-After; a polite
// principal (bob, through the official TypeScript SDK client) still gets
// its GET stream, and hears of a write on the resource it subscribed to.
func TestPrincipalGreedyAndPoliteTypeScript(t *testing.T) {
	node, dir := tsClient(t)
	st := fixtureStore(t)
	srv := newLiveServer(t, st, &mcpserver.LiveOptions{}, noAgents)
	h, err := mcpserver.NewHandler(mcpserver.HandlerOptions{Server: srv, Agent: bearerAgents, HTTPOptions: mcpserver.HTTPOptions{
		MaxListeners: 8, MaxListenersPerPrincipal: 4, MaxSessionsPerPrincipal: 4}})
	if err != nil {
		t.Fatal(err)
	}
	// The polite client's GET stream, as the server answered it.
	politeGET := make(chan int, 4)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.Header.Get("Authorization") == "Bearer bob-token" {
			w = &statusTap{ResponseWriter: w, status: politeGET}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	url := ts.URL

	var opened, refused int
	for i := range 10 {
		r := raw(t, http.MethodPost, url, "alice-token", "", initBody)
		sid := r.header.Get("Mcp-Session-Id")
		if r.status != http.StatusOK {
			if !refused429(r.status, r.header, r.body) {
				t.Errorf("greedy session %d: %d %v %s, want 429 with Retry-After", i, r.status, r.header, r.body)
			}
			refused++
			continue
		}
		if s := openGET(t, url, "alice-token", sid); s.status == http.StatusOK {
			opened++
		} else if !refused429(s.status, s.header, s.body) {
			t.Errorf("greedy stream %d: %d %v %s, want 200 or 429 with Retry-After", i, s.status, s.header, s.body)
		}
	}
	if opened != 4 || refused != 6 {
		t.Errorf("greedy principal: %d streams open, %d sessions refused; want 4 and 6", opened, refused)
	}
	if s := openListen(t, url, "alice-token", barrierURI); !refused429(s.status, s.header, s.body) {
		t.Errorf("greedy listen past its share: %d %s, want 429", s.status, s.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "polite_subscriber.mjs", url, "bob-token", barrierURI)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "subscribed" {
		t.Fatalf("polite client: %q\n%s", lines.Text(), stderr.String())
	}
	select {
	case status := <-politeGET:
		if status != http.StatusOK {
			t.Fatalf("the polite client's GET stream: %d, want 200\n%s", status, stderr.String())
		}
	case <-ctx.Done():
		t.Fatalf("the polite client opened no GET stream\n%s", stderr.String())
	}
	writeProject(t, st)
	if !lines.Scan() {
		t.Fatalf("polite client: no report\n%s", stderr.String())
	}
	var report struct {
		Updated string
		Errors  []string
	}
	if err := json.Unmarshal(lines.Bytes(), &report); err != nil {
		t.Fatalf("report %q: %v", lines.Text(), err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("polite client: %v\n%s", err, stderr.String())
	}
	if report.Updated != barrierURI || len(report.Errors) != 0 {
		t.Fatalf("polite client: %+v", report)
	}
}

// writeProject writes a public Project: every subscriber of barrierURI
// hears of it.
func writeProject(t *testing.T, st store.Store) {
	t.Helper()
	if err := st.Create(context.Background(), "Project", []parse.Object{{"name": "written while a greedy principal holds its share",
		"ACL": map[string]any{"*": map[string]any{"read": true}}}}); err != nil {
		t.Fatal(err)
	}
}

// statusTap reports the status a response was given.
type statusTap struct {
	http.ResponseWriter
	status chan<- int
	sent   bool
}

func (w *statusTap) WriteHeader(status int) {
	if !w.sent {
		w.sent = true
		w.status <- status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusTap) Write(b []byte) (int, error) {
	if !w.sent {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusTap) Flush() {
	if !w.sent {
		w.WriteHeader(http.StatusOK)
	}
	w.ResponseWriter.(http.Flusher).Flush()
}

func (w *statusTap) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// 2026-07-28 listens count against the principal's share of the
// listening streams: a greedy principal's listens past it get 429 with
// Retry-After, and another principal's listen (the official Go SDK
// client) is accepted and hears of a write.
func TestPrincipalListenShare(t *testing.T) {
	st := fixtureStore(t)
	srv := newLiveServer(t, st, &mcpserver.LiveOptions{}, noAgents)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, HTTPOptions: mcpserver.HTTPOptions{MaxListeners: 4, MaxListenersPerPrincipal: 2}})
	var opened int
	for i := range 4 {
		s := openListen(t, url, "alice-token", barrierURI)
		switch {
		case s.status == http.StatusOK:
			opened++
		case !refused429(s.status, s.header, s.body):
			t.Fatalf("greedy listen %d: %d %v %s, want 200 or 429 with Retry-After", i, s.status, s.header, s.body)
		}
	}
	if opened != 2 {
		t.Fatalf("greedy principal: %d listens open, want 2", opened)
	}
	bob := newListener(t, url, "bob-token")
	if err := bob.cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: barrierURI}); err != nil {
		t.Fatalf("polite listen: %v", err)
	}
	writeProject(t, st)
	bob.next(t, barrierURI)
}

// Past MaxSessionsPerPrincipal a new session closes the principal's
// longest-idle session (no request in flight, no stream), which then
// answers 404; when every session of the principal is busy, the new one
// is refused with 429 and Retry-After. Other principals are not affected.
func TestPrincipalSessionShare(t *testing.T) {
	url := mount(t, mcpserver.HandlerOptions{HTTPOptions: mcpserver.HTTPOptions{MaxSessionsPerPrincipal: 3, MaxListeners: 10, MaxListenersPerPrincipal: 3}})
	s1, s2, s3 := initSession(t, url, "alice-token"), initSession(t, url, "alice-token"), initSession(t, url, "alice-token")
	ping := func(sid string) rawResp {
		return raw(t, http.MethodPost, url, "alice-token", sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	}
	if r := ping(s1); r.status != http.StatusOK { // s2 is now the longest idle
		t.Fatalf("ping: %d %s", r.status, r.body)
	}
	s4 := initSession(t, url, "alice-token")
	if r := ping(s2); r.status != http.StatusNotFound {
		t.Fatalf("the longest-idle session after a new one past the cap: %d %s, want 404", r.status, r.body)
	}
	for _, sid := range []string{s1, s3, s4} {
		if r := ping(sid); r.status != http.StatusOK {
			t.Fatalf("session %s: %d %s", sid, r.status, r.body)
		}
	}
	// Every session listening: none idle, so none is closed.
	for _, sid := range []string{s1, s3, s4} {
		if s := openGET(t, url, "alice-token", sid); s.status != http.StatusOK {
			t.Fatalf("GET stream of %s: %d %s", sid, s.status, s.body)
		}
	}
	if r := raw(t, http.MethodPost, url, "alice-token", "", initBody); !refused429(r.status, r.header, r.body) || r.header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("a session past the cap, none idle: %d %v %s, want 429", r.status, r.header, r.body)
	}
	for _, sid := range []string{s1, s3, s4} {
		if r := ping(sid); r.status != http.StatusOK {
			t.Fatalf("listening session %s after the refusal: %d %s", sid, r.status, r.body)
		}
	}
	initSession(t, url, "bob-token")
}
