package agent_test

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// noteSchema is a class whose view differs by who asks: a field
// protected from all but bob, a pointer into a class an agent may be
// denied, and extra, when given, a field it gains later.
func noteSchema(extra string) parse.Schema {
	all := &parse.OpPerm{Entries: map[string]bool{"*": true}}
	sch := parse.Schema{
		ClassName: "Note",
		Fields: map[string]parse.Field{
			"title":   {Type: parse.TypeString},
			"secret":  {Type: parse.TypeString},
			"project": {Type: parse.TypePointer, TargetClass: "Project"},
		},
		CLP: parse.CLP{Get: all, Find: all, Count: all,
			ProtectedFields: map[string][]string{"*": {"secret"}, fixture.Bob: {}}},
	}
	if extra != "" {
		sch.Fields[extra] = parse.Field{Type: parse.TypeNumber}
	}
	return sch
}

// The view a Class hands out is shared between calls that see the class
// the same way, and is always the view Scope.Schema builds afresh: agents
// that differ in what they may see of a class (the master key, users a
// protected field hides from, an operator's field allowlist, a denied
// pointer target) never get one another's view, in any order, and a class
// that changes is seen as it is now.
func TestSharedClassViews(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	if _, ok := st.(store.SharedSchemas); !ok {
		t.Fatal("the fixture store shares no schemas: the views are not shared, the test proves nothing")
	}
	if err := st.CreateClass(ctx, noteSchema("")); err != nil {
		t.Fatal(err)
	}
	user := func(id string) *agent.Agent {
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: id})
	}
	allowlisted := user(fixture.Alice)
	allowlisted.Policy.Catalog = &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Note": {AgentFields: []string{"title"}}}}
	noProjects := user(fixture.Alice)
	noProjects.Policy.Classes = agent.NameFilter{Except: []string{"Project"}}
	every := func(string) bool { return true }
	agents := []struct {
		name string
		a    func() *agent.Agent
		sees func(field string) bool
	}{
		{"the master key", func() *agent.Agent { return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}) }, every},
		{"alice", func() *agent.Agent { return user(fixture.Alice) }, every},
		// Every field, as the master key, but not the protectedFields.
		{"bob", func() *agent.Agent { return user(fixture.Bob) }, every},
		// The same view as alice's: shared with hers.
		{"anonymous", func() *agent.Agent { return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}) }, every},
		{"alice, allowlisted fields", func() *agent.Agent { return allowlisted }, func(f string) bool { return f == "title" }},
		{"alice, Project denied", func() *agent.Agent { return noProjects }, every},
	}
	// Forward, backward, forward: each agent asks after each other.
	order := append(append(slices.Clone(agents), agents...), agents...)
	slices.Reverse(order[len(agents) : 2*len(agents)])
	check := func(extra string) {
		t.Helper()
		for round := 1; ; round++ {
			before := noteVersion(t, st)
			views := map[string][]parse.Schema{}
			for _, c := range order {
				s := agent.NewScope(c.a(), st)
				cls, err := s.Class(ctx, "Note")
				if err != nil {
					t.Fatal(err)
				}
				want, err := s.Schema(ctx, "Note")
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(cls.Schema, want) {
					t.Fatalf("%s: Class.Schema is not the agent's view:\n got %+v\nwant %+v", c.name, cls.Schema, want)
				}
				if _, ok := want.Fields[extra]; extra != "" && ok != c.sees(extra) {
					t.Fatalf("%s: the view has %s: %t", c.name, extra, ok)
				}
				views[c.name] = append(views[c.name], cls.Schema)
			}
			if !sameFields(before, noteVersion(t, st)) {
				// A reload fell inside the round: views built on either
				// side of it are rightly not shared. Ask again.
				if round == 100 {
					t.Fatal("the store reloaded its schemas during each of 100 rounds")
				}
				continue
			}
			for _, a := range agents {
				for _, v := range views[a.name][1:] {
					if !sameFields(views[a.name][0], v) {
						t.Errorf("%s: a second call built its view again instead of sharing it", a.name)
					}
				}
			}
			// Agents whose views are equal share one; others never do.
			for _, a := range agents {
				for _, b := range agents {
					va, vb := views[a.name][0], views[b.name][0]
					equal := reflect.DeepEqual(va, vb)
					if shared := sameFields(va, vb); shared != equal {
						t.Errorf("%s and %s: views equal %t, shared %t", a.name, b.name, equal, shared)
					}
				}
			}
			return
		}
	}
	check("")
	// The class changes: every agent sees it as it is now.
	if err := st.DeleteClass(ctx, "Note"); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateClass(ctx, noteSchema("added")); err != nil {
		t.Fatal(err)
	}
	check("added")
}

// A caller that changes a shared view is caught, in test binaries, by the
// next call that is handed the same view: what one call puts into a view
// shared with others must not reach them.
func TestSharedClassViewChanged(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	if err := st.CreateClass(ctx, noteSchema("")); err != nil {
		t.Fatal(err)
	}
	alice := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: fixture.Alice})
	for round := 1; ; round++ {
		before := noteVersion(t, st)
		cls, err := agent.NewScope(alice, st).Class(ctx, "Note")
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := cls.Schema.Fields["secret"]; ok {
			t.Fatal("alice sees the protected field: the case proves nothing")
		}
		cls.Schema.Fields["secret"] = parse.Field{Type: parse.TypeString} // a caller's bug
		var again *agent.Class
		recovered := func() (r any) {
			defer func() { r = recover() }()
			again, _ = agent.NewScope(alice, st).Class(ctx, "Note")
			return nil
		}()
		if !sameFields(before, noteVersion(t, st)) {
			// The store reloaded its schemas in between: the second call
			// rightly built a view of its own. Ask again.
			if round == 100 {
				t.Fatal("the store reloaded its schemas during each of 100 rounds")
			}
			continue
		}
		if recovered == nil {
			t.Fatalf("the changed view was handed out again, with fields %v", slices.Sorted(maps.Keys(again.Schema.Fields)))
		}
		if msg := fmt.Sprint(recovered); !strings.Contains(msg, "shared class view") {
			t.Fatalf("the second call panicked with %q", msg)
		}
		break
	}
	// The next test must not start from the changed view.
	if err := st.DeleteClass(ctx, "Note"); err != nil {
		t.Fatal(err)
	}
}

// noteVersion is the store's shared schema of Note: while it is the same
// map, the store has not reloaded its schemas (it does at least once a
// second, and each reload is a new map, so views are built again).
func noteVersion(t *testing.T, st store.Store) parse.Schema {
	t.Helper()
	sch, err := st.(store.SharedSchemas).SharedSchema(context.Background(), "Note")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// sameFields reports whether a and b are one shared view (the same
// Fields map), not merely equal ones.
func sameFields(a, b parse.Schema) bool {
	return reflect.ValueOf(a.Fields).Pointer() == reflect.ValueOf(b.Fields).Pointer()
}
