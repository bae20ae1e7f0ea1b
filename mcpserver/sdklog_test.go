package mcpserver_test

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// recordLog keeps every log record at INFO and above.
type recordLog struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *recordLog) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler           { return h }
func (h *recordLog) WithGroup(string) slog.Handler                { return h }
func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r)
	h.mu.Unlock()
	return nil
}

// TestClientProtocolMistakesAreNotErrors: a client calling tools/call
// without a session (before initialize) is told so in a JSON-RPC error; in
// the operator's log that is no ERROR line per request (a way to fill a
// disk), only one INFO summary a minute.
func TestClientProtocolMistakesAreNotErrors(t *testing.T) {
	logs := &recordLog{}
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Logger: slog.New(logs),
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httpServer(t, srv)
	for range 50 {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_classes","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	summaries := 0
	for _, r := range logs.records {
		if r.Level >= slog.LevelWarn {
			t.Errorf("%s line for a client's mistake: %s", r.Level, r.Message)
		}
		if strings.Contains(r.Message, "protocol mistakes") {
			summaries++
		}
	}
	if summaries != 1 {
		t.Fatalf("%d summary lines for 50 mistakes in a minute, want 1", summaries)
	}
}
