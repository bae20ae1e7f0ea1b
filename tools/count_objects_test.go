package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// The count of the objects matching a where, as the caller may see them.
func TestCountObjects(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	for _, c := range []struct {
		where any
		want  float64
	}{
		{nil, 5},
		{map[string]any{"status": "open"}, 3},
		{map[string]any{"priority": map[string]any{"$gte": 2}}, 3},
		{map[string]any{"project": "pApollo001"}, 2},
		{map[string]any{"project": map[string]any{"$exists": false}}, 1},
		{`{"status":"closed"}`, 1},
	} {
		args := map[string]any{"class_name": "Ticket"}
		if c.where != nil {
			args["where"] = c.where
		}
		if d := cmp.Diff(map[string]any{"class_name": "Ticket", "count": c.want}, e.ok("count_objects", args)); d != "" {
			t.Errorf("where %v (-want +got):\n%s", c.where, d)
		}
	}
}

// A user counts the rows its ACLs let it read; a class whose permissions
// refuse it is refused, and an unknown class reads as not found.
func TestCountObjectsACL(t *testing.T) {
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001"))
	if got := e.ok("count_objects", map[string]any{"class_name": "Ticket"})["count"]; got != float64(4) {
		t.Fatalf("alice's tickets: %v", got)
	}
	if got := e.ok("count_objects", map[string]any{"class_name": "Project"})["count"]; got != float64(1) {
		t.Fatalf("alice's projects: %v", got)
	}
	e.refused("count_objects", map[string]any{"class_name": "Payroll"}, tools.CodePermissionDenied, "class-level permissions of Payroll do not allow count")
	e.refused("count_objects", map[string]any{"class_name": "Nope"}, classNotFound, `class "Nope" was not found`)
}

// The agent's row filters and the class's canonical filter narrow the
// count; the canonical filter can be set aside, the agent's cannot.
func TestCountObjectsFilters(t *testing.T) {
	a := master(agent.Readonly)
	a.Policy.Filters = []agent.ClassFilters{{"Ticket": {"priority": map[string]any{"$lt": 5}}}}
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {CanonicalFilter: map[string]any{"status": "open"}}}}
	e := newEnv(t, a).withCatalog(cat)
	if got := e.ok("count_objects", map[string]any{"class_name": "Ticket"})["count"]; got != float64(2) { // t1, t3
		t.Fatalf("both filters: %v", got)
	}
	if got := e.ok("count_objects", map[string]any{"class_name": "Ticket", "apply_canonical_filter": false})["count"]; got != float64(4) { // t5 stays out
		t.Fatalf("without the canonical filter: %v", got)
	}
}

// A bad where is refused naming what is wrong.
func TestCountObjectsArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.refused("count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, fieldDenied, `where.nope: "nope" is not a field of Ticket`)
	e.refused("count_objects", map[string]any{"class_name": "Ticket", "where": "status=open"}, tools.CodeInvalidArgument, `argument "where" must be a JSON object`)
	e.refused("count_objects", map[string]any{"class_name": "Ticket", "apply_canonical_filter": "no"}, tools.CodeInvalidArgument, `argument "apply_canonical_filter" must be true or false`)
	e.refused("count_objects", map[string]any{"class_name": "Ticket", "limit": 3}, tools.CodeInvalidArgument, `unknown argument "limit"`)
}
