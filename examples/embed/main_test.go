package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// The sample application reaches every part of the embedding API through
// the mounted handler: the per-request factory (401), progress reported
// by its own tool, approval of a deletion, and Notify to one session.
func TestEmbeddedApplication(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "embed.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: 100}); err != nil {
		t.Fatal(err)
	}
	mux, srv, err := newApp(st, slog.New(slog.DiscardHandler), 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(mux)
	defer ts.Close()
	url := ts.URL + "/api/mcp"

	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	if resp, err := http.Post(url, "application/json", strings.NewReader(init)); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %v %v", resp, err)
	}

	var mu sync.Mutex
	var progress []float64
	var asked []string
	logs := make(chan any, 8)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "embed-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, r.Params.Progress)
			mu.Unlock()
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, r.Params.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		},
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) { logs <- r.Params.Data },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer("admin-token")}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	p := &mcp.CallToolParams{Name: "rebuild_report"}
	p.SetProgressToken("report")
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		t.Fatalf("rebuild_report: %v %v", res, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(progress)
		mu.Unlock()
		if n >= 4 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	mu.Lock()
	if len(progress) != 4 || progress[3] != 4 {
		t.Fatalf("progress: %v", progress)
	}
	mu.Unlock()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "query_class", Arguments: map[string]any{"class_name": "Ticket", "limit": 1}})
	if err != nil || res.IsError {
		t.Fatal(res, err)
	}
	var q struct{ Results []map[string]any }
	json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &q)
	id := q.Results[0]["objectId"].(string)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_object", Arguments: map[string]any{"class_name": "Ticket", "object_id": id}}); err != nil || res.IsError {
		t.Fatalf("delete_object: %v %v", res, err)
	}
	if len(asked) != 1 {
		t.Fatalf("approval requests: %v", asked)
	}

	// Notify through the application's own route (retried until the
	// client's listening stream is open).
	got := ""
	for deadline := time.Now().Add(5 * time.Second); got == "" && time.Now().Before(deadline); {
		resp, err := http.Post(ts.URL+"/api/notify?session="+cs.ID()+"&text=hello", "text/plain", nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("notify: %v %v", resp, err)
		}
		select {
		case d := <-logs:
			got, _ = d.(string)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if got != "hello" {
		t.Fatalf("notification: %q", got)
	}
	if resp, _ := http.Post(ts.URL+"/api/notify?session=nope&text=x", "text/plain", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown session: %d", resp.StatusCode)
	}
}
