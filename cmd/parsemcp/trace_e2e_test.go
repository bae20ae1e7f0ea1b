package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/sqlite"
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

func intAttr(s *tracepb.Span, key string) int64 {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.GetIntValue()
		}
	}
	return -1
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

// tracedClient connects to endpoint sending headers (a traceparent) with
// every request.
func tracedClient(t *testing.T, endpoint string, headers headersTransport) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "traced", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: headers}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
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
	cs := tracedClient(t, s.url, headersTransport{"traceparent": "00-" + traceID + "-00f067aa0ba902b7-01"})
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

// The _AgentAudit events the store sink writes carry the same ids as the
// log lines: the client's X-Request-Id, the trace of its traceparent and
// the call's correlation id.
func TestAuditStoreCarriesTraceIDs(t *testing.T) {
	// With tracing off no span is made, and the caller's trace id is
	// still the one the audit records.
	for _, tracing := range []bool{true, false} {
		t.Run(fmt.Sprintf("tracing=%v", tracing), func(t *testing.T) {
			env := []string{"PARSEMCP_LOG_FORMAT=json"}
			if tracing {
				env = append(env, newCollector(t).env()...)
			}
			db := fixtureDB(t)
			s := startServe(t, env, "--store", "sqlite:"+db, "--audit", "store", "--as-user", "uBob000002")
			const traceID = "0af7651916cd43dd8448eb211c80319c"
			cs := tracedClient(t, s.url, headersTransport{"traceparent": "00-" + traceID + "-b7ad6b7169203331-01", "X-Request-Id": "lb-audit-7"})
			callTool(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
			cs.Close()
			s.cmd.Process.Signal(os.Interrupt) // shutdown flushes the sink
			s.cmd.Wait()

			ctx := context.Background()
			st, err := sqlite.Open(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: audit.AuditClass, Limit: -1})
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != 1 {
				t.Fatalf("%d audit objects, want 1: %v", len(rows), rows)
			}
			ev := rows[0]
			if ev["tool"] != "count_objects" || ev["traceId"] != traceID || ev["requestId"] != "lb-audit-7" {
				t.Errorf("audit object %v: want tool count_objects, traceId %s, requestId lb-audit-7", ev, traceID)
			}
			if corr, _ := ev["correlationId"].(string); corr == "" {
				t.Errorf("audit object without a correlation id: %v", ev)
			}
		})
	}
}

// A traced write has a span per statement under its transaction's (the
// INSERT and the COMMIT, each with its text and never a value), and the
// change it makes reaches a subscriber in a subscription delivery span
// naming the class.
func TestWriteAndDeliverySpans(t *testing.T) {
	col := newCollector(t)
	db := fixtureDB(t)
	env := append(col.env(), "PARSEMCP_ALLOW_WRITE_TOOLS=true", "PARSEMCP_ALLOW_RAW_CRUD=true")
	s := startServe(t, env, "--store", "sqlite:"+db, "--permission", "write", "--rate-limit", "0")
	const uri = "parse://Ticket/count"
	_, updates := subscribeWatcher(t, s.url, uri)
	const traceID = "5b8efff798038103d269b633813fc60c"
	cs := tracedClient(t, s.url, headersTransport{"traceparent": "00-" + traceID + "-eee19b7ec3c1b174-01"})
	const needle = "needle-WRITE-41d7"
	if out, isErr := callTool(t, cs, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": needle}}); isErr {
		t.Fatalf("create_object: %v", out)
	}
	select {
	case got := <-updates:
		if got != uri {
			t.Fatalf("notification for %s", got)
		}
	case <-time.After(30 * time.Second): // bounds a hang only
		t.Fatalf("no notification\n%s", s.stderr)
	}
	cs.Close()
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()

	spans, raw := col.snapshot()
	call := byName(spans, "tools/call create_object")
	if call == nil {
		t.Fatalf("no tools/call span among %d spans", len(spans))
	}
	write := byName(spans, "db.write", call)
	if write == nil || attr(write, "db.operation.name") != "insert" || attr(write, "db.collection.name") != "Ticket" {
		t.Fatalf("no db.write insert of Ticket under the call: %v", write)
	}
	var insert, commit *tracepb.Span
	for _, sp := range spans {
		if sp.Name != "db.query" || string(sp.ParentSpanId) != string(write.SpanId) {
			continue
		}
		switch text := attr(sp, "db.query.text"); {
		case strings.HasPrefix(text, `INSERT INTO "Ticket"`):
			insert = sp
		case text == "COMMIT":
			commit = sp
		}
	}
	if insert == nil || commit == nil {
		t.Fatalf("the write's statements are not each a span under it: INSERT %v, COMMIT %v", insert != nil, commit != nil)
	}
	if n := intAttr(insert, "db.response.returned_rows"); n != 1 {
		t.Errorf("INSERT rows = %d, want 1", n)
	}
	deliver := byName(spans, "subscription deliver")
	if deliver == nil || attr(deliver, "parsemcp.class") != "Ticket" {
		t.Errorf("no subscription deliver span for Ticket: %v", deliver)
	}
	if strings.Contains(string(raw), needle) {
		t.Errorf("a written value reached the spans")
	}
}

// Against a Parse Server each REST call is a span under the tool's: its
// method and the shape of its path (the class, never an objectId, a query
// string or a body), its status; the trace goes on to Parse Server.
func TestParseRESTSpans(t *testing.T) {
	_, spec, env := parseDemo(t, "100")
	col := newCollector(t)
	s := startServe(t, append(env, col.env()...), "--store", spec, "--as-user", demo.MemberUserID)
	const traceID = "2c1a3d5e7f9b4c6d8e0f1a2b3c4d5e6f"
	cs := tracedClient(t, s.url, headersTransport{"traceparent": "00-" + traceID + "-a1b2c3d4e5f60718-01"})
	const needle = "needle-REST-5e2a"
	callTool(t, cs, "query_class", map[string]any{"class_name": demo.ClassTicket, "where": map[string]any{"title": needle}})
	if out, isErr := callTool(t, cs, "get_object", map[string]any{"class_name": demo.ClassTicket, "object_id": demo.TicketMemberID}); isErr {
		t.Fatalf("get_object: %v", out)
	}
	cs.Close()
	s.cmd.Process.Signal(os.Interrupt)
	s.cmd.Wait()

	spans, raw := col.snapshot()
	for tool, name := range map[string]string{"query_class": "GET /classes/Ticket", "get_object": "GET /classes/Ticket/{objectId}"} {
		call := byName(spans, "tools/call "+tool)
		rest := byName(spans, name, call)
		if call == nil || rest == nil {
			t.Errorf("%s: no %q span under the call (call span %v)", tool, name, call != nil)
			continue
		}
		if hex.EncodeToString(rest.TraceId) != traceID || intAttr(rest, "http.response.status_code") != 200 ||
			attr(rest, "http.request.method") != "GET" || attr(rest, "url.template") != name[len("GET "):] {
			t.Errorf("%s: span %s: %v", tool, name, rest.Attributes)
		}
	}
	for _, v := range []string{needle, demo.TicketMemberID} {
		if strings.Contains(string(raw), v) {
			t.Errorf("a value reached the spans: %q", v)
		}
	}
}
