package mcpserver_test

import (
	"time"

	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/ratelimit"
)

func TestMetrics(t *testing.T) {
	srv := limitedServer(t, fixtureStore(t), must(ratelimit.NewLocal(3, time.Hour)), master)
	ts := httptest.NewServer(srv.Mux(mcpserver.HTTPOptions{}))
	defer ts.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "m", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ok(t, cs, "count_objects", countTicket)
	ok(t, cs, "count_objects", countTicket)
	fails(t, cs, "get_schema", map[string]any{"class_name": "Nope"}, "access_denied")
	fails(t, cs, "count_objects", countTicket, "rate_limited")

	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	text := string(body)
	for _, want := range []string{
		`parsemcp_tool_calls_total{outcome="ok",tool="count_objects"} 2`,
		`parsemcp_tool_calls_total{outcome="error",tool="count_objects"} 1`,
		`parsemcp_tool_errors_total{code="access_denied",tool="get_schema"} 1`,
		`parsemcp_tool_errors_total{code="rate_limited",tool="count_objects"} 1`,
		`parsemcp_rate_limited_total{tool="count_objects"} 1`,
		`parsemcp_tool_duration_seconds_count{tool="count_objects"} 3`,
		`parsemcp_active_sessions 1`,
		"\nparsemcp_running_requests 0\n",
		"\nparsemcp_abandoned_requests_total 0\n",
		"\nparsemcp_listening_streams ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// scrape reads srv's metrics in the Prometheus text format.
func scrape(t *testing.T, srv *mcpserver.Server) string {
	t.Helper()
	rec := httptest.NewRecorder()
	srv.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// The listening-streams gauge counts a session's open GET event stream
// while it is open, and not after the client hangs up.
func TestListeningStreamsGauge(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	url := mount(t, mcpserver.HandlerOptions{Server: srv})
	sid := initSession(t, url, "alice-token")
	gauge := func(want string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second) // bounds a hang
		for !strings.Contains(scrape(t, srv), "\nparsemcp_listening_streams "+want+"\n") {
			if time.Now().After(deadline) {
				t.Fatalf("parsemcp_listening_streams never reached %s:\n%s", want, scrape(t, srv))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	gauge("0")
	ctx, hangUp := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	gauge("1")
	hangUp()
	<-done
	gauge("0")
}
