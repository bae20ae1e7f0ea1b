package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/policy"
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
	fails(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, "access_denied")
	fails(t, cs, "explain_query", map[string]any{"class_name": "Nope"}, "access_denied")
}

// explain_query answers with the plan while full scans are not refused:
// whether it scans, the rows a scan reads, the index that would serve it.
// With refusal on, a scan of a class over the threshold is refused.
func TestExplainRefusesLargeFullScan(t *testing.T) {
	scan := map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "Fuel leak"}}
	off := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3}), "")
	want := map[string]any{"class_name": "Ticket", "full_scan": true, "row_count": 5.0, "suggested_index": []any{map[string]any{"title": 1.0}}}
	if d := cmp.Diff(want, ok(t, off, "explain_query", scan)); d != "" {
		t.Fatalf("refusal off (-want +got):\n%s", d)
	}

	cs := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3, RefuseFullScans: true}), "")
	out := fails(t, cs, "explain_query", scan, tools.CodeSecurityBlocked)
	d := out["details"].(map[string]any)
	if d["row_count"] != 5.0 || d["threshold"] != 3.0 || !strings.Contains(out["error"].(string), "an index on title") {
		t.Fatalf("refusal: %v", out)
	}
	// Below the threshold, and indexed queries, pass; plans stay hidden.
	out = ok(t, cs, "explain_query", map[string]any{"class_name": "Project", "where": map[string]any{"budget": 1}})
	if _, shown := out["plan"]; shown || out["full_scan"] != true || out["row_count"] != 3.0 {
		t.Fatalf("small class: %v", out)
	}
	ok(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"objectId": "t000000001"}})
}

// scanCalls are the read tools' calls that scan a class when where is
// unindexed (or absent from a pipeline), keyed by tool.
func scanCalls(class, field string, where map[string]any) map[string]map[string]any {
	match, _ := json.Marshal([]any{map[string]any{"$match": where}, map[string]any{"$count": "n"}})
	return map[string]map[string]any{
		"query_class":   {"class_name": class, "where": where},
		"count_objects": {"class_name": class, "where": where},
		"export_data":   {"class_name": class, "where": where},
		"explain_query": {"class_name": class, "where": where},
		"aggregate":     {"class_name": class, "pipeline": string(match)},
		"group_by":      {"class_name": class, "field": field, "where": where},
		"group_by_date": {"class_name": class, "field": "createdAt", "interval": "day", "where": where},
		"distinct":      {"class_name": class, "field": field, "where": where},
	}
}

// The full-scan refusal on every read tool that can scan: opt-in, one
// rule for all (explain_query's), with a per-class allowance by the flag.
func TestQueryToolsRefuseLargeFullScans(t *testing.T) {
	where := map[string]any{"title": "Fuel leak"}
	off := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3}), "")
	for tool, args := range scanCalls("Ticket", "status", where) {
		ok(t, off, tool, args) // not asked for: runs
	}
	ok(t, off, "get_sample_objects", map[string]any{"class_name": "Ticket"})

	cs := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3, RefuseFullScans: true, FullScanAllowed: []string{"Comment"}}), "")
	calls := scanCalls("Ticket", "status", where)
	calls["export_data (pipeline)"] = map[string]any{"class_name": "Ticket", "pipeline": `[{"$project":{"title":1}}]`}
	calls["get_sample_objects"] = map[string]any{"class_name": "Ticket"}
	for tool, args := range calls {
		name, _, _ := strings.Cut(tool, " ")
		out := fails(t, cs, name, args, tools.CodeSecurityBlocked)
		if d := out["details"].(map[string]any); d["kind"] != "full_scan_refused" || d["row_count"] != 5.0 {
			t.Fatalf("%s refusal: %v", tool, out)
		}
	}
	// An indexed lookup runs; so does a scan of a small class.
	for tool, args := range scanCalls("Ticket", "status", map[string]any{"objectId": "t000000001"}) {
		ok(t, cs, tool, args)
	}
	ok(t, cs, "query_class", map[string]any{"class_name": "Project", "where": map[string]any{"budget": 1}})
	// An allowed class scans whatever its size.
	allowed := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3, RefuseFullScans: true, FullScanAllowed: []string{"Ticket"}}), "")
	for tool, args := range calls {
		name, _, _ := strings.Cut(tool, " ")
		ok(t, allowed, name, args)
	}
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
	for tool, args := range scanCalls("Thing", "name", where) {
		out := fails(t, cs, tool, args, tools.CodeSecurityBlocked)
		if d := out["details"].(map[string]any); d["row_count"] != 5000.0 || !strings.Contains(out["error"].(string), "an index on name") {
			t.Fatalf("%s refusal: %v", tool, out)
		}
	}
	fails(t, cs, "aggregate", map[string]any{"class_name": "Thing", "pipeline": `[{"$group":{"_id":"$name"}}]`}, tools.CodeSecurityBlocked)
	// An indexed lookup runs; so does a scan of a small class.
	for tool, args := range scanCalls("Thing", "name", map[string]any{"n": 42}) {
		ok(t, cs, tool, args)
	}
	if out := ok(t, cs, "query_class", map[string]any{"class_name": "Thing", "where": map[string]any{"n": 42}}); out["result_count"] != 1.0 {
		t.Fatalf("indexed lookup: %v", out)
	}
	ok(t, cs, "count_objects", map[string]any{"class_name": "Project", "where": map[string]any{"budget": 1}})
	// An allowed class scans whatever its size.
	allowed := connect(t, explainServerOn(t, st, tools.Config{FullScanThreshold: 1000, RefuseFullScans: true, FullScanAllowed: []string{"Thing"}}), "")
	ok(t, allowed, "export_data", map[string]any{"class_name": "Thing", "where": where})
	ok(t, allowed, "aggregate", map[string]any{"class_name": "Thing", "pipeline": `[{"$group":{"_id":"$name"}}]`})
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

// A class the policy file marks allow_full_scan is spared the refusal,
// as one named by --full-scan-allow is; the flag and the policy add up,
// and every other class is still refused.
func TestFullScanAllowedByPolicy(t *testing.T) {
	st := fixtureStore(t)
	pol, err := policy.Parse([]byte("agents:\n  ops: {identity: master}\nclasses:\n  Ticket: {allow_full_scan: true}\n"), policy.Options{Name: "p.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := tools.Config{FullScanThreshold: 2, RefuseFullScans: true, FullScanAllowed: []string{"Comment"}}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, ToolConfig: &cfg, Agents: func(ctx context.Context, _ mcpserver.RequestInfo) (*agent.Agent, error) {
		return pol.Agent(ctx, "ops", st, nil)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cs := connect(t, srv, "")
	for tool, args := range scanCalls("Ticket", "status", map[string]any{"title": "Fuel leak"}) {
		ok(t, cs, tool, args)
	}
	ok(t, cs, "get_sample_objects", map[string]any{"class_name": "Ticket"})
	for tool, args := range scanCalls("Project", "name", map[string]any{"budget": 1}) {
		fails(t, cs, tool, args, tools.CodeSecurityBlocked)
	}
}
