package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/tools"
)

// faceted_search gives the best matches of a text search, how many rows
// match, and per facet field the count of every value over all the
// matches (not only the rows returned), each as the caller may read them.
func TestFacetedSearch(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	args := map[string]any{"class_name": "Ticket", "field": "title", "term": "leak | survey | task | calc", "facets": []string{"status", "priority"}, "limit": 2}
	out := e.ok("faceted_search", args)
	if out["total"] != float64(4) || len(objs(t, out["results"])) != 2 || out["result_count"] != float64(2) {
		t.Fatalf("total and page: %v", out)
	}
	want := map[string]any{
		"status":   []any{suggestion("open", 3), suggestion("in_progress", 1)},
		"priority": []any{suggestion(float64(1), 2), suggestion(float64(2), 1), suggestion(float64(5), 1)},
	}
	if d := cmp.Diff(want, out["facets"]); d != "" {
		t.Fatalf("facets (-want +got):\n%s", d)
	}

	alice := e.as(asUser(agent.Readonly, fixture.Alice))
	out = alice.ok("faceted_search", args)
	want["status"] = []any{suggestion("open", 2), suggestion("in_progress", 1)}
	want["priority"] = []any{suggestion(float64(1), 2), suggestion(float64(2), 1)}
	if d := cmp.Diff(want, out["facets"]); d != "" || out["total"] != float64(3) {
		t.Fatalf("alice: total %v, facets (-want +got):\n%s", out["total"], d)
	}

	e.refused("faceted_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak"}, tools.CodeInvalidArgument, "facets")
	e.refused("faceted_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak", "facets": []string{"due"}}, tools.CodeInvalidArgument, "Date")
	alice.refused("faceted_search", map[string]any{"class_name": "_User", "field": "username", "term": "alice", "facets": []string{"email"}}, fieldDenied, `facets: "email" is not a field of _User`)
}
