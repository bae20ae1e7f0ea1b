package agent_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
)

// Which classes an agent cannot reach, whatever its class filters say:
// _AccessToken from everyone, _AgentAudit from all but the master key,
// Parse Server's internal classes from everyone, each unless the
// operator's catalog says otherwise (but never _AccessToken); and
// describe_agent lists exactly the classes hidden from that agent.
func TestHiddenClasses(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{
		"_Session":     {Hidden: agent.HiddenNever},
		"_AccessToken": {Hidden: agent.HiddenNever},
		"Ticket":       {Hidden: agent.HiddenAlways},
		"Project":      {Hidden: agent.HiddenExceptMaster},
		"_AgentAudit":  {Hidden: agent.HiddenAlways},
	}}
	user := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: fixture.Alice})
	master := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster})
	catalogued := func(a *agent.Agent) *agent.Agent {
		c := *a
		c.Policy.Catalog = cat
		return &c
	}
	for _, c := range []struct {
		name   string
		a      *agent.Agent
		hidden []string
		shown  []string
	}{
		{"a user", user,
			[]string{"_AccessToken", "_AgentAudit", "_Session", "_Hooks"},
			[]string{"Ticket", "Project", "_User", "_Role"}},
		{"the master key", master,
			[]string{"_AccessToken", "_Session", "_Hooks"},
			[]string{"_AgentAudit", "Ticket", "Project", "_User"}},
		{"a user, with the catalog", catalogued(user),
			[]string{"_AccessToken", "_AgentAudit", "Ticket", "Project", "_Hooks"},
			[]string{"_Session", "_User"}},
		{"the master key, with the catalog", catalogued(master),
			[]string{"_AccessToken", "_AgentAudit", "Ticket", "_Hooks"},
			[]string{"_Session", "Project", "_User"}},
	} {
		s := agent.NewScope(c.a, st)
		for _, class := range c.hidden {
			if s.Accessible(class) {
				t.Errorf("%s: %s is accessible", c.name, class)
			}
		}
		for _, class := range c.shown {
			if !s.Accessible(class) {
				t.Errorf("%s: %s is hidden", c.name, class)
			}
		}
		d, err := s.Describe(ctx, nil, agent.Gates{})
		if err != nil {
			t.Fatal(err)
		}
		for _, class := range c.hidden {
			if !slices.Contains(d.HiddenClasses, class) {
				t.Errorf("%s: describe's hidden classes %v lack %s", c.name, d.HiddenClasses, class)
			}
		}
		for _, class := range c.shown {
			if slices.Contains(d.HiddenClasses, class) {
				t.Errorf("%s: describe's hidden classes %v list %s, which the agent sees", c.name, d.HiddenClasses, class)
			}
		}
		if !slices.IsSorted(d.HiddenClasses) {
			t.Errorf("%s: hidden classes not sorted: %v", c.name, d.HiddenClasses)
		}
	}
}
