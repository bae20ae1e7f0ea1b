package tools_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// The newest objects first, DefaultSampleLimit of them unless limit says.
func TestGetSampleObjects(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("get_sample_objects", map[string]any{"class_name": "Ticket"})
	if d := cmp.Diff([]string{t5, t4, t3, t2, t1}, ids(t, out["results"])); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	if out["sample_count"] != float64(5) || out["class_name"] != "Ticket" {
		t.Fatalf("%v", out)
	}
	out = e.ok("get_sample_objects", map[string]any{"class_name": "Project", "limit": 2})
	if d := cmp.Diff([]string{"pComet0003", "pBorealis2"}, ids(t, out["results"])); d != "" {
		t.Fatalf("limit 2 (-want +got):\n%s", d)
	}
}

// A user samples what it may read; a hidden field is not in the samples.
func TestGetSampleObjectsACL(t *testing.T) {
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Ticket": {AgentFields: []string{"title"}}}}
	e := newEnv(t, asUser(agent.Readonly, "uAlice0001")).withCatalog(cat)
	out := e.ok("get_sample_objects", map[string]any{"class_name": "Ticket", "limit": 2})
	if d := cmp.Diff([]string{t4, t3}, ids(t, out["results"])); d != "" {
		t.Fatalf("(-want +got):\n%s", d)
	}
	mustNotMention(t, out, `"status"`, `"priority"`, "Hidden task")
	e.refused("get_sample_objects", map[string]any{"class_name": "Payroll"}, tools.CodePermissionDenied, "class-level permissions of Payroll")
}

func TestGetSampleObjectsArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.refused("get_sample_objects", map[string]any{"class_name": "Ticket", "limit": 21}, tools.CodeInvalidArgument, `argument "limit" must be between 1 and 20, got 21`)
	e.refused("get_sample_objects", map[string]any{"class_name": "Ticket", "limit": 0}, tools.CodeInvalidArgument, `argument "limit" must be between 1 and 20, got 0`)
	e.refused("get_sample_objects", map[string]any{"class_name": "Nope"}, classNotFound, `class "Nope" was not found`)
	e.refused("get_sample_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{}}, tools.CodeInvalidArgument, `unknown argument "where"`)
}

// With full scans refused, a sample is judged by the plan of its find
// (the newest first): on SQLite that walks the class, so a class over the
// threshold is refused unless allowed; a smaller one is sampled.
func TestGetSampleObjectsFullScanGuard(t *testing.T) {
	e := newEnv(t, master(agent.Readonly)).refusingScans(2)
	e.refused("get_sample_objects", map[string]any{"class_name": "Ticket"}, scanRefused, ticketScanRefused)
	e.withCatalog(allowScans("Ticket")).ok("get_sample_objects", map[string]any{"class_name": "Ticket"})
	e.refusingScans(5).ok("get_sample_objects", map[string]any{"class_name": "Ticket"})
}
