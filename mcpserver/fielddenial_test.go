package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// The fields bob's view of each class holds under fieldPolicy, in the
// order a field denial lists them: the class's own fields alphabetically,
// then objectId, createdAt, updatedAt.
var (
	projectView = []any{"active", "members", "name", "tags", "objectId", "createdAt", "updatedAt"}
	ticketView  = []any{"due", "priority", "project", "status", "title", "objectId", "createdAt", "updatedAt"}
	userView    = []any{"emailVerified", "username", "objectId", "createdAt", "updatedAt"}
)

// fieldPolicy hides Project's budget, meta and owner (a Pointer) from the
// agent through the operator's allowlist; _User's email is hidden from
// bob by its protectedFields.
func fieldPolicy() agent.Policy {
	return agent.Policy{Catalog: &agent.Catalog{Classes: map[string]*agent.ClassMeta{
		"Project": {AgentFields: []string{"name", "active", "tags", "members"}},
	}}}
}

// fieldDenialClient is bob under fieldPolicy over the fixture, through a
// real SDK client.
func fieldDenialClient(t *testing.T) *mcp.ClientSession {
	return govClient(t, fixtureStore(t), agent.Gates{}, agent.Readonly, bobID, fieldPolicy())
}

// twinCall runs tool with args, then with every hidden replaced by twin
// (a name no class has): it returns the first answer and fails unless the
// second is the same, byte for byte, once twin is swapped back.
func twinCall(t *testing.T, cs *mcp.ClientSession, tool string, args any, hidden, twin string) map[string]any {
	t.Helper()
	raw := mustJSON(t, args)
	if strings.Contains(raw, twin) || !strings.Contains(raw, hidden) {
		t.Fatalf("bad twin %q for %s", twin, raw)
	}
	var twinArgs any
	if err := json.Unmarshal([]byte(strings.ReplaceAll(raw, hidden, twin)), &twinArgs); err != nil {
		t.Fatal(err)
	}
	out, isErr := call(t, cs, tool, args)
	other, otherErr := call(t, cs, tool, twinArgs)
	got, back := mustJSON(t, out), strings.ReplaceAll(mustJSON(t, other), twin, hidden)
	if isErr != otherErr || got != back {
		t.Fatalf("%s %s: the hidden %q and the unknown %q answer differently:\n%s\n%s", tool, raw, hidden, twin, got, mustJSON(t, other))
	}
	if !isErr {
		t.Fatalf("%s %s: accepted: %s", tool, raw, got)
	}
	return out
}

// Every place a field is named against a class refuses a field the agent
// cannot see with access_denied, kind field_denied, the name, where it
// was and the fields it may use instead; a hidden field (the operator's
// allowlist, protectedFields, a Pointer among them) and one that does not
// exist answer byte for byte alike, in every branch, path and stage.
func TestFieldDenialHiddenReadsAsUnknown(t *testing.T) {
	cs := fieldDenialClient(t)
	pl := pipeline
	cases := []struct {
		name, tool   string
		args         map[string]any
		hidden, twin string
		path         string
		allowed      []any
	}{
		{"where", "query_class", m{"class_name": "Project", "where": m{"budget": m{"$gt": 1}}}, "budget", "zzzzzz", "where.budget", projectView},
		{"where $or branch", "count_objects", m{"class_name": "Project", "where": m{"$or": []any{m{"name": "Apollo"}, m{"budget": m{"$gt": 1}}}}}, "budget", "zzzzzz", "where.$or[1].budget", projectView},
		{"where $nor in $and", "count_objects", m{"class_name": "Project", "where": m{"$and": []any{m{"$nor": []any{m{"budget": 1}}}}}}, "budget", "zzzzzz", "where.$and[0].$nor[0].budget", projectView},
		{"where dotted path", "query_class", m{"class_name": "Project", "where": m{"meta.plan": "pro"}}, "meta", "zzzz", "where.meta.plan", projectView},
		{"where pointer", "query_class", m{"class_name": "Project", "where": m{"owner": m{"$exists": true}}}, "owner", "zzzzz", "where.owner", projectView},
		{"order", "query_class", m{"class_name": "Project", "order": "name,-budget"}, "budget", "zzzzzz", "order", projectView},
		{"order dotted", "query_class", m{"class_name": "Project", "order": "meta.seats"}, "meta", "zzzz", "order", projectView},
		{"keys", "query_class", m{"class_name": "Project", "keys": []string{"name", "budget"}}, "budget", "zzzzzz", "keys", projectView},
		{"keys dotted", "query_class", m{"class_name": "Project", "keys": []string{"name", "owner.username"}, "include": []string{"name"}}, "owner", "zzzzz", "keys", projectView},
		{"include", "query_class", m{"class_name": "Project", "include": []string{"owner"}}, "owner", "zzzzz", "include", projectView},
		{"protected field", "query_class", m{"class_name": "_User", "where": m{"email": m{"$regex": "^a"}}}, "email", "zzzzz", "where.email", userView},
		{"$inQuery sub-query", "count_objects", m{"class_name": "Ticket", "where": m{"project": m{"$inQuery": m{"className": "Project", "where": m{"budget": m{"$gt": 1}}}}}}, "budget", "zzzzzz", "where.project.$inQuery.where.budget", projectView},
		{"$select key", "count_objects", m{"class_name": "Ticket", "where": m{"title": m{"$select": m{"query": m{"className": "Project"}, "key": "budget"}}}}, "budget", "zzzzzz", "where.title.$select.key", projectView},
		{"$select protected key", "count_objects", m{"class_name": "Ticket", "where": m{"title": m{"$select": m{"query": m{"className": "_User"}, "key": "email"}}}}, "email", "zzzzz", "where.title.$select.key", userView},
		{"distinct", "distinct", m{"class_name": "Project", "field": "budget"}, "budget", "zzzzzz", "field", projectView},
		{"group_by field", "group_by", m{"class_name": "Project", "field": "owner"}, "owner", "zzzzz", "field", projectView},
		{"group_by value_field", "group_by", m{"class_name": "Project", "field": "name", "operation": "sum", "value_field": "budget"}, "budget", "zzzzzz", "value_field", projectView},
		{"group_by_date field", "group_by_date", m{"class_name": "_User", "field": "email", "interval": "day"}, "email", "zzzzz", "field", userView},
		{"export columns", "export_data", m{"class_name": "Project", "columns": []any{"name", m{"field": "budget", "as": "B"}}}, "budget", "zzzzzz", "columns[1]", projectView},
		{"export through a pointer", "export_data", m{"class_name": "Ticket", "columns": []any{"title", "project.budget"}}, "budget", "zzzzzz", "columns[1]", projectView},
		{"$match", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$match": {"$or": [{"name": "x"}, {"budget": {"$gt": 1}}]}}]`)}, "budget", "zzzzzz", "pipeline[0].$match.$or[1].budget", projectView},
		{"$group key", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$group": {"_id": "$owner"}}]`)}, "owner", "zzzzz", "pipeline[0].$group._id", projectView},
		{"$group accumulator", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$group": {"_id": null, "total": {"$sum": "$budget"}}}]`)}, "budget", "zzzzzz", "pipeline[0].$group.total.$sum", projectView},
		{"$group dotted", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$group": {"_id": "$meta.plan"}}]`)}, "meta", "zzzz", "pipeline[0].$group._id", projectView},
		{"$sort", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$sort": {"budget": -1}}]`)}, "budget", "zzzzzz", "pipeline[0].$sort.budget", projectView},
		{"$project", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$project": {"name": 1, "budget": 1}}]`)}, "budget", "zzzzzz", "pipeline[0].$project.budget", projectView},
		{"$project value", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$project": {"b": "$budget"}}]`)}, "budget", "zzzzzz", "pipeline[0].$project.b", projectView},
		{"$unset", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$unset": "budget"}]`)}, "budget", "zzzzzz", "pipeline[0].$unset", projectView},
		{"$lookup localField", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}]`)}, "owner", "zzzzz", "pipeline[0].$lookup.localField", projectView},
		{"$lookup foreignField", "aggregate", m{"class_name": "_User", "pipeline": pl(`[{"$lookup": {"from": "Project", "localField": "objectId", "foreignField": "owner", "as": "p"}}]`)}, "owner", "zzzzz", "pipeline[0].$lookup.foreignField", projectView},
		{"after $addFields", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$addFields": {"n": 1}}, {"$match": {"budget": 1}}]`)}, "budget", "zzzzzz", "pipeline[1].$match.budget", projectView},
		{"after $lookup", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "p"}}, {"$group": {"_id": "$priority", "b": {"$max": "$budget"}}}]`)}, "budget", "zzzzzz", "pipeline[1].$group.b.$max", ticketView},
		{"$facet", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$facet": {"a": [{"$group": {"_id": "$budget"}}]}}]`)}, "budget", "zzzzzz", "pipeline[0].$facet.a[0].$group._id", projectView},
		{"$unionWith", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$unionWith": {"coll": "Project", "pipeline": [{"$match": {"budget": 1}}]}}]`)}, "budget", "zzzzzz", "pipeline[0].$unionWith.pipeline[0].$match.budget", projectView},
		{"$graphLookup", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$graphLookup": {"from": "Project", "startWith": "$project", "connectFromField": "owner", "connectToField": "_id", "as": "g"}}]`)}, "owner", "zzzzz", "pipeline[0].$graphLookup.connectFromField", projectView},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := twinCall(t, cs, tc.tool, tc.args, tc.hidden, tc.twin)
			if out["error_code"] != "access_denied" {
				t.Fatalf("error_code %v, want access_denied: %v", out["error_code"], out)
			}
			d, _ := out["details"].(map[string]any)
			if d["kind"] != "field_denied" || d["denied_field"] != tc.hidden || d["suggested_rewrite"] != nil {
				t.Fatalf("details %v, want kind field_denied and denied_field %q", d, tc.hidden)
			}
			for _, f := range d["allowed_fields"].([]any) {
				if f == "budget" || f == "meta" || f == "owner" || f == "email" {
					t.Fatalf("allowed_fields names the hidden %v: %v", f, d)
				}
			}
			if tc.path != "" && d["path"] != tc.path {
				t.Errorf("path %v, want %s", d["path"], tc.path)
			}
			if tc.allowed != nil {
				if diff := cmp.Diff(tc.allowed, d["allowed_fields"]); diff != "" {
					t.Errorf("allowed_fields (-want +got):\n%s", diff)
				}
			}
			msg, _ := out["error"].(string)
			if !strings.HasPrefix(msg, fmt.Sprint(d["path"])+": ") || !strings.Contains(msg, "is not a field of") {
				t.Errorf("message %q", msg)
			}
		})
	}
}

// A name the rows of a later stage do not have (a $group's output, a
// $project's) is a mistake in the pipeline's shape, not a field denial.
func TestFieldDenialNotForReshapedRows(t *testing.T) {
	cs := fieldDenialClient(t)
	for _, p := range []string{
		`[{"$group": {"_id": "$name"}}, {"$match": {"active": true}}]`,
		`[{"$project": {"name": 1}}, {"$sort": {"active": 1}}]`,
		`[{"$group": {"_id": "$name"}}, {"$group": {"_id": "$budget"}}]`,
	} {
		out := fails(t, cs, "aggregate", m{"class_name": "Project", "pipeline": pipeline(p)}, "invalid_query")
		if d, _ := out["details"].(map[string]any); d["kind"] != nil || !strings.Contains(out["error"].(string), "the rows here have") {
			t.Errorf("%s: %v", p, out)
		}
	}
}

// MongoDB's storage column of a pointer ("_p_project") is never a field
// name: wherever it is named it is refused with kind
// storage_form_field_ref and the field to name instead, "$project" for a
// reference and "project" for a key.
func TestStorageFormFieldRefused(t *testing.T) {
	cs := fieldDenialClient(t)
	pl := pipeline
	cases := []struct {
		name, tool string
		args       map[string]any
		path       string
		rewrite    string
		allowed    []any
	}{
		{"$group key", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$group": {"_id": "$_p_project", "n": {"$sum": 1}}}]`)}, "pipeline[0].$group._id", "$project", ticketView},
		{"$group accumulator", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$group": {"_id": null, "p": {"$addToSet": "$_p_project"}}}]`)}, "pipeline[0].$group.p.$addToSet", "$project", ticketView},
		{"$group output key", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$group": {"_id": null, "_p_project": {"$first": "$title"}}}]`)}, "pipeline[0].$group._p_project", "project", ticketView},
		{"$match key", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$match": {"_p_project": "Project$pApollo001"}}]`)}, "pipeline[0].$match._p_project", "project", ticketView},
		{"$match in $or", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$match": {"$or": [{"status": "open"}, {"_p_project": "Project$pApollo001"}]}}]`)}, "pipeline[0].$match.$or[1]._p_project", "project", ticketView},
		{"$project key", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$project": {"_p_project": 1}}]`)}, "pipeline[0].$project._p_project", "project", ticketView},
		{"$project value", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$project": {"p": "$_p_project"}}]`)}, "pipeline[0].$project.p", "$project", ticketView},
		{"$sort key", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$sort": {"_p_project": 1}}]`)}, "pipeline[0].$sort._p_project", "project", ticketView},
		{"$lookup localField", "aggregate", m{"class_name": "Ticket", "pipeline": pl(`[{"$lookup": {"from": "Project", "localField": "_p_project", "foreignField": "_id", "as": "p"}}]`)}, "pipeline[0].$lookup.localField", "project", ticketView},
		{"$lookup foreignField", "aggregate", m{"class_name": "Project", "pipeline": pl(`[{"$lookup": {"from": "Ticket", "localField": "objectId", "foreignField": "_p_project", "as": "t"}}]`)}, "pipeline[0].$lookup.foreignField", "project", ticketView},
		{"where key", "query_class", m{"class_name": "Ticket", "where": m{"_p_project": "Project$pApollo001"}}, "where._p_project", "project", ticketView},
		{"order", "query_class", m{"class_name": "Ticket", "order": "-_p_project"}, "order", "project", ticketView},
		{"keys", "query_class", m{"class_name": "Ticket", "keys": []string{"title", "_p_project"}}, "keys", "project", ticketView},
		{"distinct", "distinct", m{"class_name": "Ticket", "field": "_p_project"}, "field", "project", ticketView},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := fails(t, cs, tc.tool, tc.args, "access_denied")
			want := map[string]any{"kind": "storage_form_field_ref", "denied_field": "_p_project", "suggested_rewrite": tc.rewrite,
				"allowed_fields": tc.allowed, "path": tc.path}
			if diff := cmp.Diff(want, out["details"]); diff != "" {
				t.Errorf("details (-want +got):\n%s", diff)
			}
			if msg := out["error"].(string); !strings.Contains(msg, fmt.Sprintf("write %q instead", tc.rewrite)) {
				t.Errorf("message %q does not suggest %s", msg, tc.rewrite)
			}
		})
	}
	// The storage name of a field that is not a Pointer, and of a
	// Pointer hidden from the agent (Project.owner), suggests nothing:
	// the answer is the one a name that does not exist gets, so it does
	// not tell that a hidden pointer is there.
	for _, tc := range []struct {
		class, pipeline, hidden, twin string
	}{
		{"Ticket", `[{"$group": {"_id": "$_p_title"}}]`, "_p_title", "_p_zzzzz"},
		{"Project", `[{"$group": {"_id": "$_p_owner"}}]`, "_p_owner", "_p_zzzzz"},
		{"Project", `[{"$match": {"_p_owner": "_User$uAlice0001"}}]`, "_p_owner", "_p_zzzzz"},
		{"Project", `[{"$project": {"_p_owner": 1}}]`, "_p_owner", "_p_zzzzz"},
	} {
		out := twinCall(t, cs, "aggregate", m{"class_name": tc.class, "pipeline": pipeline(tc.pipeline)}, tc.hidden, tc.twin)
		d, _ := out["details"].(map[string]any)
		if out["error_code"] != "access_denied" || d["kind"] != "field_denied" || d["denied_field"] != tc.hidden || d["suggested_rewrite"] != nil || strings.Contains(out["error"].(string), "storage") {
			t.Errorf("%s %s: %v", tc.class, tc.pipeline, out)
		}
	}
	out := twinCall(t, cs, "query_class", m{"class_name": "Project", "where": m{"_p_owner": "_User$uAlice0001"}}, "_p_owner", "_p_zzzzz")
	if d, _ := out["details"].(map[string]any); d["kind"] != "field_denied" || d["suggested_rewrite"] != nil {
		t.Errorf("where _p_owner: %v", out)
	}
	// The field itself is the way in.
	if got := ok(t, cs, "aggregate", m{"class_name": "Ticket", "pipeline": pipeline(`[{"$match": {"project": "pApollo001"}}, {"$count": "n"}]`)}); mustJSON(t, got["results"]) != `[{"n":2}]` {
		t.Errorf("match on the pointer: %v", got)
	}
}

// allowed_fields is a preview: at most 20 names, and the message counts
// the rest.
func TestFieldDenialAllowedFieldsCapped(t *testing.T) {
	st := fixtureStore(t)
	wide := parse.NewSchema("Wide")
	var own []string
	for i := 1; i <= 25; i++ {
		name := fmt.Sprintf("f%02d", i)
		own = append(own, name)
		wide.Fields[name] = parse.Field{Type: parse.TypeString}
	}
	if err := st.CreateClass(context.Background(), wide); err != nil {
		t.Fatal(err)
	}
	cs := govClient(t, st, agent.Gates{}, agent.Readonly, bobID, agent.Policy{})
	out := fails(t, cs, "query_class", m{"class_name": "Wide", "where": m{"nope": 1}}, "access_denied")
	d := out["details"].(map[string]any)
	var want []any
	for _, f := range own[:20] {
		want = append(want, f)
	}
	if diff := cmp.Diff(want, d["allowed_fields"]); diff != "" {
		t.Errorf("allowed_fields (-want +got):\n%s", diff)
	}
	if msg := out["error"].(string); !strings.HasSuffix(msg, "its fields: "+strings.Join(own[:20], ", ")+" (+8 more)") {
		t.Errorf("message %q", msg)
	}
	if slices.Contains(d["allowed_fields"].([]any), any("ACL")) {
		t.Errorf("ACL listed: %v", d)
	}
}

// The operator's own filters are parsed against the full schema: one
// naming a field the class lacks is the operator's mistake, answered as
// before, and never as a field denial listing the full schema's fields
// (which would name the ones hidden from the agent).
func TestOperatorFilterErrorListsNoFields(t *testing.T) {
	cs := govClient(t, fixtureStore(t), agent.Gates{}, agent.Readonly, bobID, agent.Policy{Catalog: &agent.Catalog{Classes: map[string]*agent.ClassMeta{
		"Project": {AgentFields: []string{"name"}, CanonicalFilter: map[string]any{"ghost": true}},
	}}})
	out := fails(t, cs, "query_class", m{"class_name": "Project"}, "invalid_query")
	if d, _ := out["details"].(map[string]any); d["allowed_fields"] != nil || d["kind"] != nil || strings.Contains(mustJSON(t, out), "budget") {
		t.Fatalf("%v", out)
	}
}
