package mcpserver_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
)

func textSearch(term string) map[string]any {
	return map[string]any{"$text": map[string]any{"$search": map[string]any{"$term": term}}}
}

// A $text search is a where constraint like any other: through the real
// client, on both SQL stores, it sees only the rows the caller's ACL
// admits, and a field or class the agent may not see is refused exactly
// as one that does not exist, so a search never tells that it is there.
func TestTextSearchGoverned(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) {
			st := b.store(t)
			root := connect(t, newServer(t, st, agent.Readonly, master), "")
			alice := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: alice}), "")
			where := map[string]any{"title": textSearch("leaks | tasks")}

			// "Hidden task" has an empty ACL: the master key finds it, alice
			// does not, and does not count it.
			if got := ids(ok(t, root, "query_class", map[string]any{"class_name": "Ticket", "where": where})["results"]); !slices.Equal(got, []string{"t000000001", "t000000005"}) {
				t.Errorf("master: %v", got)
			}
			if got := ids(ok(t, alice, "query_class", map[string]any{"class_name": "Ticket", "where": where})["results"]); !slices.Equal(got, []string{"t000000001"}) {
				t.Errorf("alice: %v, want only the ticket her ACL admits", got)
			}
			if n := ok(t, alice, "count_objects", map[string]any{"class_name": "Ticket", "where": where})["count"]; n != float64(1) {
				t.Errorf("alice counts %v, want 1", n)
			}

			// _User.email is protected from other users: searching it reads
			// as searching a field that does not exist.
			protected := fails(t, alice, "query_class", map[string]any{"class_name": "_User", "where": map[string]any{"email": textSearch("example")}}, "access_denied")["error"].(string)
			plain := fails(t, alice, "query_class", map[string]any{"class_name": "_User", "where": map[string]any{"email": "x"}}, "access_denied")["error"].(string)
			missing := fails(t, alice, "query_class", map[string]any{"class_name": "_User", "where": map[string]any{"emale": textSearch("example")}}, "access_denied")["error"].(string)
			if protected != plain || protected != strings.ReplaceAll(missing, "emale", "email") {
				t.Errorf("a $text on a protected field reads otherwise than an unknown one:\n %q\n %q\n %q", protected, plain, missing)
			}
			if n := ok(t, root, "count_objects", map[string]any{"class_name": "_User", "where": map[string]any{"email": textSearch("alice@example.com | bob@example.com")}})["count"]; n != float64(2) {
				t.Errorf("master counts %v users by email, want 2", n)
			}
		})
	}
}

// A class the policy hides is refused to a $text search as a class that
// does not exist; a search on the tenant field naming another tenant is
// refused as any such constraint.
func TestTextSearchHiddenClassAndTenant(t *testing.T) {
	st := fixtureStore(t)
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{
		"Project": {Hidden: agent.HiddenAlways},
		"Ticket":  {Tenant: &agent.TenantScope{Field: "status"}},
	}}
	user := agent.Identity{Mode: agent.AuthUser, UserID: bob}
	cs := govClient(t, st, allGates, agent.Readonly, user, agent.Policy{Catalog: cat, TenantID: "open"})

	hidden := fails(t, cs, "query_class", map[string]any{"class_name": "Project", "where": map[string]any{"name": textSearch("apollo")}}, "access_denied")["error"]
	none := fails(t, cs, "query_class", map[string]any{"class_name": "Nowhere", "where": map[string]any{"name": textSearch("apollo")}}, "access_denied")["error"]
	if hidden != strings.ReplaceAll(none.(string), "Nowhere", "Project") {
		t.Errorf("hidden class: %q, unknown class: %q", hidden, none)
	}

	refused(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": textSearch("closed")}}, "access_denied", "tenant_spoof",
		"the constraint on Ticket.status names another tenant than this agent's")
	if got := ids(ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": textSearch("leak | survey | task")}})["results"]); !slices.Equal(got, []string{"t000000001", "t000000003"}) {
		t.Errorf("tenant open: %v", got)
	}
}

// The search tools through the client give the same answers on both SQL
// stores (the ranking, the suggestions and the facet counts), each as the
// caller's ACL admits.
func TestSearchToolsAgreeOnBothStores(t *testing.T) {
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak | survey | task | calc"}},
		{"text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak | survey | task", "keys": []string{"status"}, "limit": 1}},
		{"autocomplete", map[string]any{"class_name": "Ticket", "field": "status", "prefix": "O"}},
		{"faceted_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak | survey | task | calc", "facets": []string{"status", "project"}, "limit": 2}},
	}
	answers := map[string][]string{}
	for _, b := range sqlBackends {
		st := b.store(t)
		for _, who := range []agent.Identity{master, {Mode: agent.AuthUser, UserID: alice}} {
			cs := connect(t, newServer(t, st, agent.Readonly, who), "")
			for _, c := range calls {
				answers[b.name] = append(answers[b.name], fmt.Sprint(ok(t, cs, c.tool, c.args)))
			}
		}
	}
	if !slices.Equal(answers["sqlite"], answers["postgres"]) {
		t.Fatalf("the stores disagree:\n sqlite   %v\n postgres %v", answers["sqlite"], answers["postgres"])
	}
	if a := answers["sqlite"]; a[0] == a[4] || !strings.Contains(a[0], "t000000005") || strings.Contains(a[4], "t000000005") {
		t.Fatalf("master and alice read the same rows: %v", a)
	}
}
