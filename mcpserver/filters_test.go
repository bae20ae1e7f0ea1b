package mcpserver_test

import (
	"testing"

	"github.com/parsemcp/parsemcp/agent"
)

// An agent filter's class entry overrides the ":default" entry key by key
// (its own status wins), the default applies where the class has every
// field it names, and not where the class has none of them.
func TestAgentFilterClassEntryWins(t *testing.T) {
	st := fixtureStore(t)
	pol := agent.Policy{Filters: []agent.ClassFilters{{
		agent.DefaultFilterKey: {"status": "open", "priority": map[string]any{"$lte": 2}},
		"Ticket":               {"status": "closed"},
	}}}
	cs := govClient(t, st, agent.Gates{}, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}, pol)
	// Ticket: status closed (its own) and priority ≤ 2 (the default's
	// other key): t000000002 is closed but priority 3; none left.
	if out := ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"}); out["count"] != float64(0) {
		t.Fatalf("Ticket count %v, want 0 (closed and priority ≤ 2)", out["count"])
	}
	// Without the priority key, the one closed ticket.
	pol.Filters = []agent.ClassFilters{{agent.DefaultFilterKey: {"status": "open"}, "Ticket": {"status": "closed"}}}
	cs = govClient(t, st, agent.Gates{}, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}, pol)
	out := ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "keys": []string{"status"}})
	if rows := out["results"].([]any); len(rows) != 1 || rows[0].(map[string]any)["objectId"] != "t000000002" {
		t.Fatalf("Ticket rows %v, want only the closed t000000002", rows)
	}
	// Project has no status: the default does not apply; bob sees Apollo
	// and his Borealis.
	if out := ok(t, cs, "count_objects", map[string]any{"class_name": "Project"}); out["count"] != float64(2) {
		t.Fatalf("Project count %v, want 2", out["count"])
	}
}
