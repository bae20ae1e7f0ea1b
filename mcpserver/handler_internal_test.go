package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
)

// Session bindings are forgotten when the session closes (idle timeout,
// DELETE): the map does not grow without bound. The idle timeout runs on
// a fake clock: however slow the machine, no session expires before the
// test says so.
func TestSessionBindingsForgotten(t *testing.T) {
	srv, h, clock, ts := fakeClockHandler(t, time.Hour)
	send := func(method, sid, body string) *http.Response {
		req, _ := http.NewRequest(method, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	var sids []string
	for range 20 {
		sids = append(sids, send(http.MethodPost, "", init).Header.Get("Mcp-Session-Id"))
	}
	if n := h.boundSessions(); n != 20 {
		t.Fatalf("bound %d sessions, want 20", n)
	}
	if resp := send(http.MethodDelete, sids[0], ""); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	if n := h.boundSessions(); n != 19 {
		t.Fatalf("after DELETE: %d bound, want 19", n)
	}
	// Every idle timer is running (the last requests' ends may trail their
	// answers); none has fired.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 19); err != nil {
		t.Fatalf("idle timers: %v", err)
	}
	clock.Advance(time.Hour - time.Millisecond)
	if n := h.boundSessions(); n != 19 {
		t.Fatalf("before the idle timeout: %d bound, want 19", n)
	}
	clock.Advance(time.Millisecond)
	deadline := time.Now().Add(30 * time.Second)
	for h.boundSessions() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after the idle timeout: %d sessions still bound", h.boundSessions())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for ss := range srv.mcp.Sessions() {
		t.Fatalf("the SDK still holds session %q", ss.ID())
	}
	// A failed initialize leaves no binding either.
	send(http.MethodPost, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":"nonsense"}`)
	for h.boundSessions() != 0 {
		if time.Now().After(deadline.Add(5 * time.Second)) {
			t.Fatalf("a failed initialize left %d bindings", h.boundSessions())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A session that expires while work of it still runs (a call whose client
// left) has that work cancelled, not waited for.
func TestSessionExpiryCancelsItsCalls(t *testing.T) {
	srv, _, clock, ts := fakeClockHandler(t, time.Minute)
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	cancelled := make(chan struct{})
	end, ok := srv.calls.start(sid, func() { close(cancelled) })
	if !ok {
		t.Fatal("calls refused")
	}
	defer end()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the expired session's call was not cancelled")
	}
}

// fakeClockHandler serves a handler whose idle timers run on a fake clock;
// every session idles out after sessionTimeout, whether it listened or not.
func fakeClockHandler(t *testing.T, sessionTimeout time.Duration) (*Server, *handler, *clockwork.FakeClock, *httptest.Server) {
	t.Helper()
	srv, err := New(Options{Store: fixture.Store(t, filepath.Join(t.TempDir(), "f.sqlite")), Agents: func(context.Context, RequestInfo) (*agent.Agent, error) {
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	hh, err := NewHandler(HandlerOptions{Server: srv, HTTPOptions: HTTPOptions{SessionTimeout: sessionTimeout, StreamlessSessionTimeout: sessionTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	h := hh.(*handler)
	clock := clockwork.NewFakeClock()
	h.clock = clock
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return srv, h, clock, ts
}
