package mcpserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/fixture"
)

// Session bindings are forgotten when the SDK closes the session (idle
// timeout, DELETE): the map does not grow without bound.
func TestSessionBindingsForgotten(t *testing.T) {
	srv, err := New(Options{Store: fixture.Store(t, filepath.Join(t.TempDir(), "f.sqlite")), Agents: func(context.Context, RequestInfo) (*agent.Agent, error) {
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	hh, err := NewHandler(HandlerOptions{Server: srv, HTTPOptions: HTTPOptions{SessionTimeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	h := hh.(*handler)
	ts := httptest.NewServer(h)
	defer ts.Close()
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
	deadline := time.Now().Add(10 * time.Second)
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
