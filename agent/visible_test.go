package agent_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/fixture"
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
