package agent

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// viewKeySide is one agent's way of seeing a class: the fields the
// operator's allowlist (ClassMeta.AgentFields) leaves it, and so the ones
// it does not see.
type viewKeySide struct {
	class  string
	master bool
	sees   []string // the user fields of the view, the allowlist
	hides  []string // the other user fields of the class
}

// The shared views' key (Scope.viewKey) tells apart every two ways of
// seeing a class, whatever bytes the stored names hold: a name holding a
// NUL is not the names on either side of it, names run together are not
// one name, and a class name does not run into the master flag or the
// field names. The schema API refuses such names, so the classes are
// written into `_SCHEMA` directly, as a database written by other means
// may hold them. A key that ran names together (NUL-joined, or plainly
// concatenated) would hand one agent the view another built, with fields
// it must not see.
func TestViewKeyOddNames(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		fields []string // the class's user fields
		x, y   viewKeySide
	}{
		{
			// Joined with NUL, both are "a\x00b".
			name:   "a NUL inside a name",
			fields: []string{"a\x00b", "a", "b", "title"},
			x:      viewKeySide{class: "NulInName", sees: []string{"a", "b", "title"}, hides: []string{"a\x00b"}},
			y:      viewKeySide{class: "NulInName", sees: []string{"a\x00b", "title"}, hides: []string{"a", "b"}},
		},
		{
			// Each name ended with NUL, both are "a\x00\x00b\x00"; joined
			// with NUL, "a\x00\x00b".
			name:   "a name ending in NUL",
			fields: []string{"a\x00\x00b", "a\x00", "b", "title"},
			x:      viewKeySide{class: "NulAtEnd", sees: []string{"a\x00", "b", "title"}, hides: []string{"a\x00\x00b"}},
			y:      viewKeySide{class: "NulAtEnd", sees: []string{"a\x00\x00b", "title"}, hides: []string{"a\x00", "b"}},
		},
		{
			// Run together, both are "ab".
			name:   "names run together",
			fields: []string{"ab", "a", "b", "title"},
			x:      viewKeySide{class: "RunTogether", sees: []string{"a", "b", "title"}, hides: []string{"ab"}},
			y:      viewKeySide{class: "RunTogether", sees: []string{"ab", "title"}, hides: []string{"a", "b"}},
		},
		{
			// The class name into the field names: "A"+"Bc" and
			// "AB"+"c" run together are one (the master flag first).
			name:   "class name and field name",
			fields: []string{"Bc", "c", "title"},
			x:      viewKeySide{class: "A", sees: []string{"c", "title"}, hides: []string{"Bc"}},
			y:      viewKeySide{class: "AB", sees: []string{"Bc", "title"}, hides: []string{"c"}},
		},
		{
			// The class name into the master flag: "Am"+"-"+"x" and
			// "A"+"m"+"-x" run together are one.
			name:   "class name and master flag",
			fields: []string{"x", "-x", "title"},
			x:      viewKeySide{class: "Am", sees: []string{"-x", "title"}, hides: []string{"x"}},
			y:      viewKeySide{class: "A", master: true, sees: []string{"x", "title"}, hides: []string{"-x"}},
		},
	}

	// Every side's key differs from every other side's, the class's store
	// schema aside (the shared views also check it, so a key shared by
	// two classes would only build views again, not hand out a wrong
	// one; the key alone must still not be shared).
	keys := map[string]string{}
	for _, c := range cases {
		st := oddStore(t, c.fields, c.x.class, c.y.class)
		for _, side := range []viewKeySide{c.x, c.y} {
			s := NewScope(viewKeyAgent(side), st)
			raw, err := s.raw(ctx, side.class)
			if err != nil {
				t.Fatal(err)
			}
			prot := s.protected(raw)
			var hides []string
			for name, f := range raw.Fields {
				if !s.shows(raw, prot, name, f) {
					hides = append(hides, name)
				}
			}
			slices.Sort(hides)
			if want := slices.Sorted(slices.Values(side.hides)); !slices.Equal(hides, want) {
				t.Fatalf("%s: %s hides %q, want %q: the case proves nothing", c.name, side.class, hides, want)
			}
			key := string(s.viewKey(nil, raw, prot))
			who := fmt.Sprintf("%s: class %q, master %t, hiding %q", c.name, side.class, side.master, side.hides)
			if other, ok := keys[key]; ok {
				t.Errorf("%s has the key of %s: %q", who, other, key)
			}
			keys[key] = who
		}
	}

	// Through Scope.Class: each agent is handed the view with exactly the
	// fields it sees, never the other's, whichever asks first; a second
	// call shares the first's view (the cache is in play).
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := oddStore(t, c.fields, c.x.class, c.y.class)
			sides := []viewKeySide{c.x, c.y}
			agents := []*Agent{viewKeyAgent(c.x), viewKeyAgent(c.y)}
			for round := 1; ; round++ {
				before := rawFields(t, st, c.x.class, c.y.class)
				got := [2][]parse.Schema{}
				for _, i := range []int{0, 1, 1, 0, 0, 1} {
					side := sides[i]
					s := NewScope(agents[i], st)
					cls, err := s.Class(ctx, side.class)
					if err != nil {
						t.Fatal(err)
					}
					if fields := userFields(cls.Schema); !slices.Equal(fields, slices.Sorted(slices.Values(side.sees))) {
						t.Fatalf("%s, hiding %q: the view has the fields %q, want %q", side.class, side.hides, fields, side.sees)
					}
					want, err := s.Schema(ctx, side.class)
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(cls.Schema, want) {
						t.Fatalf("%s, hiding %q: Class.Schema is not the agent's view:\n got %+v\nwant %+v", side.class, side.hides, cls.Schema, want)
					}
					got[i] = append(got[i], cls.Schema)
				}
				if !maps.EqualFunc(before, rawFields(t, st, c.x.class, c.y.class), sameMap) {
					// The store reloaded its schemas in between: views
					// built on either side are rightly not shared.
					if round == 100 {
						t.Fatal("the store reloaded its schemas during each of 100 rounds")
					}
					continue
				}
				for i, views := range got {
					for _, v := range views[1:] {
						if !sameMap(views[0].Fields, v.Fields) {
							t.Errorf("%s, hiding %q: a second call built its view again instead of sharing it (another view took its key, or the views are not cached and the case proves nothing)", sides[i].class, sides[i].hides)
						}
					}
				}
				if sameMap(got[0][0].Fields, got[1][0].Fields) {
					t.Errorf("hiding %q and hiding %q: one view handed to both", c.x.hides, c.y.hides)
				}
				return
			}
		})
	}
}

// oddStore is a new SQLite store holding classes, each with the user
// fields given, written into `_SCHEMA` directly: the schema API would
// refuse the names.
func oddStore(t *testing.T, fields []string, classes ...string) store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "odd.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	all := &parse.OpPerm{Entries: map[string]bool{"*": true}}
	for _, class := range slices.Compact(slices.Clone(classes)) {
		sch := parse.Schema{ClassName: class, Fields: map[string]parse.Field{},
			CLP: parse.CLP{Get: all, Find: all, Count: all}}
		for _, name := range fields {
			sch.Fields[name] = parse.Field{Type: parse.TypeString}
		}
		raw, err := parse.MarshalStoredSchema(sch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.DB().ExecContext(ctx, `INSERT INTO "_SCHEMA" ("className", "schema") VALUES (?, ?)`, class, string(raw)); err != nil {
			t.Fatal(err)
		}
	}
	// The store sees the rows once its schema cache is reloaded (at
	// once if it holds none yet, else within a second).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var missing []string
		for _, class := range classes {
			sch, err := st.SharedSchema(ctx, class)
			if err != nil {
				missing = append(missing, class+": "+err.Error())
				continue
			}
			for _, name := range fields {
				if _, ok := sch.Fields[name]; !ok {
					missing = append(missing, fmt.Sprintf("%s.%q", class, name))
				}
			}
		}
		if len(missing) == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the store does not show %q", missing)
		}
	}
}

// viewKeyAgent is an agent that sees of side's class the fields side
// sees: an anonymous user's, or the master key's.
func viewKeyAgent(side viewKeySide) *Agent {
	id := Identity{Mode: AuthAnonymous}
	if side.master {
		id = Identity{Mode: AuthMaster}
	}
	a := New(Readonly, id)
	a.Policy.Catalog = &Catalog{Classes: map[string]*ClassMeta{side.class: {AgentFields: side.sees}}}
	return a
}

// rawFields is the store's shared schema of each class, by its Fields
// map: while the maps are the same, the store has not reloaded.
func rawFields(t *testing.T, st store.Store, classes ...string) map[string]map[string]parse.Field {
	t.Helper()
	out := map[string]map[string]parse.Field{}
	for _, class := range classes {
		sch, err := st.(store.SharedSchemas).SharedSchema(context.Background(), class)
		if err != nil {
			t.Fatal(err)
		}
		out[class] = sch.Fields
	}
	return out
}

// userFields is the view's fields but the system ones, sorted.
func userFields(sch parse.Schema) []string {
	var out []string
	for name := range sch.Fields {
		if !parse.IsSystemField(name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}
