package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: it decodes what the exporter
// sends, as a collector would.
type collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	raw   []byte // every request body, to look for leaked values
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltrace.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		c.raw = append(c.raw, body...)
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) env() []string {
	return []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + c.srv.URL, "OTEL_SERVICE_NAME=parsemcp-test"}
}

func (c *collector) snapshot() ([]*tracepb.Span, []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...), append([]byte(nil), c.raw...)
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			if v := a.Value.GetStringValue(); v != "" {
				return v
			}
			if a.Value.GetValue() != nil {
				b, _ := json.Marshal(a.Value.GetValue())
				return string(b)
			}
		}
	}
	return ""
}

// byName finds a span by name, below the ancestors given.
func byName(spans []*tracepb.Span, name string, ancestors ...*tracepb.Span) *tracepb.Span {
	if slices.Contains(ancestors, nil) {
		return nil
	}
	for _, s := range spans {
		if s.Name == name && !slices.ContainsFunc(ancestors, func(a *tracepb.Span) bool { return !isBelow(spans, s, a) }) {
			return s
		}
	}
	return nil
}

// isBelow reports whether s descends from ancestor.
func isBelow(spans []*tracepb.Span, s, ancestor *tracepb.Span) bool {
	byID := map[string]*tracepb.Span{}
	for _, x := range spans {
		byID[string(x.SpanId)] = x
	}
	for p := byID[string(s.ParentSpanId)]; p != nil; p = byID[string(p.ParentSpanId)] {
		if string(p.SpanId) == string(ancestor.SpanId) {
			return true
		}
	}
	return false
}

// A traced HTTP request continues the client's trace: the MCP request's
// span, under it the guard chain, the tool and each database query (its
// statement's shape); the audit event and the log lines carry the trace
// id; no argument value or row value is in any span.
func TestTracesOverOTLP(t *testing.T) {
	col := newCollector(t)
	db := fixtureDB(t)
	const needle = "needle-TRACE-9c1e"
	s := startServe(t, append(col.env(), "PARSEMCP_LOG_FORMAT=json"), "--store", "sqlite:"+db, "--audit", "stderr", "--as-user", "uBob000002")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	hc := &http.Client{Transport: headersTransport{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"}}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": needle}})
	q, _ := callTool(t, cs, "query_class", map[string]any{"class_name": "Project", "order": "name"})
	row := q["results"].([]any)[0].(map[string]any)["name"].(string) // a value the spans must not hold
	cs.Close()
	s.cmd.Process.Signal(os.Interrupt) // shutdown flushes the spans
	s.cmd.Wait()

	spans, raw := col.snapshot()
	call := byName(spans, "tools/call query_class")
	if call == nil {
		t.Fatalf("no tools/call span among %d spans", len(spans))
	}
	if hex.EncodeToString(call.TraceId) != traceID {
		t.Errorf("the request's span is in trace %x, not the client's %s", call.TraceId, traceID)
	}
	guards := byName(spans, "guard chain", call)
	tool := byName(spans, "tool query_class", guards)
	query := byName(spans, "db.query", tool)
	if guards == nil || tool == nil || query == nil {
		t.Fatalf("the span tree is not request > guard chain > tool > db.query: guard chain %v, tool %v, db.query %v", guards != nil, tool != nil, query != nil)
	}
	if attr(guards, "gen_ai.tool.name") != "query_class" || attr(guards, "parsemcp.class") == "" || attr(guards, "parsemcp.result.bytes") == "" {
		t.Errorf("guard chain attributes: %v", guards.Attributes)
	}
	if !strings.Contains(attr(query, "db.query.text"), "SELECT") {
		t.Errorf("db.query.text = %q", attr(query, "db.query.text"))
	}
	for _, v := range []string{needle, row} {
		if strings.Contains(string(raw), v) {
			t.Errorf("a value reached the spans: %q", v)
		}
	}
	// The audit events and the request's log lines carry the trace id.
	var audits int
	for _, line := range strings.Split(s.stderr.String(), "\n") {
		if strings.Contains(line, `"msg":"tool_call"`) {
			audits++
			if !strings.Contains(line, `"trace_id":"`+traceID+`"`) {
				t.Errorf("audit event without the trace id: %s", line)
			}
		}
	}
	if audits != 2 {
		t.Errorf("%d audit events, want 2", audits)
	}
}

// Over stdio every request starts a trace of its own.
func TestTracesOverStdio(t *testing.T) {
	col := newCollector(t)
	db := fixtureDB(t)
	cmd := exec.Command(binary, "stdio", "--store", "sqlite:"+db)
	cmd.Env = append(os.Environ(), col.env()...)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stdio-trace", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 10 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	callTool(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
	cs.Close() // stdin closes: the server flushes and exits
	spans, _ := col.snapshot()
	call := byName(spans, "tools/call count_objects")
	if call == nil {
		t.Fatalf("no tools/call span among %d spans", len(spans))
	}
	if len(call.ParentSpanId) != 0 {
		t.Errorf("the stdio request's span has a parent")
	}
	if q := byName(spans, "db.query"); q == nil || !isBelow(spans, q, call) {
		t.Errorf("no db.query span under the call")
	}
}
