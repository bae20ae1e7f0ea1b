package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/tools"
)

func explainServer(t *testing.T, cfg tools.Config) *mcpserver.Server {
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), ToolConfig: &cfg,
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
	cs := connect(t, explainServer(t, tools.Config{FullScanThreshold: 100}), "")
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
	fails(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, "invalid_argument")
	fails(t, cs, "explain_query", map[string]any{"class_name": "Nope"}, "not_found")
}

func TestExplainRefusesLargeFullScan(t *testing.T) {
	cs := connect(t, explainServer(t, tools.Config{FullScanThreshold: 3, HidePlans: true}), "")
	out := fails(t, cs, "explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "Fuel leak"}}, tools.CodeFullScan)
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
