package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// Whether the database would scan the class, and the index that would
// serve a scan: equality fields, then ranges, then the sort keys.
func TestExplainQuery(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open", "priority": map[string]any{"$gte": 2}}, "order": "-createdAt"})
	want := map[string]any{"class_name": "Ticket", "full_scan": true,
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

// A full scan of a class over the operator's threshold is refused with
// the row count and the index to add.
func TestExplainQueryThreshold(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.config.FullScanThreshold = 4
	err := e.refused("explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "x"}}, withKind(tools.CodeSecurityBlocked, "full_scan_refused"),
		"the query would scan all 5 rows of Ticket (more than 4); an index on title would serve it")
	if err.Details["row_count"] != int64(5) || err.Details["threshold"] != int64(4) {
		t.Fatalf("details: %v", err.Details)
	}
	e.ok("explain_query", map[string]any{"class_name": "Project", "where": map[string]any{"budget": 1}}) // 3 rows: under the threshold
	e.config.FullScanThreshold = 0
	e.ok("explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "x"}})
}

// Bad arguments are refused, and a class the caller may not read is
// refused as a query of it would be.
func TestExplainQueryArguments(t *testing.T) {
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001"))
	e.refused("explain_query", map[string]any{"class_name": "Ticket", "limit": 1001}, tools.CodeInvalidArgument, `argument "limit" must be between 1 and 1000`)
	e.refused("explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, tools.CodeInvalidQuery, `unknown field "nope"`)
	e.refused("explain_query", map[string]any{"class_name": "Ticket", "skip": 3}, tools.CodeInvalidArgument, `unknown argument "skip"`)
	e.refused("explain_query", map[string]any{"class_name": "Payroll"}, tools.CodePermissionDenied, "class-level permissions of Payroll")
	e.refused("explain_query", map[string]any{"class_name": "_Session"}, classNotFound, `class "_Session" was not found`)
}
