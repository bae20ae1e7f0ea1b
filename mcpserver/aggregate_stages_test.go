package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
)

// The stages that read another class ($unionWith, $graphLookup) or hold
// sub-pipelines ($facet) are governed like $lookup: the class's CLP and
// visibility decide whether the pipeline runs, and the agent's ACL,
// protected fields, row filters and tenant scope decide which rows and
// fields come back, in a dry run as in a run.
func TestAggregateStagesGoverned(t *testing.T) {
	st := fixtureStore(t)
	bobCS := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), "")
	for _, tc := range []struct{ pipeline, code string }{
		{`[{"$unionWith":"Payroll"}]`, "permission_denied"},
		{`[{"$unionWith":{"coll":"Project","pipeline":[{"$lookup":{"from":"Payroll","localField":"name","foreignField":"_id","as":"p"}}]}}]`, "permission_denied"},
		{`[{"$graphLookup":{"from":"Payroll","startWith":"$title","connectFromField":"_id","connectToField":"_id","as":"p"}}]`, "permission_denied"},
		{`[{"$facet":{"a":[{"$lookup":{"from":"Payroll","localField":"title","foreignField":"_id","as":"p"}}]}}]`, "permission_denied"},
		{`[{"$facet":{"a":[{"$unionWith":"Payroll"}]}}]`, "permission_denied"},
		{`[{"$unionWith":"_Session"}]`, "invalid_query"},
		{`[{"$graphLookup":{"from":"_Session","startWith":"$title","connectFromField":"_id","connectToField":"_id","as":"p"}}]`, "invalid_query"},
	} {
		fails(t, bobCS, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": tc.pipeline}, tc.code)
		fails(t, bobCS, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": tc.pipeline, "dry_run": true}, tc.code)
	}

	// bob reads Apollo (public) and Borealis (his), not Comet (role:Admin
	// only), and tickets 1-4 (not the one with an empty ACL).
	out := ok(t, bobCS, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$project":{"_id":1}},
	  {"$unionWith":{"coll":"Project","pipeline":[{"$project":{"_id":1}}]}}]`})
	if d := cmp.Diff(jsonOf(t, `[{"objectId":"t000000001"},{"objectId":"t000000002"},{"objectId":"t000000003"},{"objectId":"t000000004"},
	  {"objectId":"pApollo001"},{"objectId":"pBorealis2"}]`), out["results"]); d != "" {
		t.Fatalf("$unionWith under bob's ACL (-want +got):\n%s", d)
	}
	out = ok(t, bobCS, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$graphLookup":{"from":"Project","startWith":"$project",
	  "connectFromField":"_id","connectToField":"_id","as":"p","maxDepth":0}},{"$unwind":"$p"},{"$project":{"n":"$p.name"}}]`})
	if d := cmp.Diff(jsonOf(t, `[{"objectId":"t000000001","n":"Apollo"},{"objectId":"t000000002","n":"Apollo"},{"objectId":"t000000003","n":"Borealis"}]`), out["results"]); d != "" {
		t.Fatalf("$graphLookup under bob's ACL (-want +got):\n%s", d)
	}
	out = ok(t, bobCS, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$facet":{"n":[{"$count":"n"}],
	  "p":[{"$lookup":{"from":"Project","localField":"project","foreignField":"_id","as":"p"}},{"$unwind":"$p"},{"$count":"n"}]}}]`})
	if d := cmp.Diff(jsonOf(t, `[{"n":[{"n":4}],"p":[{"n":3}]}]`), out["results"]); d != "" {
		t.Fatalf("$facet under bob's ACL (-want +got):\n%s", d)
	}
	// Protected fields stay out of the rows of another class.
	for _, tc := range []struct{ class, pipeline string }{
		{"Ticket", `[{"$unionWith":"_User"}]`},
		{"Project", `[{"$graphLookup":{"from":"_User","startWith":"$owner","connectFromField":"_id","connectToField":"_id","as":"o"}}]`},
	} {
		out = ok(t, bobCS, "aggregate", map[string]any{"class_name": tc.class, "pipeline": tc.pipeline})
		if s := mustJSON(t, out["results"]); strings.Contains(s, "example.com") || !strings.Contains(s, `"username":"alice"`) {
			t.Fatalf("%s leaks protected fields or lost the user: %s", tc.pipeline, s)
		}
	}
	fails(t, bobCS, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$unionWith":{"coll":"_User","pipeline":[{"$project":{"email":1}}]}}]`}, "access_denied")
}

// The tenant scope holds inside sub-pipelines: rows of another tenant are
// not read, and a constraint naming another tenant is refused.
func TestAggregateStagesTenant(t *testing.T) {
	st := fixtureStore(t)
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Project": {Tenant: &agent.TenantScope{Field: "name"}}}}
	cs := govClient(t, st, allGates, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}, agent.Policy{Catalog: cat, TenantID: "Apollo"})
	out := ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$match":{"priority":1}},{"$project":{"_id":1}},
	  {"$unionWith":{"coll":"Project","pipeline":[{"$project":{"_id":1}}]}}]`})
	if d := cmp.Diff(jsonOf(t, `[{"objectId":"t000000001"},{"objectId":"t000000004"},{"objectId":"pApollo001"}]`), out["results"]); d != "" {
		t.Fatalf("$unionWith in tenant Apollo (-want +got):\n%s", d)
	}
	out = ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$graphLookup":{"from":"Project","startWith":"$project",
	  "connectFromField":"_id","connectToField":"_id","as":"p"}},{"$unwind":"$p"},{"$project":{"n":"$p.name"}}]`})
	if d := cmp.Diff(jsonOf(t, `[{"objectId":"t000000001","n":"Apollo"},{"objectId":"t000000002","n":"Apollo"}]`), out["results"]); d != "" {
		t.Fatalf("$graphLookup in tenant Apollo (-want +got):\n%s", d)
	}
	out = ok(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$facet":{"p":[
	  {"$lookup":{"from":"Project","localField":"project","foreignField":"_id","as":"p"}},{"$unwind":"$p"},{"$count":"n"}]}}]`})
	if d := cmp.Diff(jsonOf(t, `[{"p":[{"n":2}]}]`), out["results"]); d != "" {
		t.Fatalf("$facet's $lookup in tenant Apollo (-want +got):\n%s", d)
	}
	for _, p := range []string{
		`[{"$unionWith":{"coll":"Project","pipeline":[{"$match":{"name":"Borealis"}}]}}]`,
		`[{"$graphLookup":{"from":"Project","startWith":"$project","connectFromField":"_id","connectToField":"_id","as":"p","restrictSearchWithMatch":{"name":"Comet"}}}]`,
	} {
		fails(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": p}, "access_denied")
	}
}
