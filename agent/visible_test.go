package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Visibility.Key groups live subscribers: equal Keys must mean the same
// rule, so agents that differ in anything a count depends on get
// different Keys, and agents built alike (one per request) share one.
func TestVisibilityKey(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	user := func(id string, roles ...string) agent.Identity {
		return agent.Identity{Mode: agent.AuthUser, UserID: id, Roles: roles}
	}
	withFilter := func(a *agent.Agent, f agent.ClassFilters) *agent.Agent {
		a.Policy.Filters = append(a.Policy.Filters, f)
		return a
	}
	key := func(a *agent.Agent, class string) string {
		t.Helper()
		v, err := agent.NewScope(a, st).Visibility(ctx, class)
		if err != nil {
			t.Fatal(err)
		}
		return v.Key()
	}
	base := key(agent.New(agent.Readonly, user(fixture.Alice)), "Ticket")
	if again := key(agent.New(agent.Write, user(fixture.Alice)), "Ticket"); again != base {
		t.Errorf("two agents for alice (one per request) got different keys:\n%s\n%s", base, again)
	}
	for name, a := range map[string]*agent.Agent{
		"another user":               agent.New(agent.Readonly, user(fixture.Bob)),
		"the same user, with a role": agent.New(agent.Readonly, user(fixture.Alice, "staff")),
		"the master key":             agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}),
		"a row filter":               withFilter(agent.New(agent.Readonly, user(fixture.Alice)), agent.ClassFilters{"Ticket": {"status": "open"}}),
		"another filter value":       withFilter(agent.New(agent.Readonly, user(fixture.Alice)), agent.ClassFilters{"Ticket": {"status": "closed"}}),
		"a default filter":           withFilter(agent.New(agent.Readonly, user(fixture.Alice)), agent.ClassFilters{agent.DefaultFilterKey: {"priority": 1.0}}),
	} {
		if k := key(a, "Ticket"); k == base {
			t.Errorf("%s: same key as alice alone (%s)", name, k)
		}
	}
	if k := key(agent.New(agent.Readonly, user(fixture.Alice)), "Project"); k == base {
		t.Errorf("another class: same key")
	}
}

// Visibility.Sees decides in memory exactly what the database decides
// for Count, and Scope.ReachesID asks the database the same question, for
// agents with users, roles, filters, the master key and none, on rows with
// every kind of ACL (write-only entries included). A rule that needs a
// sub-query cannot be decided in memory: Sees refuses, ReachesID answers.
func TestVisibilityAgreesWithTheDatabase(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	acl := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	r, w, rw := map[string]any{"read": true}, map[string]any{"write": true}, map[string]any{"read": true, "write": true}
	if err := st.Create(ctx, "Ticket", []parse.Object{
		{"objectId": "v000000001", "title": "alice writes", "status": "open", "ACL": acl(fixture.Alice, w)},
		{"objectId": "v000000002", "title": "public writes", "status": "open", "ACL": acl("*", w)},
		{"objectId": "v000000003", "title": "alice reads", "status": "closed", "ACL": acl(fixture.Alice, r, fixture.Bob, w)},
		{"objectId": "v000000004", "title": "staff", "status": "open", "ACL": acl("role:staff", rw)},
		{"objectId": "v000000005", "title": "staff writes", "status": "open", "ACL": acl("role:staff", w, "*", map[string]any{"read": false})},
	}); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Ticket", Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	user := func(id string, roles ...string) agent.Identity {
		return agent.Identity{Mode: agent.AuthUser, UserID: id, Roles: roles}
	}
	filtered := agent.New(agent.Readonly, user(fixture.Alice))
	filtered.Policy.Filters = []agent.ClassFilters{{"Ticket": {"status": "open"}}}
	sub := agent.New(agent.Readonly, user(fixture.Bob))
	sub.Policy.Filters = []agent.ClassFilters{{"Ticket": {"project": map[string]any{"$inQuery": map[string]any{"className": "Project", "where": map[string]any{"name": "Apollo"}}}}}}
	for name, a := range map[string]*agent.Agent{
		"alice":            agent.New(agent.Readonly, user(fixture.Alice)),
		"bob":              agent.New(agent.Readonly, user(fixture.Bob)),
		"a staff role":     agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"staff"}}),
		"anonymous":        agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}),
		"the master key":   agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}),
		"alice, open only": filtered,
		"bob, a sub-query": sub,
	} {
		scope := agent.NewScope(a, st)
		v, err := scope.Visibility(ctx, "Ticket")
		if err != nil {
			t.Fatal(err)
		}
		seen := 0
		for _, row := range rows {
			id := row["objectId"].(string)
			q := &query.Query{Class: "Ticket", Where: query.Cmp{Path: query.Path{Field: "objectId", Type: parse.TypeString}, Op: query.OpEq, Value: id}}
			n, err := scope.Count(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			reaches, err := scope.ReachesID(ctx, "Ticket", id, parse.OpCount)
			if err != nil {
				t.Fatal(err)
			}
			if reaches != (n == 1) {
				t.Errorf("%s, %s: ReachesID %t, Count %d", name, id, reaches, n)
			}
			sees, err := v.Sees(row)
			if !v.InMemory() {
				if sees || !errors.Is(err, query.ErrNotMatchable) {
					t.Errorf("%s, %s: Sees = %t, %v; want false and ErrNotMatchable", name, id, sees, err)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if sees != (n == 1) {
				t.Errorf("%s, %s (ACL %v): Sees %t, Count %d", name, id, row["ACL"], sees, n)
			}
			if sees {
				seen++
			}
		}
		if v.InMemory() && (seen == 0 || seen == len(rows)) && name != "the master key" {
			t.Errorf("%s sees %d of %d rows: the case proves little", name, seen, len(rows))
		}
	}
	if v, _ := agent.NewScope(sub, st).Visibility(ctx, "Ticket"); v.InMemory() {
		t.Error("a sub-query filter was decided in memory")
	}
	if ok, err := agent.NewScope(sub, st).ReachesID(ctx, "Ticket", "t000000001", parse.OpFind); !ok || err != nil {
		t.Errorf("bob with the Apollo sub-query: ReachesID(t000000001, find) = %t, %v; want true", ok, err)
	}
	if ok, err := agent.NewScope(sub, st).ReachesID(ctx, "Ticket", "t000000003", parse.OpFind); ok || err != nil {
		t.Errorf("bob with the Apollo sub-query: ReachesID(t000000003, find) = %t, %v; want false (a Borealis ticket)", ok, err)
	}
	if ok, err := agent.NewScope(sub, st).ReachesID(ctx, "_Session", "x", parse.OpCount); ok || err != nil {
		t.Errorf("a hidden class: ReachesID = %t, %v; want false, nil", ok, err)
	}
}
