package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// The distinct values of a field, ascending unless sort says; an Array
// field gives its elements, a path reaches into an Object field.
func TestDistinct(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	for _, c := range []struct {
		args map[string]any
		want []any
	}{
		{map[string]any{"class_name": "Ticket", "field": "status"}, []any{"closed", "in_progress", "open"}},
		{map[string]any{"class_name": "Ticket", "field": "status", "sort": "desc"}, []any{"open", "in_progress", "closed"}},
		{map[string]any{"class_name": "Ticket", "field": "status", "where": map[string]any{"priority": 1}}, []any{"in_progress", "open"}},
		{map[string]any{"class_name": "Ticket", "field": "priority"}, []any{float64(1), float64(2), float64(3), float64(5)}},
		{map[string]any{"class_name": "Project", "field": "tags"}, []any{"arctic", "nasa", "space"}},
		{map[string]any{"class_name": "Project", "field": "meta.plan"}, []any{"free", "pro"}},
	} {
		out := e.ok("distinct", c.args)
		if d := cmp.Diff(c.want, out["values"]); d != "" {
			t.Errorf("%v (-want +got):\n%s", c.args, d)
		}
		if out["count"] != float64(len(c.want)) || out["field"] != c.args["field"] {
			t.Errorf("%v: %v", c.args, out)
		}
	}
}

// A Pointer field's values are pointers, as Parse Server answers.
func TestDistinctPointer(t *testing.T) {
	out := newEnv(t, master(agent.Readonly)).ok("distinct", map[string]any{"class_name": "Ticket", "field": "project", "limit": 1})
	want := []any{map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pApollo001"}}
	if d := cmp.Diff(want, out["values"]); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if out["pointer_class"] != "Project" {
		t.Fatalf("%v", out)
	}
}

// limit cuts the values; next_call continues after them.
func TestDistinctPages(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("distinct", map[string]any{"class_name": "Ticket", "field": "status", "limit": 2})
	if !cmp.Equal(out["values"], []any{"closed", "in_progress"}) || out["truncated"] != true {
		t.Fatalf("page 1: %v", out)
	}
	want := map[string]any{"tool": "distinct", "arguments": map[string]any{"class_name": "Ticket", "field": "status", "sort": "asc", "limit": float64(2), "skip": float64(2)}}
	if d := cmp.Diff(want, out["next_call"]); d != "" {
		t.Fatalf("next_call (-want +got):\n%s", d)
	}
	out = e.next("distinct", out)
	if !cmp.Equal(out["values"], []any{"open"}) || out["next_call"] != nil {
		t.Fatalf("page 2: %v", out)
	}
}

// A user sees the values of the rows it may read, and not those of a
// field it may not see.
func TestDistinctACL(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Project": {AgentFields: []string{"tags"}}}}
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001")).withCatalog(cat)
	if got := e.ok("distinct", map[string]any{"class_name": "Project", "field": "tags"})["values"]; !cmp.Equal(got, []any{"nasa", "space"}) {
		t.Fatalf("alice's project tags: %v", got)
	}
	e.refused("distinct", map[string]any{"class_name": "Project", "field": "name"}, fieldDenied, `field: "name" is not a field of Project`)
}

func TestDistinctArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	for _, c := range []struct {
		args       map[string]any
		code, want string
	}{
		{map[string]any{"field": "nope"}, fieldDenied, `field: "nope" is not a field of Ticket`},
		{map[string]any{"field": "title.first"}, tools.CodeInvalidArgument, `argument "field" "title.first": dotted paths only reach into Object fields; "title" is a String`},
		{map[string]any{"field": "status", "sort": "up"}, tools.CodeInvalidArgument, `argument "sort" must be one of asc or desc; got "up"`},
		{map[string]any{"field": "status", "limit": 5001}, tools.CodeInvalidArgument, `argument "limit" must be between 1 and 5000`},
		{map[string]any{"field": "status", "where": map[string]any{"nope": 1}}, fieldDenied, `"nope" is not a field of Ticket`},
		{map[string]any{}, tools.CodeInvalidArgument, `argument "field" is required`},
	} {
		c.args["class_name"] = "Ticket"
		e.refused("distinct", c.args, c.code, c.want)
	}
	e.refused("distinct", map[string]any{"class_name": "Project", "field": "members"}, tools.CodeInvalidArgument, `argument "field" "members" is not a field of Project`)
}

// With full scans refused, distinct is judged by its where as group_by
// is.
func TestDistinctFullScanGuard(t *testing.T) {
	e := newEnv(t, master(agent.Readonly)).refusingScans(2)
	e.refused("distinct", map[string]any{"class_name": "Ticket", "field": "status"}, scanRefused, ticketScanRefused)
	e.refused("distinct", map[string]any{"class_name": "Ticket", "field": "status", "dry_run": true, "where": map[string]any{"title": "Fuel leak"}}, scanRefused, "an index on title would serve it")
	if out := e.ok("distinct", map[string]any{"class_name": "Ticket", "field": "status", "where": map[string]any{"objectId": t2}}); !cmp.Equal(out["values"], []any{"closed"}) {
		t.Fatalf("an indexed where: %v", out["values"])
	}
	e.withCatalog(allowScans("Ticket")).ok("distinct", map[string]any{"class_name": "Ticket", "field": "status"})
}
