// Package storetest is the conformance suite every store.Store backend
// passes. A backend's test calls Run with a function that opens a fresh,
// empty store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store { return openEmpty(t) })
//	}
//
// The expected rows are written by hand from Parse's semantics (Parse Server
// on MongoDB, as its REST API returns them), not derived from any backend.
// A behaviour difference between backends is a bug in one of them. The
// Match group (RunMatch) instead holds each backend's Find to query.Match,
// the in-memory evaluator, on a few hundred constraints.
package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// Run runs the whole suite. open returns a fresh, empty store (system
// classes _User/_Role/_Session already present) for each subtest; Run closes
// it when the subtest ends (register any further teardown with t.Cleanup in
// open: it runs after the close).
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	RunSkipping(t, open, nil)
}

// RunSkipping runs the suite but skips the subtests named in skip
// ("Group/Name", e.g. "Schema/ClassExists") with the reason given: for a
// backend that cannot have a behaviour at all (a remote API with no form
// for it). Every skip is listed where the backend calls this, with its
// reason; a name that matches no subtest fails the run, so the list
// cannot go stale.
func RunSkipping(t *testing.T, open func(t *testing.T) store.Store, skip map[string]string) {
	groups := []struct {
		name  string
		tests []subtest
	}{
		{"Schema", schemaTests},
		{"Objects", objectTests},
		{"Query", queryTests},
		{"ReadACL", aclTests},
		{"Relation", relationTests},
		{"Context", contextTests},
		{"WhereErrors", whereErrorTests},
		{"Limits", limitTests},
		{"Aggregate", aggregateTests},
		{"CrossClass", crossClassTests},
		{"Write", writeTests},
		{"Match", matchTests},
		{"Feed", feedTests}, // for stores that are a store.Feed
	}
	known := map[string]bool{}
	for _, g := range groups {
		for _, st := range g.tests {
			known[g.name+"/"+st.name] = true
		}
	}
	for name := range skip {
		if !known[name] {
			t.Errorf("storetest: skip list names %q, which is no subtest", name)
		}
	}
	for _, g := range groups {
		if g.name == "Feed" && !isFeed(t, open) {
			// A capability the store does not have, not a missing
			// service: nothing to skip.
			t.Log("the store is not a store.Feed: the change feed group does not apply")
			continue
		}
		t.Run(g.name, func(t *testing.T) { runGroup(t, g.name, g.tests, open, skip) })
	}
}

// isFeed reports whether the stores open returns implement store.Feed.
func isFeed(t *testing.T, open func(t *testing.T) store.Store) bool {
	var ok bool
	t.Run("FeedCapability", func(t *testing.T) {
		s := open(t)
		if s == nil {
			t.Fatal("open returned a nil store")
		}
		_, ok = s.(store.Feed)
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return ok
}

// runGroup runs each test on a store of its own.
func runGroup(t *testing.T, group string, tests []subtest, open func(t *testing.T) store.Store, skip map[string]string) {
	for _, st := range tests {
		t.Run(st.name, func(t *testing.T) {
			if why, ok := skip[group+"/"+st.name]; ok {
				t.Skip(why)
			}
			s := open(t)
			if s == nil {
				t.Fatal("open returned a nil store")
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			st.fn(t, s)
		})
	}
}

type subtest struct {
	name string
	fn   func(t *testing.T, s store.Store)
}

var ctx = context.Background()

// ---------------------------------------------------------------- helpers

// decode parses JSON written in a test into the generic form the REST API
// carries (map[string]any, []any, float64, …).
func decode(t *testing.T, js string) any {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(js))
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad test JSON %s: %v", js, err)
	}
	return v
}

func decodeObject(t *testing.T, js string) parse.Object {
	t.Helper()
	m, ok := decode(t, js).(map[string]any)
	if !ok {
		t.Fatalf("test JSON is not an object: %s", js)
	}
	return m
}

func decodeObjects(t *testing.T, js string) []parse.Object {
	t.Helper()
	arr, ok := decode(t, js).([]any)
	if !ok {
		t.Fatalf("test JSON is not an array: %s", js)
	}
	out := make([]parse.Object, len(arr))
	for i, v := range arr {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("test JSON element %d is not an object", i)
		}
		out[i] = m
	}
	return out
}

// canon renders v through JSON so that values compare by their REST form.
func canon(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %#v: %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func pretty(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSpace(buf.String())
}

// equalJSON compares got with the JSON text want by REST form.
func equalJSON(t *testing.T, what string, got any, want string) {
	t.Helper()
	g, w := canon(t, got), canon(t, decode(t, want))
	if !reflect.DeepEqual(g, w) {
		d := diff("", g, w, nil)
		if len(d) > 20 {
			d = append(d[:20], fmt.Sprintf("… and %d more differences", len(d)-20))
		}
		t.Errorf("%s differs:\n  %s\ngot: %s", what, strings.Join(d, "\n  "), compact(g))
	}
}

// diff lists where got and want (canonical JSON values) differ.
func diff(path string, got, want any, out []string) []string {
	at := path
	if at == "" {
		at = "(top)"
	}
	gm, gok := got.(map[string]any)
	wm, wok := want.(map[string]any)
	if gok && wok {
		keys := map[string]bool{}
		for k := range gm {
			keys[k] = true
		}
		for k := range wm {
			keys[k] = true
		}
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			gv, gin := gm[k]
			wv, win := wm[k]
			switch {
			case !gin:
				out = append(out, fmt.Sprintf("%s.%s: missing, want %s", path, k, compact(wv)))
			case !win:
				out = append(out, fmt.Sprintf("%s.%s: unexpected %s", path, k, compact(gv)))
			default:
				out = diff(path+"."+k, gv, wv, out)
			}
		}
		return out
	}
	ga, gok := got.([]any)
	wa, wok := want.([]any)
	if gok && wok && len(ga) == len(wa) {
		for i := range ga {
			out = diff(fmt.Sprintf("%s[%d]", path, i), ga[i], wa[i], out)
		}
		return out
	}
	if !reflect.DeepEqual(got, want) {
		out = append(out, fmt.Sprintf("%s: got %s, want %s", at, compact(got), compact(want)))
	}
	return out
}

func compact(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// equalRows compares rows with the JSON array want; an empty result may be
// nil or empty.
func equalRows(t *testing.T, what string, got []parse.Object, want string) {
	t.Helper()
	if got == nil {
		got = []parse.Object{}
	}
	equalJSON(t, what, got, want)
}

func mustCreateClass(t *testing.T, s store.Store, sch parse.Schema) {
	t.Helper()
	if err := s.CreateClass(ctx, sch); err != nil {
		t.Fatalf("CreateClass %s: %v", sch.ClassName, err)
	}
}

// classFromJSON builds a schema from Parse's `_SCHEMA` JSON form.
func classFromJSON(t *testing.T, js string) parse.Schema {
	t.Helper()
	var sch parse.Schema
	if err := json.Unmarshal([]byte(js), &sch); err != nil {
		t.Fatalf("bad test schema %s: %v", js, err)
	}
	return sch
}

func mustCreate(t *testing.T, s store.Store, class string, objs []parse.Object) {
	t.Helper()
	if err := s.Create(ctx, class, objs); err != nil {
		t.Fatalf("Create %s: %v", class, err)
	}
}

func mustSchema(t *testing.T, s store.Store, class string) parse.Schema {
	t.Helper()
	sch, err := s.Schema(ctx, class)
	if err != nil {
		t.Fatalf("Schema %s: %v", class, err)
	}
	return sch
}

// where parses a where-constraint written as JSON against class's schema.
func where(t *testing.T, s store.Store, class, js string) query.Expr {
	t.Helper()
	m, ok := decode(t, js).(map[string]any)
	if !ok {
		t.Fatalf("where is not an object: %s", js)
	}
	e, err := query.ParseWhere(mustSchema(t, s, class), m)
	if err != nil {
		t.Fatalf("ParseWhere %s: %v", js, err)
	}
	return openSubqueries(t, e)
}

func order(t *testing.T, s store.Store, class, spec string) []query.OrderKey {
	t.Helper()
	keys, err := query.ParseOrder(mustSchema(t, s, class), spec)
	if err != nil {
		t.Fatalf("ParseOrder %q: %v", spec, err)
	}
	return keys
}

func mustFind(t *testing.T, s store.Store, q *query.Query) []parse.Object {
	t.Helper()
	rows, err := s.Find(ctx, q)
	if err != nil {
		t.Fatalf("Find %s: %v", q.Class, err)
	}
	sameAsFindJSON(t, s, q, rows)
	return rows
}

func mustCount(t *testing.T, s store.Store, q *query.Query) int64 {
	t.Helper()
	n, err := s.Count(ctx, q)
	if err != nil {
		t.Fatalf("Count %s: %v", q.Class, err)
	}
	return n
}

// all returns every row of class, ordered by objectId, without ACL filter.
func all(t *testing.T, s store.Store, class string) []parse.Object {
	t.Helper()
	return mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: class, Limit: -1, Order: []query.OrderKey{{Field: parse.FieldObjectID}}})
}

func count(t *testing.T, s store.Store, class string) int64 {
	t.Helper()
	return mustCount(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: class, Limit: -1})
}

func ids(rows []parse.Object) []string {
	out := make([]string, 0, len(rows))
	for _, r := range rows {
		id, _ := r[parse.FieldObjectID].(string)
		out = append(out, id)
	}
	return out
}

func sorted(a []string) []string {
	b := append([]string(nil), a...)
	sort.Strings(b)
	return b
}

func equalIDs(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %q\nwant %q", what, got, want)
	}
}

// wantErr checks that err wraps target.
func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: got no error, want %v", what, target)
		return
	}
	if !errors.Is(err, target) {
		t.Errorf("%s: got %v, want an error wrapping %v", what, err, target)
	}
}
