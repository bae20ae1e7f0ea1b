package mcpserver_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// levelLog records the level of each log line holding a substring.
type levelLog struct {
	substr string
	mu     sync.Mutex
	levels []slog.Level
	seen   chan struct{}
}

func (h *levelLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *levelLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *levelLog) WithGroup(string) slog.Handler            { return h }
func (h *levelLog) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.substr) {
		h.mu.Lock()
		h.levels = append(h.levels, r.Level)
		h.mu.Unlock()
		select {
		case h.seen <- struct{}{}:
		default:
		}
	}
	return nil
}

// TestFederationStaleSessionNotWarned: a session whose client went away
// without closing it cannot take notifications/tools/list_changed; that
// is no WARN line on every list change.
func TestFederationStaleSessionNotWarned(t *testing.T) {
	w := newFedWorld(t)
	logs := &levelLog{substr: "notifications/tools/list_changed", seen: make(chan struct{}, 1)}
	srv := fedServer(t, w, mcpserver.Options{Logger: slog.New(logs)}, withToken(agent.Readonly, nil))
	ts := httpServer(t, srv)
	// A client initializes a session, then vanishes without a DELETE.
	post := func(sid, body string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Mcp-Session-Id")
	}
	init, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "gone", "version": "1"}}})
	sid := post("", string(init))
	if sid == "" {
		t.Fatal("no session id")
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// The tool list changes.
	if err := w.d1.Add(federation.Tool{Name: "new_tool", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, json.RawMessage, federation.Caller) (*federation.Result, error) {
		return federation.TextResult("new"), nil
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-logs.seen:
	case <-fedBound(t).Done():
		t.Fatal("no log line about the list change")
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	for _, l := range logs.levels {
		if l != slog.LevelDebug {
			t.Fatalf("a list change to a stale session logged at %v, want DEBUG", l)
		}
	}
}
