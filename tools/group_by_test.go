package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// Count per value of a field, largest first (ties by key); or sum, avg,
// min or max of a Number field, in the order asked for.
func TestGroupBy(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("group_by", map[string]any{"class_name": "Ticket", "field": "status"})
	if d := cmp.Diff([]any{group("open", 3), group("closed", 1), group("in_progress", 1)}, out["groups"]); d != "" {
		t.Fatalf("count (-want +got):\n%s", d)
	}
	if out["operation"] != "count" || out["sort"] != "value_desc" || out["group_count"] != float64(3) || out["field"] != "status" {
		t.Fatalf("%v", out)
	}
	for _, c := range []struct {
		op, sort string
		want     []any
	}{
		{"sum", "key_asc", []any{group("closed", 3), group("in_progress", 1), group("open", 8)}},
		{"max", "value_asc", []any{group("in_progress", 1), group("closed", 3), group("open", 5)}},
		{"min", "key_desc", []any{group("open", 1), group("in_progress", 1), group("closed", 3)}},
		{"AVERAGE", "value_desc", []any{group("closed", 3), group("open", 8.0/3), group("in_progress", 1)}},
	} {
		out := e.ok("group_by", map[string]any{"class_name": "Ticket", "field": "status", "operation": c.op, "value_field": "priority", "sort": c.sort})
		if d := cmp.Diff(c.want, out["groups"]); d != "" {
			t.Errorf("%s by %s (-want +got):\n%s", c.op, c.sort, d)
		}
	}
}

// With flatten_arrays an Array field counts each element; a Pointer
// field's keys are objectIds of its class, which the answer names.
func TestGroupByArrayAndPointer(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("group_by", map[string]any{"class_name": "Project", "field": "tags", "flatten_arrays": true})
	if d := cmp.Diff([]any{group("space", 2), group("arctic", 1), group("nasa", 1)}, out["groups"]); d != "" {
		t.Fatalf("tags (-want +got):\n%s", d)
	}
	if next := out["next_call"]; next != nil {
		t.Fatalf("one page: %v", next)
	}
	out = e.ok("group_by", map[string]any{"class_name": "Ticket", "field": "project", "where": map[string]any{"project": map[string]any{"$exists": true}}})
	if d := cmp.Diff([]any{group("pApollo001", 2), group("pBorealis2", 1), group("pComet0003", 1)}, out["groups"]); d != "" {
		t.Fatalf("project (-want +got):\n%s", d)
	}
	if out["pointer_class"] != "Project" || out["hint"] == nil {
		t.Fatalf("%v", out)
	}
}

// limit cuts the groups; next_call continues with the same parameters.
func TestGroupByPages(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("group_by", map[string]any{"class_name": "Ticket", "field": "status", "limit": 2, "where": map[string]any{"priority": map[string]any{"$lt": 5}}})
	if d := cmp.Diff([]any{group("open", 2), group("closed", 1)}, out["groups"]); d != "" {
		t.Fatalf("page 1 (-want +got):\n%s", d)
	}
	want := map[string]any{"tool": "group_by", "arguments": map[string]any{"class_name": "Ticket", "field": "status", "operation": "count", "sort": "value_desc",
		"limit": float64(2), "skip": float64(2), "where": map[string]any{"priority": map[string]any{"$lt": float64(5)}}}}
	if d := cmp.Diff(want, out["next_call"]); d != "" {
		t.Fatalf("next_call (-want +got):\n%s", d)
	}
	out = e.next("group_by", out)
	if d := cmp.Diff([]any{group("in_progress", 1)}, out["groups"]); d != "" || out["next_call"] != nil {
		t.Fatalf("page 2 (-want +got):\n%s%v", d, out["next_call"])
	}
}

// dry_run shows the pipeline it would run, for aggregate, and runs none.
func TestGroupByDryRun(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("group_by", map[string]any{"class_name": "Ticket", "field": "status", "operation": "sum", "value_field": "priority", "dry_run": true, "limit": 5})
	want := []any{
		map[string]any{"$group": map[string]any{"_id": "$status", "value": map[string]any{"$sum": "$priority"}}},
		map[string]any{"$sort": map[string]any{"value": float64(-1), "objectId": float64(1)}},
		map[string]any{"$limit": float64(6)},
	}
	if d := cmp.Diff(want, out["pipeline"]); d != "" {
		t.Fatalf("pipeline (-want +got):\n%s", d)
	}
	if out["dry_run"] != true || out["groups"] != nil {
		t.Fatalf("%v", out)
	}
}

// A user's groups count the rows it may read; a field it may not see is
// not groupable.
func TestGroupByACL(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {AgentFields: []string{"status"}}}}
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001")).withCatalog(cat)
	if got := e.ok("group_by", map[string]any{"class_name": "Ticket", "field": "status"})["groups"].([]any)[0]; !cmp.Equal(got, group("open", 2)) {
		t.Fatalf("alice's open tickets: %v", got)
	}
	e.refused("group_by", map[string]any{"class_name": "Ticket", "field": "priority"}, fieldDenied, `field: "priority" is not a field of Ticket`)
}

func TestGroupByArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"field": "ACL"}, `argument "field" "ACL" is not a groupable field of Ticket`},
		{map[string]any{"field": "status", "operation": "median"}, `argument "operation" must be one of count, sum, avg, min or max; got "median"`},
		{map[string]any{"field": "status", "operation": "sum"}, `argument "value_field" sum needs a Number field of Ticket, got ""`},
		{map[string]any{"field": "status", "operation": "avg", "value_field": "title"}, `argument "value_field" avg needs a Number field of Ticket, got "title"`},
		{map[string]any{"field": "status", "value_field": "priority"}, `argument "value_field" is not used by count`},
		{map[string]any{"field": "status", "sort": "random"}, `argument "sort" must be one of value_desc, value_asc, key_asc or key_desc`},
		{map[string]any{"field": "status", "limit": 1001}, `argument "limit" must be between 1 and 1000`},
		{map[string]any{}, `argument "field" is required`},
	} {
		c.args["class_name"] = "Ticket"
		e.refused("group_by", c.args, tools.CodeInvalidArgument, c.want)
	}
	e.refused("group_by", map[string]any{"class_name": "Ticket", "field": "nope"}, fieldDenied, `field: "nope" is not a field of Ticket`)
	e.refused("group_by", map[string]any{"class_name": "Ticket", "field": "status", "operation": "sum", "value_field": "nope"}, fieldDenied, `value_field: "nope" is not a field of Ticket`)
	e.refused("group_by", map[string]any{"class_name": "Project", "field": "members"}, tools.CodeInvalidArgument, `argument "field" "members" is not a groupable field of Project`)
}

// Without flatten_arrays (the default, as in the reference guide) the
// whole array is the key, as MongoDB's $group has it: equal arrays make
// one group. Groups of equal value come in the order of their first row;
// a key sort is refused, naming flatten_arrays.
func TestGroupByWholeArray(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	whole := []any{group([]any{"space", "nasa"}, 1), group([]any{"arctic"}, 1), group([]any{"space"}, 1)}
	for _, args := range []map[string]any{
		{"class_name": "Project", "field": "tags"},
		{"class_name": "Project", "field": "tags", "flatten_arrays": false},
		{"class_name": "Project", "field": "tags", "sort": "value_asc"},
	} {
		if d := cmp.Diff(whole, e.ok("group_by", args)["groups"]); d != "" {
			t.Errorf("%v (-want +got):\n%s", args, d)
		}
	}
	// Pages follow the same order.
	out := e.ok("group_by", map[string]any{"class_name": "Project", "field": "tags", "limit": 1})
	for i, want := range whole {
		if d := cmp.Diff([]any{want}, out["groups"]); d != "" {
			t.Fatalf("page %d (-want +got):\n%s", i+1, d)
		}
		if i < len(whole)-1 {
			out = e.next("group_by", out)
		}
	}
	// Equal arrays are one group: the sum of a Number field per array.
	e.as(master(agent.Write)).withGates(allGates).ok("update_object", map[string]any{"class_name": "Project", "object_id": "pComet0003", "object": map[string]any{"tags": []any{"arctic"}}})
	out = e.ok("group_by", map[string]any{"class_name": "Project", "field": "tags", "operation": "sum", "value_field": "budget"})
	if d := cmp.Diff([]any{group([]any{"arctic"}, 5250), group([]any{"space", "nasa"}, 1000)}, out["groups"]); d != "" {
		t.Errorf("sum per array (-want +got):\n%s", d)
	}
	for _, sort := range []string{"key_asc", "key_desc"} {
		e.refused("group_by", map[string]any{"class_name": "Project", "field": "tags", "sort": sort}, tools.CodeInvalidArgument,
			sort+" needs scalar keys, and tags is an Array grouped whole; sort by value_desc or value_asc, or pass flatten_arrays: true to group by element")
	}
}

// With full scans refused, the pipeline group_by builds is judged by its
// leading $match (the where): none, or one on an unindexed field, scans
// the class; one on an indexed field runs. The dry run is refused alike.
func TestGroupByFullScanGuard(t *testing.T) {
	e := newEnv(t, master(agent.Readonly)).refusingScans(2)
	e.refused("group_by", map[string]any{"class_name": "Ticket", "field": "status"}, scanRefused, ticketScanRefused)
	e.refused("group_by", map[string]any{"class_name": "Ticket", "field": "status", "dry_run": true}, scanRefused, ticketScanRefused)
	e.refused("group_by", map[string]any{"class_name": "Ticket", "field": "status", "where": map[string]any{"priority": map[string]any{"$ne": 1}}}, scanRefused, ticketScanRefused)
	out := e.ok("group_by", map[string]any{"class_name": "Ticket", "field": "status", "where": map[string]any{"project": "pApollo001"}})
	if d := cmp.Diff([]any{group("closed", 1), group("open", 1)}, out["groups"]); d != "" {
		t.Fatalf("an indexed where (-want +got):\n%s", d)
	}
	e.withCatalog(allowScans("Ticket")).ok("group_by", map[string]any{"class_name": "Ticket", "field": "status"})
}
