package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// Whether the database would scan the class, the rows a scan reads, and
// the index that would serve it: equality fields, then ranges, then the
// sort keys.
func TestExplainQuery(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open", "priority": map[string]any{"$gte": 2}}, "order": "-createdAt"})
	want := map[string]any{"class_name": "Ticket", "full_scan": true, "row_count": float64(5),
		"suggested_index": []any{map[string]any{"status": float64(1)}, map[string]any{"priority": float64(1)}, map[string]any{"createdAt": float64(-1)}}}
	if d := cmp.Diff(want, out); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	out = e.ok("explain_query", map[string]any{"class_name": "Project", "where": map[string]any{"name": "Apollo"}})
	if d := cmp.Diff(map[string]any{"class_name": "Project", "full_scan": false}, out); d != "" {
		t.Fatalf("an indexed field (-want +got):\n%s", d)
	}
}

// The plan's text and the indexes it uses only when the operator exposes
// them.
func TestExplainQueryExposed(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.config.ExposeExplain = true
	out := e.ok("explain_query", map[string]any{"class_name": "Project", "where": map[string]any{"name": "Apollo"}})
	if plan, _ := out["plan"].([]any); len(plan) == 0 {
		t.Fatalf("no plan: %v", out)
	}
	if !cmp.Equal(out["indexes_used"], []any{"Project:name_1"}) {
		t.Fatalf("indexes_used: %v", out["indexes_used"])
	}
}

// explain_query answers with the plan unless the operator refuses full
// scans: then a full scan of a class over the threshold is refused as
// query_class refuses it, unless the class is allowed one (by the flag
// or by the policy).
func TestExplainQueryThreshold(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.config.FullScanThreshold = 2
	scan := map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "x"}}
	out := e.ok("explain_query", scan) // refusal off: the plan, never a refusal
	want := map[string]any{"class_name": "Ticket", "full_scan": true, "row_count": float64(5), "suggested_index": []any{map[string]any{"title": float64(1)}}}
	if d := cmp.Diff(want, out); d != "" {
		t.Fatalf("refusal off (-want +got):\n%s", d)
	}
	on := e.refusingScans(2)
	err := on.refused("explain_query", scan, scanRefused, ticketScanRefused+"; an index on title would serve it")
	if err.Details["row_count"] != int64(5) || err.Details["threshold"] != int64(2) {
		t.Fatalf("details: %v", err.Details)
	}
	// Exactly the refusal query_class gives.
	if qerr := on.refused("query_class", scan, scanRefused, ticketScanRefused); !cmp.Equal(qerr, err) {
		t.Fatalf("query_class refuses %v, explain_query %v", qerr, err)
	}
	on.ok("explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"objectId": t1}})                // an index serves it
	on.refusingScans(3).ok("explain_query", map[string]any{"class_name": "Project", "where": map[string]any{"budget": 1}}) // 3 rows: not over the threshold
	for name, allowed := range map[string]*env{"flag": func() *env { a := *on; a.config.FullScanAllowed = []string{"Ticket"}; return &a }(), "policy": on.withCatalog(allowScans("Ticket"))} {
		if out := allowed.ok("explain_query", scan); out["full_scan"] != true || out["row_count"] != float64(5) {
			t.Fatalf("allowed by the %s: %v", name, out)
		}
	}
	// No threshold: no count, no refusal.
	off := e.refusingScans(0)
	if out := off.ok("explain_query", scan); out["row_count"] != nil || out["full_scan"] != true {
		t.Fatalf("threshold 0: %v", out)
	}
}

// Bad arguments are refused, and a class the caller may not read is
// refused as a query of it would be.
func TestExplainQueryArguments(t *testing.T) {
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001"))
	e.refused("explain_query", map[string]any{"class_name": "Ticket", "limit": 1001}, tools.CodeInvalidArgument, `argument "limit" must be between 1 and 1000`)
	e.refused("explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, fieldDenied, `"nope" is not a field of Ticket`)
	e.refused("explain_query", map[string]any{"class_name": "Ticket", "skip": 3}, tools.CodeInvalidArgument, `unknown argument "skip"`)
	e.refused("explain_query", map[string]any{"class_name": "Payroll"}, tools.CodePermissionDenied, "class-level permissions of Payroll")
	e.refused("explain_query", map[string]any{"class_name": "_Session"}, classNotFound, `class "_Session" was not found`)
}
