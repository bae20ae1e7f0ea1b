package mcpserver_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

func explainServer(t *testing.T, cfg tools.Config) *mcpserver.Server {
	return explainServerOn(t, fixtureStore(t), cfg)
}

func explainServerOn(t *testing.T, st store.Store, cfg tools.Config) *mcpserver.Server {
	srv, err := mcpserver.New(mcpserver.Options{Store: st, ToolConfig: &cfg,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func TestExplainQuery(t *testing.T) {
	cs := connect(t, explainServer(t, tools.Config{FullScanThreshold: 100, ExposeExplain: true}), "")
	out := ok(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open", "priority": map[string]any{"$gte": 2}}, "order": "-createdAt"})
	if out["full_scan"] != true {
		t.Fatalf("unindexed where should scan: %v", out)
	}
	want := []any{map[string]any{"status": 1.0}, map[string]any{"priority": 1.0}, map[string]any{"createdAt": -1.0}}
	if d := cmp.Diff(want, out["suggested_index"]); d != "" {
		t.Fatalf("suggested index (-want +got):\n%s", d)
	}
	if plan, _ := out["plan"].([]any); len(plan) == 0 || !strings.Contains(plan[0].(string), "Ticket") {
		t.Fatalf("plan: %v", out["plan"])
	}
	out = ok(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"objectId": "t000000001"}})
	if out["full_scan"] != false || len(out["indexes_used"].([]any)) == 0 {
		t.Fatalf("objectId lookup should use the primary key: %v", out)
	}
	out = ok(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"project": "pApollo001"}})
	if idx := out["indexes_used"].([]any); out["full_scan"] != false || !slices.ContainsFunc(idx, func(v any) bool { return strings.Contains(v.(string), "project") }) {
		t.Fatalf("pointer fields are indexed: %v", out)
	}
	fails(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, "invalid_query")
	fails(t, cs, "explain_query", map[string]any{"class_name": "Nope"}, "access_denied")
}

func TestExplainRefusesLargeFullScan(t *testing.T) {
	cs := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3}), "")
	out := fails(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "Fuel leak"}}, tools.CodeSecurityBlocked)
	d := out["details"].(map[string]any)
	if d["row_count"] != 5.0 || d["threshold"] != 3.0 || !strings.Contains(out["error"].(string), "an index on title") {
		t.Fatalf("refusal: %v", out)
	}
	// Below the threshold, and indexed queries, pass; plans stay hidden.
	out = ok(t, cs, "explain_query", map[string]any{"class_name": "Project", "where": map[string]any{"budget": 1}})
	if _, shown := out["plan"]; shown || out["full_scan"] != true {
		t.Fatalf("small class: %v", out)
	}
	ok(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"objectId": "t000000001"}})
}

// The full-scan refusal on the query tools themselves: opt-in, the same
// rule as explain_query, with a per-class allowance.
func TestQueryToolsRefuseLargeFullScans(t *testing.T) {
	where := map[string]any{"title": "Fuel leak"}
	off := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3}), "")
	ok(t, off, "query_class", map[string]any{"class_name": "Ticket", "where": where}) // not asked for: runs

	cs := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3, RefuseFullScans: true, FullScanAllowed: []string{"Comment"}}), "")
	for _, tool := range []string{"query_class", "count_objects", "export_data"} {
		out := fails(t, cs, tool, map[string]any{"class_name": "Ticket", "where": where}, tools.CodeSecurityBlocked)
		if d := out["details"].(map[string]any); d["row_count"] != 5.0 || !strings.Contains(out["error"].(string), "an index on title") {
			t.Fatalf("%s refusal: %v", tool, out)
		}
	}
	// An indexed lookup runs; so does a scan of a small class.
	ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"objectId": "t000000001"}})
	ok(t, cs, "query_class", map[string]any{"class_name": "Project", "where": map[string]any{"budget": 1}})
	// An allowed class scans whatever its size.
	allowed := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3, RefuseFullScans: true, FullScanAllowed: []string{"Ticket"}}), "")
	ok(t, allowed, "query_class", map[string]any{"class_name": "Ticket", "where": where})
}

// The same refusal on PostgreSQL, whose planner decides what a full scan
// is: a class of 5,000 analyzed rows with an index on n.
func TestQueryToolsRefuseLargeFullScansPostgres(t *testing.T) {
	st := pgFixture(t)
	pgtest.Things(t, st, 5000)
	where := map[string]any{"name": "thing 7"}
	off := connect(t, explainServerOn(t, st, tools.Config{FullScanThreshold: 1000}), "")
	ok(t, off, "query_class", map[string]any{"class_name": "Thing", "where": where}) // not asked for: runs

	cs := connect(t, explainServerOn(t, st, tools.Config{FullScanThreshold: 1000, RefuseFullScans: true, FullScanAllowed: []string{"Ticket"}}), "")
	for _, tool := range []string{"query_class", "count_objects", "export_data"} {
		out := fails(t, cs, tool, map[string]any{"class_name": "Thing", "where": where}, tools.CodeSecurityBlocked)
		if d := out["details"].(map[string]any); d["row_count"] != 5000.0 || !strings.Contains(out["error"].(string), "an index on name") {
			t.Fatalf("%s refusal: %v", tool, out)
		}
	}
	// An indexed lookup runs; so does a scan of a small class.
	if out := ok(t, cs, "query_class", map[string]any{"class_name": "Thing", "where": map[string]any{"n": 42}}); out["result_count"] != 1.0 {
		t.Fatalf("indexed lookup: %v", out)
	}
	ok(t, cs, "count_objects", map[string]any{"class_name": "Project", "where": map[string]any{"budget": 1}})
	// An allowed class scans whatever its size.
	allowed := connect(t, explainServerOn(t, st, tools.Config{FullScanThreshold: 1000, RefuseFullScans: true, FullScanAllowed: []string{"Thing"}}), "")
	ok(t, allowed, "export_data", map[string]any{"class_name": "Thing", "where": where})
}

// Plans and index names are shown only when the operator exposes them.
func TestExplainHiddenByDefault(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) { explainHiddenByDefault(t, b.store(t)) })
	}
}

func explainHiddenByDefault(t *testing.T, st store.Store) {
	cs := connect(t, explainServerOn(t, st, tools.Config{}), "")
	out := ok(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"project": "pApollo001"}})
	if _, shown := out["plan"]; shown {
		t.Fatalf("plan shown: %v", out)
	}
	if _, shown := out["indexes_used"]; shown {
		t.Fatalf("index names shown: %v", out)
	}
	if s := ok(t, cs, "get_schema", map[string]any{"class_name": "Ticket"}); s["indexes"] != nil {
		t.Fatalf("get_schema shows indexes: %v", s["indexes"])
	}
	exposed := connect(t, explainServerOn(t, st, tools.Config{ExposeExplain: true}), "")
	if s := ok(t, exposed, "get_schema", map[string]any{"class_name": "Project"}); fmt.Sprint(s["indexes"]) != "[map[keys:map[objectId:1] name:_id_] map[keys:map[name:1] name:name_1]]" {
		t.Fatalf("get_schema with ExposeExplain: %v", s["indexes"])
	}
}
