package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/store"
)

func jsonOf(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestAggregateTools(t *testing.T) {
	st := fixtureStore(t)
	cs := connect(t, newServer(t, st, agent.Readonly, master), "")
	bobCS := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), "")

	out := ok(t, cs, "group_by", map[string]any{"class_name": "Ticket", "field": "status"})
	if d := cmp.Diff(jsonOf(t, `[{"key":"open","value":3},{"key":"closed","value":1},{"key":"in_progress","value":1}]`), out["groups"]); d != "" {
		t.Fatalf("group_by status (-want +got):\n%s", d)
	}
	out = ok(t, bobCS, "group_by", map[string]any{"class_name": "Ticket", "field": "status"})
	if d := cmp.Diff(jsonOf(t, `[{"key":"open","value":2},{"key":"closed","value":1},{"key":"in_progress","value":1}]`), out["groups"]); d != "" {
		t.Fatalf("bob's group_by status: the ticket with an empty ACL must not count (-want +got):\n%s", d)
	}
	out = ok(t, cs, "group_by", map[string]any{"class_name": "Ticket", "field": "status", "operation": "sum", "value_field": "priority", "sort": "key_asc", "limit": 2})
	if d := cmp.Diff(jsonOf(t, `[{"key":"closed","value":3},{"key":"in_progress","value":1}]`), out["groups"]); d != "" || out["truncated"] != true {
		t.Fatalf("group_by sum, key_asc, limit 2 (-want +got):\n%s %v", d, out)
	}
	out = ok(t, cs, "group_by", map[string]any{"class_name": "Ticket", "field": "project", "where": map[string]any{"project": map[string]any{"$exists": true}}})
	if d := cmp.Diff(jsonOf(t, `[{"key":"pApollo001","value":2},{"key":"pBorealis2","value":1},{"key":"pComet0003","value":1}]`), out["groups"]); d != "" || out["pointer_class"] != "Project" {
		t.Fatalf("group_by pointer (-want +got):\n%s %v", d, out)
	}
	out = ok(t, cs, "group_by", map[string]any{"class_name": "Project", "field": "tags", "flatten_arrays": true})
	if d := cmp.Diff(jsonOf(t, `[{"key":"space","value":2},{"key":"arctic","value":1},{"key":"nasa","value":1}]`), out["groups"]); d != "" {
		t.Fatalf("group_by array field by element (-want +got):\n%s", d)
	}
	out = ok(t, cs, "group_by", map[string]any{"class_name": "Project", "field": "tags"})
	if d := cmp.Diff(jsonOf(t, `[{"key":["space","nasa"],"value":1},{"key":["arctic"],"value":1},{"key":["space"],"value":1}]`), out["groups"]); d != "" {
		t.Fatalf("group_by array field whole (-want +got):\n%s", d)
	}
	fails(t, cs, "group_by", map[string]any{"class_name": "Project", "field": "tags", "sort": "key_asc"}, "invalid_argument")
	dry := ok(t, cs, "group_by", map[string]any{"class_name": "Ticket", "field": "status", "operation": "max", "value_field": "priority", "dry_run": true})
	if dry["dry_run"] != true || !strings.Contains(mustJSON(t, dry["pipeline"]), `"$max":"$priority"`) {
		t.Fatalf("dry run: %v", dry)
	}

	out = ok(t, cs, "distinct", map[string]any{"class_name": "Ticket", "field": "status"})
	if d := cmp.Diff(jsonOf(t, `["closed","in_progress","open"]`), out["values"]); d != "" {
		t.Fatalf("distinct (-want +got):\n%s", d)
	}
	out = ok(t, cs, "distinct", map[string]any{"class_name": "Project", "field": "tags", "sort": "desc"})
	if d := cmp.Diff(jsonOf(t, `["space","nasa","arctic"]`), out["values"]); d != "" {
		t.Fatalf("distinct array desc (-want +got):\n%s", d)
	}

	out = ok(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "month"})
	if d := cmp.Diff(jsonOf(t, `[{"key":"2025-05","value":5}]`), out["groups"]); d != "" {
		t.Fatalf("group_by_date month (-want +got):\n%s", d)
	}
	out = ok(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day", "sort": "key_desc", "limit": 2})
	if d := cmp.Diff(jsonOf(t, `[{"key":"2025-05-05","value":1},{"key":"2025-05-04","value":1}]`), out["groups"]); d != "" {
		t.Fatalf("group_by_date day (-want +got):\n%s", d)
	}
	// Midnight UTC is the evening before in New York.
	out = ok(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day", "timezone": "America/New_York", "limit": 2})
	if d := cmp.Diff(jsonOf(t, `[{"key":"2025-04-30","value":1},{"key":"2025-05-01","value":1}]`), out["groups"]); d != "" || out["truncated"] != true {
		t.Fatalf("group_by_date in New York (-want +got):\n%s", d)
	}
	out = ok(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "hour", "timezone": "+05:30", "limit": 1})
	if d := cmp.Diff(jsonOf(t, `[{"key":"2025-05-01 05:00","value":1}]`), out["groups"]); d != "" {
		t.Fatalf("group_by_date hour at +05:30 (-want +got):\n%s", d)
	}
	out = ok(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "minute", "limit": 1})
	if d := cmp.Diff(jsonOf(t, `[{"key":"2025-05-01 00:00","value":1}]`), out["groups"]); d != "" {
		t.Fatalf("group_by_date minute (-want +got):\n%s", d)
	}
	out = ok(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "second", "timezone": "+05:30", "limit": 1, "skip": 1})
	if d := cmp.Diff(jsonOf(t, `[{"key":"2025-05-02 05:30:00","value":1}]`), out["groups"]); d != "" {
		t.Fatalf("group_by_date second at +05:30, second page (-want +got):\n%s", d)
	}
	fails(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day", "timezone": "Nowhere/Land"}, "invalid_argument")
	fails(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "title", "interval": "day"}, "invalid_argument")
	fails(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "fortnight"}, "invalid_argument")
	out = ok(t, cs, "group_by_date", map[string]any{"class_name": "Project", "field": "createdAt", "interval": "quarter", "operation": "avg", "value_field": "budget"})
	if d := cmp.Diff(jsonOf(t, `[{"key":"2025-Q1","value":625},{"key":"2025-Q2","value":5000}]`), out["groups"]); d != "" {
		t.Fatalf("group_by_date quarter avg (-want +got):\n%s", d)
	}
	out = ok(t, cs, "group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "week"})
	if d := cmp.Diff(jsonOf(t, `[{"key":"2025-W18","value":4},{"key":"2025-W19","value":1}]`), out["groups"]); d != "" {
		t.Fatalf("group_by_date week (-want +got):\n%s", d)
	}

	out = ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": jsonOf(t, `[{"$match":{"status":"open"}},{"$group":{"_id":"$priority","n":{"$sum":1}}},{"$sort":{"objectId":-1}}]`)})
	if d := cmp.Diff(jsonOf(t, `[{"objectId":5,"n":1},{"objectId":2,"n":1},{"objectId":1,"n":1}]`), out["results"]); d != "" {
		t.Fatalf("aggregate (-want +got):\n%s", d)
	}
	if out["pipeline_stages"] != 4.0 || out["auto_limited"] != nil {
		t.Fatalf("auto $limit is added but not reported below the cap: %v", out)
	}
	out = ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$count":"total"}]`})
	if d := cmp.Diff(jsonOf(t, `[{"total":5}]`), out["results"]); d != "" || out["pipeline_stages"] != 1.0 {
		t.Fatalf("$count (-want +got):\n%s %v", d, out)
	}
	raw, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "aggregate", Arguments: map[string]any{"class_name": "Ticket", "pipeline": `[{"$sort":{"status":1,"priority":-1}}]`, "dry_run": true}})
	if err != nil || raw.IsError {
		t.Fatal(err, raw)
	}
	if text := raw.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, `"pipeline":[{"$sort":{"status":1,"priority":-1}},{"$limit":200}]`) {
		t.Fatalf("dry run keeps the caller's key order and shows the auto limit: %s", text)
	}

	// Bad input and governance.
	for _, tc := range []struct {
		cs   string
		args map[string]any
		code string
	}{
		{"master", map[string]any{"class_name": "Ticket", "pipeline": `[{"$facet":{}}]`}, "invalid_query"},
		{"master", map[string]any{"class_name": "Ticket", "pipeline": `{"$match":{}}`}, "invalid_argument"},
		{"master", map[string]any{"class_name": "Ticket", "pipeline": `[{"$group":{"_id":"$nope"}}]`}, "access_denied"},
		{"master", map[string]any{"class_name": "Ticket", "field": "status", "operation": "median"}, "invalid_argument"},
		{"bob", map[string]any{"class_name": "Ticket", "pipeline": `[{"$lookup":{"from":"Payroll","localField":"title","foreignField":"_id","as":"p"}}]`}, "permission_denied"},
		{"bob", map[string]any{"class_name": "Ticket", "pipeline": `[{"$lookup":{"from":"_Session","localField":"title","foreignField":"_id","as":"p"}}]`}, "invalid_query"},
		{"bob", map[string]any{"class_name": "Project", "pipeline": `[{"$group":{"_id":"$owner.email"}}]`}, "invalid_query"},
		{"bob", map[string]any{"class_name": "_User", "pipeline": `[{"$group":{"_id":"$email"}}]`}, "access_denied"},
		{"bob", map[string]any{"class_name": "Payroll", "field": "amount"}, "permission_denied"},
	} {
		c := cs
		if tc.cs == "bob" {
			c = bobCS
		}
		tool := "aggregate"
		if _, ok := tc.args["field"]; ok {
			tool = "group_by"
		}
		fails(t, c, tool, tc.args, tc.code)
	}
	// A sub-query inside $match sees only the projects bob may read.
	out = ok(t, bobCS, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$match":{"project":{"$inQuery":{"className":"Project"}}}},{"$count":"n"}]`})
	if d := cmp.Diff(jsonOf(t, `[{"n":3}]`), out["results"]); d != "" {
		t.Fatalf("$inQuery in $match under bob's ACL (-want +got):\n%s", d)
	}
	// A $lookup returns only what the agent may read of the other class:
	// bob cannot read Comet, and never sees other users' emails.
	out = ok(t, bobCS, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$lookup":{"from":"Project","localField":"project","foreignField":"_id","as":"p"}},{"$project":{"p":1}},{"$sort":{"objectId":1}}]`})
	res := out["results"].([]any)
	if len(res) != 4 || len(res[3].(map[string]any)["p"].([]any)) != 0 || len(res[0].(map[string]any)["p"].([]any)) != 1 {
		t.Fatalf("lookup under bob's ACL: %s", mustJSON(t, res))
	}
	out = ok(t, bobCS, "aggregate", map[string]any{"class_name": "Project", "pipeline": `[{"$lookup":{"from":"_User","localField":"owner","foreignField":"_id","as":"o"}}]`})
	if s := mustJSON(t, out["results"]); strings.Contains(s, "example.com") || !strings.Contains(s, `"username":"alice"`) {
		t.Fatalf("lookup leaks protected fields or lost the user: %s", s)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A group tool's dry run is the pipeline it runs: pasted into aggregate
// as written (its $sort keys in their order), it gives the same groups.
func TestGroupDryRunIsWhatRuns(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) { groupDryRunIsWhatRuns(t, b.store(t)) })
	}
}

func groupDryRunIsWhatRuns(t *testing.T, st store.Store) {
	cs := connect(t, newServer(t, st, agent.Readonly, master), "")
	for _, args := range []map[string]any{
		{"class_name": "Ticket", "field": "status"},
		{"class_name": "Ticket", "field": "status", "sort": "value_asc", "limit": 2},
		{"class_name": "Ticket", "field": "priority", "operation": "count", "where": map[string]any{"priority": map[string]any{"$gte": 1}}},
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "group_by", Arguments: withDry(args)})
		if err != nil || res.IsError {
			t.Fatalf("dry run: %v %v", err, res)
		}
		var dry struct{ Pipeline json.RawMessage }
		if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &dry); err != nil {
			t.Fatal(err)
		}
		ran := ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": string(dry.Pipeline)})
		var fromAggregate []any
		for _, r := range ran["results"].([]any) {
			m := r.(map[string]any)
			fromAggregate = append(fromAggregate, map[string]any{"key": m["objectId"], "value": m["value"]})
		}
		groups := ok(t, cs, "group_by", args)["groups"].([]any)
		// The pipeline reads one group more than the limit (to know whether more follow).
		if limit, _ := args["limit"].(int); limit > 0 && len(fromAggregate) > limit {
			fromAggregate = fromAggregate[:limit]
		}
		if d := cmp.Diff(groups, fromAggregate); d != "" {
			t.Fatalf("%v: group_by vs its dry-run pipeline (-group_by +aggregate):\n%s\npipeline %s", args, d, dry.Pipeline)
		}
	}
}

func withDry(args map[string]any) map[string]any {
	out := map[string]any{"dry_run": true}
	for k, v := range args {
		out[k] = v
	}
	return out
}

// aggregate gives pointer columns as Parse Pointers, their classes in
// pointer_classes; compact_pointers false gives Parse's storage form
// (_p_<field>: "<Class>$<objectId>") instead. A $group key on a pointer
// is its bare objectId either way, as Parse Server gives it; its class is
// in pointer_classes.
func TestAggregateCompactPointers(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	project := []any{
		map[string]any{"$match": map[string]any{"objectId": "t000000001"}},
		map[string]any{"$project": map[string]any{"project": 1, "title": 1}},
	}
	out := ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": project})
	if d := cmp.Diff(jsonOf(t, `[{"objectId":"t000000001","project":{"__type":"Pointer","className":"Project","objectId":"pApollo001"},"title":"Fuel leak"}]`), out["results"]); d != "" {
		t.Fatalf("pointer column (-want +got):\n%s", d)
	}
	if d := cmp.Diff(jsonOf(t, `{"project":"Project"}`), out["pointer_classes"]); d != "" {
		t.Fatalf("pointer_classes (-want +got):\n%s", d)
	}
	out = ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": project, "compact_pointers": false})
	if d := cmp.Diff(jsonOf(t, `[{"objectId":"t000000001","_p_project":"Project$pApollo001","title":"Fuel leak"}]`), out["results"]); d != "" {
		t.Fatalf("storage-form pointer column (-want +got):\n%s", d)
	}
	if _, has := out["pointer_classes"]; has {
		t.Fatalf("pointer_classes with compact_pointers false: %v", out)
	}
	next, _ := out["next_call"].(map[string]any)
	if next != nil {
		if args, _ := next["arguments"].(map[string]any); args["compact_pointers"] != false {
			t.Fatalf("next_call loses compact_pointers: %v", next)
		}
	}
	group := []any{
		map[string]any{"$match": map[string]any{"project": map[string]any{"$exists": true}}},
		map[string]any{"$group": map[string]any{"_id": "$project", "n": map[string]any{"$sum": 1}}},
		map[string]any{"$sort": map[string]any{"_id": 1}},
	}
	for _, compact := range []bool{true, false} {
		out = ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": group, "compact_pointers": compact})
		if d := cmp.Diff(jsonOf(t, `[{"objectId":"pApollo001","n":2},{"objectId":"pBorealis2","n":1},{"objectId":"pComet0003","n":1}]`), out["results"]); d != "" {
			t.Fatalf("group on a pointer, compact_pointers %v (-want +got):\n%s", compact, d)
		}
		// The keys are Project objectIds, and pointer_classes says so
		// (with compact pointers, which pointer_classes belongs to).
		if got := out["pointer_classes"]; compact && !cmp.Equal(got, map[string]any{"objectId": "Project"}) || !compact && got != nil {
			t.Fatalf("pointer_classes of a group on a pointer, compact_pointers %v: %v", compact, got)
		}
	}
	// The key keeps its meaning through later stages, and so does a
	// pointer taken by an accumulator; a dry run says it too.
	renamed := []any{
		map[string]any{"$group": map[string]any{"_id": "$project", "first": map[string]any{"$first": "$project"}, "n": map[string]any{"$sum": 1}}},
		map[string]any{"$project": map[string]any{"p": "$_id", "first": 1, "n": 1}},
	}
	for _, dry := range []bool{false, true} {
		out = ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": renamed, "dry_run": dry})
		if d := cmp.Diff(map[string]any{"objectId": "Project", "p": "Project", "first": "Project"}, out["pointer_classes"]); d != "" {
			t.Fatalf("pointer_classes after $project, dry_run %v (-want +got):\n%s", dry, d)
		}
	}
	fails(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": group, "compact_pointers": "no"}, "invalid_argument")
}

// group_by of an Array field without flatten_arrays groups by the whole
// array on every SQL backend alike, in the same order (groups of equal
// value by their first row).
func TestGroupByWholeArrayOnEveryBackend(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			cs := connect(t, newServer(t, b.store(t), agent.Readonly, master), "")
			out := ok(t, cs, "group_by", map[string]any{"class_name": "Project", "field": "tags", "operation": "sum", "value_field": "budget", "sort": "value_asc"})
			if d := cmp.Diff(jsonOf(t, `[{"key":["arctic"],"value":250},{"key":["space","nasa"],"value":1000},{"key":["space"],"value":5000}]`), out["groups"]); d != "" {
				t.Fatalf("(-want +got):\n%s", d)
			}
			out = ok(t, cs, "group_by", map[string]any{"class_name": "Project", "field": "tags", "limit": 2})
			if d := cmp.Diff(jsonOf(t, `[{"key":["space","nasa"],"value":1},{"key":["arctic"],"value":1}]`), out["groups"]); d != "" || out["next_call"] == nil {
				t.Fatalf("page 1 (-want +got):\n%s %v", d, out)
			}
		})
	}
}
