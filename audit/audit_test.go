package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

var sample = audit.Event{
	Event: "tool_call", Time: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), Tool: "query_class",
	ArgKeys: []string{"class_name", "where"}, AgentID: "agent-1", Profile: "people", TenantID: "acme", AuthType: "user", Permission: "readonly",
	CorrelationID: "corr-1", RequestID: "req-1", ClientAddr: "203.0.113.7", TraceID: "trace-1", Success: false, ErrorCode: "permission_denied", DenialKind: "clp",
	DurationMS: 12.5, ResultBytes: 4000,
	SessionID: "sess-1", ConversationID: "conv-1", AgentDepth: 1, ParentAgentID: "agent-0",
	ClassesOnly: []string{"Project", "Ticket"}, ToolsExcept: []string{"export_data"}, Filters: map[string][]string{"Ticket": {"status"}},
}

// The estimate is a quarter token per result byte, priced per million
// when there is a rate; without one there is no cost at all.
func TestEstimate(t *testing.T) {
	e := sample
	e.Estimate(2.5)
	if e.EstInputTokens != 1000 || e.EstCostUSD == nil || *e.EstCostUSD != 0.0025 {
		t.Fatalf("estimate: %d tokens, %v USD; want 1000, 0.0025", e.EstInputTokens, e.EstCostUSD)
	}
	e.Estimate(0)
	if e.EstInputTokens != 1000 || e.EstCostUSD != nil {
		t.Fatalf("estimate without a rate: %d tokens, a cost: %v; want 1000 and no cost", e.EstInputTokens, e.EstCostUSD != nil)
	}
	var buf bytes.Buffer
	audit.NewJSONSink(&buf).Record(context.Background(), e)
	if strings.Contains(buf.String(), "est_cost_usd") || !strings.Contains(buf.String(), `"est_input_tokens":1000`) {
		t.Fatalf("event without a rate: %s", buf.String())
	}
	if b, _ := json.Marshal(e); strings.Contains(string(b), "est_cost_usd") {
		t.Fatalf("event without a rate, as JSON: %s", b)
	}
}

// The JSON sink writes one line per event with the names, never values.
func TestJSONSink(t *testing.T) {
	var buf bytes.Buffer
	e := sample
	e.Estimate(2.5)
	audit.NewJSONSink(&buf).Record(context.Background(), e)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q: %v", buf.String(), err)
	}
	delete(line, "time")
	want := map[string]any{
		"level": "INFO", "msg": "tool_call", "tool": "query_class", "args_keys": []any{"class_name", "where"},
		"agent_id": "agent-1", "agent_profile": "people", "tenant_id": "acme", "auth_type": "user", "permission": "readonly",
		"correlation_id": "corr-1", "request_id": "req-1", "client_addr": "203.0.113.7", "trace_id": "trace-1",
		"success": false, "error_code": "permission_denied", "denial_kind": "clp", "duration_ms": 12.5,
		"result_bytes": float64(4000), "est_input_tokens": float64(1000), "est_cost_usd": 0.0025,
		"session_id": "sess-1", "conversation_id": "conv-1", "agent_depth": 1.0, "parent_agent_id": "agent-0",
		"classes_only": []any{"Project", "Ticket"}, "tools_except": []any{"export_data"}, "filters": map[string]any{"Ticket": []any{"status"}},
	}
	if d := cmp.Diff(want, line); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
}

// The store sink writes each event as an _AgentAudit object only the
// master key may read (empty ACL, class-level permissions admitting
// nobody), with the request, trace and correlation ids that tie it to the
// logs and the trace, and Close flushes what is queued.
func TestStoreSinkWrites(t *testing.T) {
	ctx := context.Background()
	st := open(t)
	sink, err := audit.NewStoreSink(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ok := sample
	ok.Success, ok.ErrorCode, ok.DenialKind, ok.CorrelationID = true, "", "", ""
	sink.Record(ctx, sample)
	sink.Record(ctx, ok)
	sink.Close()

	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: audit.AuditClass, Limit: -1, Order: []query.OrderKey{{Field: "success"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rows))
	}
	for _, r := range rows {
		for _, k := range []string{parse.FieldObjectID, parse.FieldUpdatedAt} {
			delete(r, k)
		}
	}
	common := map[string]any{
		"createdAt": "2026-11-25T12:00:00.000Z", "tool": "query_class", "argsKeys": []any{"class_name", "where"},
		"agentId": "agent-1", "agentProfile": "people", "tenantId": "acme", "requestId": "req-1", "clientAddr": "203.0.113.7", "traceId": "trace-1", "authType": "user", "permission": "readonly", "durationMs": 12.5,
		"resultBytes": float64(4000), "estInputTokens": float64(0), "ACL": map[string]any{},
		"sessionId": "sess-1", "conversationId": "conv-1", "agentDepth": 1.0, "parentAgentId": "agent-0",
		"classesOnly": []any{"Project", "Ticket"}, "toolsExcept": []any{"export_data"}, "filters": map[string]any{"Ticket": []any{"status"}},
	}
	failed := parse.Object{"success": false, "correlationId": "corr-1", "errorCode": "permission_denied", "denialKind": "clp"}
	succeeded := parse.Object{"success": true}
	for k, v := range common {
		failed[k], succeeded[k] = v, v
	}
	if d := cmp.Diff([]parse.Object{failed, succeeded}, rows); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}

	sch, err := st.Schema(ctx, audit.AuditClass)
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []parse.Op{parse.OpGet, parse.OpFind, parse.OpCount, parse.OpCreate, parse.OpUpdate, parse.OpDelete, parse.OpAddField} {
		if p := sch.CLP.Perm(op); p == nil || len(p.Entries) != 0 || p.RequiresAuthentication || len(p.PointerFields) != 0 {
			t.Errorf("%s %s: %+v, want nobody but the master key", audit.AuditClass, op, p)
		}
	}

	// A second sink on the same store reuses the class.
	again, err := audit.NewStoreSink(ctx, st, nil)
	if err != nil {
		t.Fatalf("second sink: %v", err)
	}
	again.Close()
}
