package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/tools"
)

// statusCounts is a pipeline counting tickets per status, most first.
var statusCounts = []any{
	map[string]any{"$group": map[string]any{"_id": "$status", "n": map[string]any{"$sum": 1}}},
	map[string]any{"$sort": map[string]any{"n": -1, "objectId": 1}},
}

// A pipeline's rows, bounded by a final $limit the tool adds when the
// pipeline has none.
func TestAggregate(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("aggregate", map[string]any{"class_name": "Ticket", "pipeline": statusCounts})
	want := []any{
		map[string]any{"objectId": "open", "n": float64(3)},
		map[string]any{"objectId": "closed", "n": float64(1)},
		map[string]any{"objectId": "in_progress", "n": float64(1)},
	}
	if d := cmp.Diff(want, out["results"]); d != "" {
		t.Fatalf("results (-want +got):\n%s", d)
	}
	if out["result_count"] != float64(3) || out["pipeline_stages"] != float64(3) || out["auto_limited"] != nil {
		t.Fatalf("%v", out)
	}
	// A pipeline sent as a string holding the array is taken.
	out = e.ok("aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$match":{"status":"closed"}},{"$project":{"title":1}}]`})
	if d := cmp.Diff([]any{map[string]any{"objectId": t2, "title": "Paint hull"}}, out["results"]); d != "" {
		t.Fatalf("a pipeline as a string (-want +got):\n%s", d)
	}
}

// dry_run validates and shows the pipeline that would run, the added
// $limit included, without running it.
func TestAggregateDryRun(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("aggregate", map[string]any{"class_name": "Ticket", "dry_run": true, "pipeline": []any{map[string]any{"$match": map[string]any{"status": "open"}}}})
	wantPipeline := []any{map[string]any{"$match": map[string]any{"status": "open"}}, map[string]any{"$limit": float64(tools.AutoLimit)}}
	if d := cmp.Diff(wantPipeline, out["pipeline"]); d != "" {
		t.Fatalf("pipeline (-want +got):\n%s", d)
	}
	if out["dry_run"] != true || out["results"] != nil || !cmp.Equal(out["pointer_classes"], map[string]any{"project": "Project"}) {
		t.Fatalf("%v", out)
	}
	e.refused("aggregate", map[string]any{"class_name": "Ticket", "dry_run": true, "pipeline": []any{map[string]any{"$match": map[string]any{"nope": 1}}}}, fieldDenied, `"nope" is not a field of Ticket`)
	// A pipeline given as text is shown as that text: text after the
	// array is refused, never shown (it would make the result invalid
	// JSON, or with a raw newline break a stdio client's framing).
	for _, text := range []string{`[{"$match":{}}]]`, `[{"$match":{}}] x`, "[{\"$match\":{}}] \"\nx", `[{"$match":{}}]}`, `[{"$match":{}}][]`} {
		for _, dry := range []bool{true, false} {
			e.refused("aggregate", map[string]any{"class_name": "Ticket", "dry_run": dry, "pipeline": text}, tools.CodeInvalidQuery, "text after the pipeline")
		}
	}
}

// A pipeline of the most stages a pipeline may have, without a $limit,
// runs: the $limit the tool adds is not counted against the caller.
func TestAggregateFullPipelineAutoLimited(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	stages := make([]any, query.MaxPipelineStages)
	for i := range stages {
		stages[i] = map[string]any{"$match": map[string]any{"status": "open"}}
	}
	out := e.ok("aggregate", map[string]any{"class_name": "Ticket", "pipeline": stages})
	if out["result_count"] != float64(3) || out["pipeline_stages"] != float64(query.MaxPipelineStages+1) {
		t.Fatalf("%v", out)
	}
}

func TestAggregateArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.refused("aggregate", map[string]any{"class_name": "Ticket"}, tools.CodeInvalidArgument, `argument "pipeline" is required`)
	e.refused("aggregate", map[string]any{"class_name": "Ticket", "pipeline": map[string]any{"$match": map[string]any{}}}, tools.CodeInvalidArgument, `argument "pipeline" must be an array of stage objects`)
	e.refused("aggregate", map[string]any{"class_name": "Ticket", "pipeline": []any{map[string]any{"$out": "Copy"}}}, tools.CodeInvalidQuery, "$out")
	e.refused("aggregate", map[string]any{"class_name": "Ticket", "pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$nope"}}}}, fieldDenied, `"$nope" is not a field of Ticket`)
	// after a $group the rows are the group's: a name they lack is a shape error
	e.refused("aggregate", map[string]any{"class_name": "Ticket", "pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$status"}}, map[string]any{"$match": map[string]any{"title": "x"}}}}, tools.CodeInvalidQuery, `unknown field "title" (the rows here have: objectId)`)
	e.refused("aggregate", map[string]any{"class_name": "Nope", "pipeline": statusCounts}, classNotFound, `class "Nope" was not found`)
}

// A user's pipeline reads the rows its ACLs allow, and a field it may not
// see is unknown to its stages.
func TestAggregateACL(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {AgentFields: []string{"status"}}}}
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001")).withCatalog(cat)
	out := e.ok("aggregate", map[string]any{"class_name": "Ticket", "pipeline": statusCounts})
	if got := objs(t, out["results"])[0]; got["objectId"] != "open" || got["n"] != float64(2) {
		t.Fatalf("alice's open tickets: %v", got)
	}
	e.refused("aggregate", map[string]any{"class_name": "Ticket", "pipeline": []any{map[string]any{"$match": map[string]any{"priority": 5}}}}, fieldDenied, `"priority" is not a field of Ticket`)
	for _, dry := range []bool{false, true} { // a dry run is refused as the run would be
		e.refused("aggregate", map[string]any{"class_name": "Payroll", "dry_run": dry, "pipeline": []any{map[string]any{"$match": map[string]any{}}}}, tools.CodePermissionDenied, "class-level permissions of Payroll")
	}
}

// A result over the response budget continues with the caller's pipeline
// and a $skip past the rows sent: following next_call reads every row
// once.
func TestAggregateResponseBudget(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.budget = 700
	pipeline := []any{map[string]any{"$sort": map[string]any{"objectId": 1}}}
	out := e.ok("aggregate", map[string]any{"class_name": "Ticket", "pipeline": pipeline})
	var all []string
	for page := 0; ; page++ {
		sent := ids(t, out["results"])
		all = append(all, sent...)
		nc, more := out["next_call"].(map[string]any)
		if !more || page > 5 {
			break
		}
		stages := nc["arguments"].(map[string]any)["pipeline"].([]any)
		if last := stages[len(stages)-1].(map[string]any); len(stages) != page+2 || last["$skip"] != float64(len(sent)) {
			t.Fatalf("page %d: next_call's pipeline %v", page, stages)
		}
		out = e.next("aggregate", out)
	}
	if d := cmp.Diff([]string{t1, t2, t3, t4, t5}, all); d != "" {
		t.Fatalf("rows over the pages (-want +got):\n%s", d)
	}
}

// With full scans refused, a pipeline is judged by the rows entering it:
// a find under its leading $match stages. A $match that only looks
// selective, one that is not first, or none at all scans the class; a
// dry run is refused as the run is; the policy's allow_full_scan spares
// the class.
func TestAggregateFullScanGuard(t *testing.T) {
	e := newEnv(t, master(agent.Readonly)).refusingScans(2)
	agg := func(pipeline string) map[string]any {
		return map[string]any{"class_name": "Ticket", "pipeline": pipeline}
	}
	for _, p := range []string{
		`[{"$group":{"_id":"$status","n":{"$sum":1}}}]`,
		`[{"$match":{"title":"Fuel leak"}}]`,
		`[{"$match":{"status":{"$ne":"closed"}}}]`,
		`[{"$match":{"$or":[{"objectId":"t000000001"},{"title":"Fuel leak"}]}}]`,
		`[{"$sort":{"createdAt":-1}},{"$match":{"objectId":"t000000001"}}]`,
		`[{"$project":{"title":1}},{"$match":{"objectId":"t000000001"}}]`,
		`[{"$match":{}},{"$match":{"title":"x"}}]`,
	} {
		e.refused("aggregate", agg(p), scanRefused, ticketScanRefused)
		dry := agg(p)
		dry["dry_run"] = true
		e.refused("aggregate", dry, scanRefused, ticketScanRefused)
	}
	err := e.refused("aggregate", agg(`[{"$match":{"title":"Fuel leak"}},{"$count":"n"}]`), scanRefused, "an index on title would serve it")
	if d := cmp.Diff([]map[string]int{{"title": 1}}, err.Details["suggested_index"]); d != "" {
		t.Fatalf("suggested index (-want +got):\n%s", d)
	}
	// Leading $match stages on an indexed field: the pipeline runs, as
	// does any pipeline on a class under the threshold.
	out := e.ok("aggregate", agg(`[{"$match":{"objectId":"t000000001"}},{"$match":{"title":"Fuel leak"}},{"$project":{"title":1}}]`))
	if out["result_count"] != float64(1) {
		t.Fatalf("an indexed leading $match: %v", out)
	}
	e.refusingScans(3).ok("aggregate", map[string]any{"class_name": "Project", "pipeline": `[{"$group":{"_id":"$name"}}]`}) // 3 rows
	// Spared by the policy.
	e.withCatalog(allowScans("Ticket")).ok("aggregate", agg(`[{"$match":{"title":"Fuel leak"}}]`))
	e.withCatalog(allowScans("Project")).refused("aggregate", agg(`[{"$match":{"title":"Fuel leak"}}]`), scanRefused, ticketScanRefused)
}

// The scope's rules are part of the find a pipeline is judged by: a
// tenant scope on an indexed field (Ticket.project) serves a pipeline
// with no $match of its own, which reads the whole class for the master
// key.
func TestAggregateFullScanUnderScope(t *testing.T) {
	e := newEnv(t, master(agent.Readonly)).refusingScans(2)
	p := map[string]any{"class_name": "Ticket", "pipeline": `[{"$group":{"_id":"$status","n":{"$sum":1}}}]`}
	e.refused("aggregate", p, scanRefused, ticketScanRefused)
	a := master(agent.Readonly)
	a.Policy.TenantID = "pApollo001"
	a.Policy.Catalog = &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {Tenant: &agent.TenantScope{Field: "project"}}}}
	e.as(a).ok("aggregate", p)
	// A tenant field without an index does not.
	a.Policy.TenantID = "open"
	a.Policy.Catalog = &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {Tenant: &agent.TenantScope{Field: "status"}}}}
	e.as(a).refused("aggregate", p, scanRefused, "the query would scan all 3 rows of Ticket")
}
