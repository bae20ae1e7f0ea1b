package tools_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/tools"
)

// A where, an order and a limit give a page; next_call holds the exact
// arguments of the next one, and the last page says nothing follows.
func TestQueryClassPages(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	where := map[string]any{"status": map[string]any{"$in": []any{"open", "in_progress"}}}
	out := e.ok("query_class", map[string]any{"class_name": "Ticket", "where": where, "order": "priority,title", "limit": 2})
	if d := cmp.Diff([]string{t1, t4}, ids(t, out["results"])); d != "" {
		t.Fatalf("page 1 (-want +got):\n%s", d)
	}
	if out["result_count"] != float64(2) || out["truncated"] != true || out["next_skip"] != float64(2) {
		t.Fatalf("page 1: %v", out)
	}
	wantNext := map[string]any{"tool": "query_class", "arguments": map[string]any{"class_name": "Ticket", "where": where, "order": "priority,title", "limit": float64(2), "skip": float64(2)}}
	if d := cmp.Diff(wantNext, out["next_call"]); d != "" {
		t.Fatalf("next_call (-want +got):\n%s", d)
	}
	out = e.next("query_class", out)
	if d := cmp.Diff([]string{t3, t5}, ids(t, out["results"])); d != "" {
		t.Fatalf("page 2 (-want +got):\n%s", d)
	}
	if d := cmp.Diff(map[string]any{"limit": float64(2), "skip": float64(2), "has_more": false}, out["pagination"]); d != "" {
		t.Fatalf("page 2's pagination (-want +got):\n%s", d)
	}
	if _, more := out["next_call"]; more || out["truncated"] != nil {
		t.Fatalf("the last page continues: %v", out)
	}
	first := objs(t, out["results"])[0]
	if first["title"] != "Ice survey" || first["priority"] != float64(2) || first["status"] != "open" {
		t.Fatalf("a row's values: %v", first)
	}
}

// keys narrows the rows to the fields named (objectId and the timestamps
// stay); include inlines a pointer's object, which keys can narrow too.
func TestQueryClassProjection(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("query_class", map[string]any{"class_name": "Ticket", "keys": "title", "where": map[string]any{"objectId": t1}})
	row := objs(t, out["results"])[0]
	if d := cmp.Diff([]string{"createdAt", "objectId", "title", "updatedAt"}, keysOf(row)); d != "" {
		t.Fatalf("keys (-want +got):\n%s", d)
	}
	out = e.ok("query_class", map[string]any{"class_name": "Ticket", "keys": []string{"title", "project.name"}, "include": []string{"project"}, "where": map[string]any{"objectId": t1}})
	p := objs(t, out["results"])[0]["project"].(map[string]any)
	if p["__type"] != "Object" || p["className"] != "Project" || p["name"] != "Apollo" || p["budget"] != nil {
		t.Fatalf("the included project: %v", p)
	}
	e.refused("query_class", map[string]any{"class_name": "Ticket", "keys": []string{"project.name"}}, tools.CodeInvalidArgument, `add "project" to include`)
	e.refused("query_class", map[string]any{"class_name": "Ticket", "include": []string{"title"}}, tools.CodeInvalidArgument, `include "title": only Pointer fields can be included; it is a String`)
	e.refused("query_class", map[string]any{"class_name": "Ticket", "include": []string{"nope"}}, fieldDenied, `include: "nope" is not a field of Ticket`)
}

// Bad arguments are refused with what is wrong and which argument.
func TestQueryClassArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	for _, c := range []struct {
		args       map[string]any
		code, want string
	}{
		{map[string]any{}, tools.CodeInvalidArgument, `argument "class_name" is required`},
		{map[string]any{"class_name": "Nope"}, classNotFound, `class "Nope" was not found`},
		{map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, fieldDenied, `where.nope: "nope" is not a field of Ticket`},
		{map[string]any{"class_name": "Ticket", "where": "[1]"}, tools.CodeInvalidArgument, `argument "where" must be a JSON object of constraints`},
		{map[string]any{"class_name": "Ticket", "where": map[string]any{"priority": map[string]any{"$bogus": 1}}}, tools.CodeInvalidQuery, "$bogus"},
		{map[string]any{"class_name": "Ticket", "limit": 0}, tools.CodeInvalidArgument, `argument "limit" must be between 1 and 1000, got 0`},
		{map[string]any{"class_name": "Ticket", "limit": 1001}, tools.CodeInvalidArgument, `argument "limit" must be between 1 and 1000, got 1001`},
		{map[string]any{"class_name": "Ticket", "limit": "ten"}, tools.CodeInvalidArgument, `argument "limit" must be a number`},
		{map[string]any{"class_name": "Ticket", "skip": -1}, tools.CodeInvalidArgument, `argument "skip" must be at least 0`},
		{map[string]any{"class_name": "Ticket", "order": "nope"}, fieldDenied, `order: "nope" is not a field of Ticket`},
		{map[string]any{"class_name": "Ticket", "limt": 5}, tools.CodeInvalidArgument, `unknown argument "limt"`},
	} {
		e.refused("query_class", c.args, c.code, c.want)
	}
	// A where sent as a string holding JSON is taken.
	if got := ids(t, e.ok("query_class", map[string]any{"class_name": "Ticket", "where": `{"status":"closed"}`})["results"]); !cmp.Equal(got, []string{t2}) {
		t.Fatalf("a where as a string: %v", got)
	}
}

// A user reads the rows its ACLs allow: the master-only ticket is absent,
// a pointer to a project it cannot read is not inlined, and a class whose
// permissions refuse it is refused.
func TestQueryClassACL(t *testing.T) {
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001"))
	out := e.ok("query_class", map[string]any{"class_name": "Ticket", "include": []string{"project"}, "order": "objectId"})
	rows := objs(t, out["results"])
	if d := cmp.Diff([]string{t1, t2, t3, t4}, ids(t, out["results"])); d != "" {
		t.Fatalf("rows (-want +got):\n%s", d)
	}
	if p, _ := rows[0]["project"].(map[string]any); p["name"] != "Apollo" {
		t.Fatalf("a readable project is inlined: %v", rows[0]["project"])
	}
	for _, r := range rows[2:] { // Borealis is Bob's, Comet the Admin role's
		if _, ok := r["project"]; ok {
			t.Fatalf("an unreadable project shows in %s: %v", r["objectId"], r["project"])
		}
	}
	mustNotMention(t, out, "Hidden task", "Borealis", "Comet")
	err := e.refused("query_class", map[string]any{"class_name": "Payroll"}, tools.CodePermissionDenied, "class-level permissions of Payroll do not allow find")
	if err.Details["kind"] != "clp" {
		t.Fatalf("details: %v", err.Details)
	}
}

// A field beyond the agent's fields is not shown, and naming it reads as
// naming a field that does not exist.
func TestQueryClassHiddenFields(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {AgentFields: []string{"title", "status"}}}}
	e := newEnv(t, master(agent.Readonly)).withCatalog(cat)
	out := e.ok("query_class", map[string]any{"class_name": "Ticket"})
	mustNotMention(t, out, `"priority"`, `"project"`, "pApollo001")
	e.refused("query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"priority": 1}}, fieldDenied, `where.priority: "priority" is not a field of Ticket`)
	e.refused("query_class", map[string]any{"class_name": "Ticket", "order": "-priority"}, fieldDenied, `order: "priority" is not a field of Ticket`)
	e.refused("query_class", map[string]any{"class_name": "Ticket", "include": []string{"project"}}, fieldDenied, `include: "project" is not a field of Ticket`)
}

// A class's large fields are left out unless named in keys; its canonical
// filter applies unless the call opts out, which its next_call keeps.
func TestQueryClassLargeFieldsAndCanonicalFilter(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {
		LargeFields:     []string{"title"},
		CanonicalFilter: map[string]any{"status": map[string]any{"$ne": "closed"}},
	}}}
	e := newEnv(t, master(agent.Readonly)).withCatalog(cat)
	out := e.ok("query_class", map[string]any{"class_name": "Ticket", "order": "objectId"})
	if !cmp.Equal(out["omitted_large_fields"], []any{"title"}) {
		t.Fatalf("omitted_large_fields: %v", out["omitted_large_fields"])
	}
	mustNotMention(t, out["results"], `"title"`)
	if d := cmp.Diff([]string{t1, t3, t4, t5}, ids(t, out["results"])); d != "" {
		t.Fatalf("the canonical filter (-want +got):\n%s", d)
	}
	out = e.ok("query_class", map[string]any{"class_name": "Ticket", "keys": []string{"title"}, "where": map[string]any{"objectId": t1}})
	if _, ok := out["omitted_large_fields"]; ok || objs(t, out["results"])[0]["title"] != "Fuel leak" {
		t.Fatalf("a large field named in keys: %v", out)
	}
	out = e.ok("query_class", map[string]any{"class_name": "Ticket", "order": "objectId", "limit": 1, "skip": 1, "apply_canonical_filter": false})
	if !cmp.Equal(ids(t, out["results"]), []string{t2}) || out["canonical_filter_applied"] != false {
		t.Fatalf("opted out: %v", out)
	}
	if next := out["next_call"].(map[string]any)["arguments"].(map[string]any); next["apply_canonical_filter"] != false {
		t.Fatalf("next_call forgets the opt-out: %v", next)
	}
}

// With RefuseFullScans, a query that would scan a class larger than the
// threshold is refused with the index that would serve it, unless the
// class is allowed full scans.
func TestQueryClassFullScanGuard(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	args := map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "Fuel leak"}}
	e.ok("query_class", args) // off by default
	e.config.RefuseFullScans, e.config.FullScanThreshold = true, 2
	err := e.refused("query_class", args, withKind(tools.CodeSecurityBlocked, "full_scan_refused"), "the query would scan all 5 rows of Ticket (more than 2)")
	if d := cmp.Diff(map[string]any{"kind": "full_scan_refused", "row_count": int64(5), "threshold": int64(2), "suggested_index": []map[string]int{{"title": 1}}}, err.Details); d != "" {
		t.Fatalf("details (-want +got):\n%s", d)
	}
	e.ok("query_class", map[string]any{"class_name": "Project", "where": map[string]any{"name": "Apollo"}}) // an index serves it
	e.config.FullScanAllowed = []string{"Ticket"}
	e.ok("query_class", args)
}

// A page over the response budget keeps the rows that fit and continues
// with the first row left out: following next_call reads every row once.
func TestQueryClassResponseBudget(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.budget = 900
	out := e.ok("query_class", map[string]any{"class_name": "Ticket", "order": "objectId"})
	if out["truncated"] != true || out["rows_left_out"] == nil {
		t.Fatalf("not cut: %v", out)
	}
	var all []string
	for page := 0; ; page++ {
		all = append(all, ids(t, out["results"])...)
		if _, more := out["next_call"]; !more || page > 5 {
			break
		}
		out = e.next("query_class", out)
	}
	if d := cmp.Diff([]string{t1, t2, t3, t4, t5}, all); d != "" {
		t.Fatalf("rows over the pages (-want +got):\n%s", d)
	}
}

// An agent the class-level permissions let find but not count is judged
// by the full-scan rule all the same: the class is sized as the store
// holds it, for the decision only, and the refusal does not tell the
// agent that number.
func TestFullScanGuardWhenCountDenied(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	sch := parse.NewSchema("Notice")
	sch.Fields["text"] = parse.Field{Type: parse.TypeString}
	none := &parse.OpPerm{Entries: map[string]bool{}}
	pub := &parse.OpPerm{Entries: map[string]bool{"*": true}}
	sch.CLP.Find, sch.CLP.Get, sch.CLP.Count = pub, pub, none
	var rows []parse.Object
	for i := range 5 {
		rows = append(rows, parse.Object{parse.FieldObjectID: fmt.Sprintf("N00000000%d", i), "text": "note", "ACL": map[string]any{"*": map[string]any{"read": true}}})
	}
	e.addClass(sch, rows...)
	u := e.as(asUser(agent.Readonly, fixture.Alice))
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"query_class", map[string]any{"class_name": "Notice"}},
		{"text_search", map[string]any{"class_name": "Notice", "field": "text", "term": "note"}},
		{"get_sample_objects", map[string]any{"class_name": "Notice"}},
		{"explain_query", map[string]any{"class_name": "Notice"}},
	}
	for _, c := range calls {
		u.ok(c.tool, c.args)
		u.refusingScans(100).ok(c.tool, c.args)
		err := u.refusingScans(2).refused(c.tool, c.args, scanRefused, "the query would scan every row of Notice (more than 2)")
		if _, told := err.Details["row_count"]; told {
			t.Errorf("%s: the refusal tells the count the agent may not read: %v", c.tool, err.Details)
		}
	}
}
