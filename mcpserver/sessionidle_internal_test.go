package mcpserver

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A session that never opened a listening stream is closed after
// StreamlessSessionTimeout idle; one that did keeps SessionTimeout. The
// idle timers run on a fake clock.
func TestSessionStreamlessReaped(t *testing.T) {
	srv, h, clock, ts := fakeClockHandler(t, time.Hour)
	h.opts.StreamlessSessionTimeout = 5 * time.Minute
	send := func(ctx context.Context, method, sid, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		if method == http.MethodGet {
			req.Header.Set("Accept", "text/event-stream")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	open := func() string {
		resp := send(context.Background(), http.MethodPost, "", init)
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id")
	}
	quiet, listened := open(), open()
	// listened opens its GET stream, and closes it.
	getCtx, endGET := context.WithCancel(context.Background())
	resp := send(getCtx, http.MethodGet, listened, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %d", resp.StatusCode)
	}
	endGET()
	resp.Body.Close()

	closed := map[string]chan struct{}{}
	for ss := range srv.mcp.Sessions() {
		done := make(chan struct{})
		closed[ss.ID()] = done
		go func() { _ = ss.Wait(); close(done) }()
	}
	if len(closed) != 2 {
		t.Fatalf("the SDK holds %d sessions, want 2", len(closed))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds a hang
	defer cancel()
	if err := clock.BlockUntilContext(ctx, 2); err != nil { // both idle timers run
		t.Fatalf("idle timers: %v", err)
	}
	clock.Advance(5*time.Minute - time.Millisecond)
	if n := h.boundSessions(); n != 2 {
		t.Fatalf("before the stream-less timeout: %d bound, want 2", n)
	}
	clock.Advance(time.Millisecond)
	select {
	case <-closed[quiet]:
	case <-ctx.Done():
		t.Fatal("the session that never listened was not closed after StreamlessSessionTimeout")
	}
	select {
	case <-closed[listened]:
		t.Fatal("the session that listened was closed after StreamlessSessionTimeout")
	default:
	}
	clock.Advance(time.Hour - 5*time.Minute)
	select {
	case <-closed[listened]:
	case <-ctx.Done():
		t.Fatal("the session that listened was not closed after SessionTimeout")
	}
}
