package agent_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The agent filters fail closed: a filter is applied as written or the
// class is refused; it is never dropped, so no filter ever lets an agent
// see more rows than the same agent without it sees with the filter as
// its own where.
//
// In the fixture, alice reads tickets t1–t4 (t5 has an empty ACL) and
// project Apollo (Borealis is bob's, Comet the Admin role's); the master
// key reads all five tickets and three projects. Ticket has title, status,
// priority (Number), project and due; Project has name, budget (Number),
// active, tags, meta, owner and members; neither has the other's fields.
// Tickets: t1 open p1, t2 closed p3, t3 open p2, t4 in_progress p1, t5
// open p5.

func TestAgentFiltersFailClosed(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	alice := agent.Identity{Mode: agent.AuthUser, UserID: fixture.Alice}
	master := agent.Identity{Mode: agent.AuthMaster}
	const (
		refused = "refused"
		all     = "all"
	)
	type want struct {
		class string
		ids   []string // nil with refused or all
		what  string   // refused: the class is refused; all: as without the filter
	}
	cases := []struct {
		name   string
		id     agent.Identity
		f      agent.ClassFilters
		expect []want
	}{
		{
			// priority is a Number: a string can never be compared with
			// it. The default names Ticket's field, so it applies there,
			// and does not parse: Ticket is refused (it used to be
			// skipped, and every ticket shown). Project lacks priority.
			name: "wrong-typed default on an existing field",
			id:   alice,
			f:    agent.ClassFilters{agent.DefaultFilterKey: {"priority": "high"}},
			expect: []want{
				{class: "Ticket", what: refused},
				{class: "Project", what: all},
			},
		},
		{
			name: "wrong-typed default under the master key",
			id:   master,
			f:    agent.ClassFilters{agent.DefaultFilterKey: {"priority": map[string]any{"$gt": "1"}}},
			expect: []want{
				{class: "Ticket", what: refused},
				{class: "Project", what: all},
				{class: "Payroll", what: all},
			},
		},
		{
			name:   "a bad operator on an existing field",
			id:     alice,
			f:      agent.ClassFilters{agent.DefaultFilterKey: {"priority": map[string]any{"$foo": 1.0}}},
			expect: []want{{class: "Ticket", what: refused}, {class: "Project", what: all}},
		},
		{
			// An embedder writes Go ints: they are numbers.
			name: "Go int values",
			id:   alice,
			f:    agent.ClassFilters{agent.DefaultFilterKey: {"priority": 1}},
			expect: []want{
				{class: "Ticket", ids: []string{"t000000001", "t000000004"}},
				{class: "Project", what: all},
			},
		},
		{
			name: "Go integer types in $in, $gte and $or",
			id:   master,
			f: agent.ClassFilters{agent.DefaultFilterKey: {"$or": []any{
				map[string]any{"priority": map[string]any{"$in": []any{int64(2), uint8(3)}}},
				map[string]any{"priority": map[string]any{"$gte": int32(5)}},
			}}},
			expect: []want{
				{class: "Ticket", ids: []string{"t000000002", "t000000003", "t000000005"}},
				{class: "Project", what: all},
			},
		},
		{
			name: "default names a field one class has and another lacks",
			id:   alice,
			f:    agent.ClassFilters{agent.DefaultFilterKey: {"status": "open"}},
			expect: []want{
				{class: "Ticket", ids: []string{"t000000001", "t000000003"}},
				{class: "Project", what: all},
			},
		},
		{
			name: "default names a field each class has",
			id:   master,
			f:    agent.ClassFilters{agent.DefaultFilterKey: {"objectId": map[string]any{"$in": []any{"t000000002", "pComet0003"}}}},
			expect: []want{
				{class: "Ticket", ids: []string{"t000000002"}},
				{class: "Project", ids: []string{"pComet0003"}},
				{class: "Payroll", ids: nil},
			},
		},
		{
			// Both branches name Ticket's fields: the $or applies.
			name: "default $or on fields the class has",
			id:   alice,
			f: agent.ClassFilters{agent.DefaultFilterKey: {"$or": []any{
				map[string]any{"status": "closed"}, map[string]any{"priority": map[string]any{"$gte": 2.0}},
			}}},
			expect: []want{
				{class: "Ticket", ids: []string{"t000000002", "t000000003"}},
				{class: "Project", what: all},
			},
		},
		{
			// One branch names Ticket's status, the other Project's
			// budget: each class has one of the two. Dropping the branch
			// a class cannot parse would read it as true (every row) or
			// false (narrower than written) — neither is the filter as
			// written, so both classes are refused. Payroll has neither.
			name: "default $or with a branch on a field the class lacks",
			id:   master,
			f: agent.ClassFilters{agent.DefaultFilterKey: {"$or": []any{
				map[string]any{"status": "open"}, map[string]any{"budget": map[string]any{"$gt": 500.0}},
			}}},
			expect: []want{
				{class: "Ticket", what: refused},
				{class: "Project", what: refused},
				{class: "Payroll", what: all},
			},
		},
		{
			name: "default $nor with a branch on a field the class lacks",
			id:   master,
			f: agent.ClassFilters{agent.DefaultFilterKey: {"$nor": []any{
				map[string]any{"status": "closed"}, map[string]any{"budget": map[string]any{"$lt": 500.0}},
			}}},
			expect: []want{{class: "Ticket", what: refused}, {class: "Project", what: refused}},
		},
		{
			// A wrong type inside an $or on the class's own fields: the
			// whole default is refused, not the branch dropped.
			name: "default $or with a wrong-typed branch",
			id:   alice,
			f: agent.ClassFilters{agent.DefaultFilterKey: {"$or": []any{
				map[string]any{"priority": "high"}, map[string]any{"status": "open"},
			}}},
			expect: []want{{class: "Ticket", what: refused}, {class: "Project", what: all}},
		},
		{
			name: "top-level keys on fields a class partly has",
			id:   master,
			f:    agent.ClassFilters{agent.DefaultFilterKey: {"status": "open", "budget": 1000.0}},
			expect: []want{
				{class: "Ticket", what: refused},
				{class: "Project", what: refused},
				{class: "Payroll", what: all},
			},
		},
		{
			// The class's own entry overrides the key naming its field;
			// what is left of the default names only fields Ticket lacks.
			name: "a class entry resolves a partly fitting default",
			id:   master,
			f: agent.ClassFilters{
				agent.DefaultFilterKey: {"status": "open", "budget": 1000.0},
				"Ticket":               {"status": map[string]any{"$ne": "open"}},
			},
			expect: []want{
				{class: "Ticket", ids: []string{"t000000002", "t000000004"}},
				{class: "Project", what: refused},
			},
		},
		{
			// An $or built in Go as []map[string]any is no array of
			// constraint objects to read fields from: it constrains any
			// class, so the default is not skipped where status is missing,
			// and it does not parse where status is there.
			name: "a Go-typed $or next to a field a class lacks",
			id:   master,
			f: agent.ClassFilters{agent.DefaultFilterKey: {
				"status": "open",
				"$or":    []map[string]any{{"budget": 1000.0}},
			}},
			expect: []want{
				{class: "Ticket", what: refused},
				{class: "Project", what: refused},
				{class: "_User", what: refused},
			},
		},
		{
			// $relatedTo names no field of the class it constrains.
			name: "$relatedTo next to a field a class lacks",
			id:   master,
			f: agent.ClassFilters{agent.DefaultFilterKey: {
				"$relatedTo": map[string]any{"object": parse.Pointer("Project", "pApollo001"), "key": "members"},
				"status":     "open",
			}},
			expect: []want{
				{class: "_User", what: refused},
				{class: "Project", what: refused},
			},
		},
		{
			// A dotted key names the Object field: Project has meta,
			// Ticket does not.
			name: "dotted path into an Object field",
			id:   master,
			f:    agent.ClassFilters{agent.DefaultFilterKey: {"meta.plan": "pro"}},
			expect: []want{
				{class: "Ticket", what: all},
				{class: "Project", ids: []string{"pApollo001"}},
			},
		},
		{
			name:   "a dotted path into a field that is no Object",
			id:     master,
			f:      agent.ClassFilters{agent.DefaultFilterKey: {"status.x": "open"}},
			expect: []want{{class: "Ticket", what: refused}, {class: "Project", what: all}},
		},
		{
			name: "a class entry that does not parse",
			id:   alice,
			f:    agent.ClassFilters{"Ticket": {"priority": "high"}, agent.DefaultFilterKey: {"budget": 1.0}},
			expect: []want{
				{class: "Ticket", what: refused},
				{class: "Project", ids: nil},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			plain := agent.NewScope(agent.New(agent.Readonly, c.id), st)
			a := agent.New(agent.Readonly, c.id)
			a.Policy.Filters = []agent.ClassFilters{c.f}
			s := agent.NewScope(a, st)
			for _, w := range c.expect {
				q := &query.Query{ReadACL: query.NoACLFilter, Class: w.class, Limit: -1}
				rows, err := s.Find(ctx, q)
				n, cerr := s.Count(ctx, q)
				_, verr := s.Visibility(ctx, w.class)
				if w.what == refused {
					for what, err := range map[string]error{"find": err, "count": cerr, "visibility": verr} {
						var de *agent.DeniedError
						if !errors.As(err, &de) || de.Kind != "agent_filter" || !strings.HasPrefix(de.Msg, "agent filter on "+w.class+": ") {
							t.Errorf("%s %s: got %v (%d rows), want a refusal naming the agent filter on %s", w.class, what, err, len(rows), w.class)
						}
					}
					if got, err := s.Get(ctx, w.class, []string{"t000000001", "pApollo001"}, nil); err == nil {
						t.Errorf("%s get: %d rows, want a refusal", w.class, len(got))
					}
					continue
				}
				if err != nil || cerr != nil || verr != nil {
					t.Errorf("%s: find %v, count %v, visibility %v", w.class, err, cerr, verr)
					continue
				}
				got := ids(rows)
				want := w.ids
				if w.what == all {
					base, err := plain.Find(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					want = ids(base)
				}
				if !slices.Equal(got, want) || n != int64(len(want)) {
					t.Errorf("%s: find %v, count %d; want %v", w.class, got, n, want)
				}
			}
		})
	}
}

// TestAgentFilterLayersFailClosed: a sub-agent's layer is held to the same
// rule, and a parent's valid filter does not make the child's bad one
// harmless.
func TestAgentFilterLayersFailClosed(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	parent := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster})
	parent.Policy.Filters = []agent.ClassFilters{{agent.DefaultFilterKey: {"status": "open"}}}
	child, err := parent.Sub(agent.SubOptions{Filters: agent.ClassFilters{agent.DefaultFilterKey: {"priority": true}}})
	if err != nil {
		t.Fatal(err)
	}
	q := &query.Query{ReadACL: query.NoACLFilter, Class: "Ticket", Limit: -1}
	if n, err := agent.NewScope(parent, st).Count(ctx, q); err != nil || n != 3 {
		t.Errorf("parent: %d, %v; want the 3 open tickets", n, err)
	}
	var de *agent.DeniedError
	if n, err := agent.NewScope(child, st).Count(ctx, q); !errors.As(err, &de) || de.Kind != "agent_filter" {
		t.Errorf("child: %d, %v; want its filter's refusal", n, err)
	}
	if n, err := agent.NewScope(child, st).Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Project", Limit: -1}); err != nil || n != 3 {
		t.Errorf("child on Project (no status, no priority): %d, %v; want 3", n, err)
	}
}

// TestAgentFilterRefusalInInclude: a pointer into a class the filter
// refuses stays a pointer; the included object's fields never show.
func TestAgentFilterRefusalInInclude(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	a := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster})
	a.Policy.Filters = []agent.ClassFilters{{"Project": {"budget": "lots"}}}
	s := agent.NewScope(a, st)
	tsch, err := s.Schema(ctx, "Ticket")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Ticket", Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Include(ctx, tsch, rows, []string{"project"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if p, ok := r["project"].(map[string]any); ok && p["__type"] != "Pointer" {
			t.Errorf("%s: included %v from a refused class", r[parse.FieldObjectID], p)
		}
	}
}

func ids(rows []parse.Object) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, r[parse.FieldObjectID].(string))
	}
	slices.Sort(out)
	return out
}

// TestAgentFilterSubqueriesInLookup: a filter holding a sub-query
// narrows a $lookup'd class exactly as it narrows a find of that class.
// Its sub-query is governed like any other (an ungoverned one admits no
// row, and a $notInQuery of nothing is every row: the filter would be
// dropped).
func TestAgentFilterSubqueriesInLookup(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	a := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster})
	a.Policy.Filters = []agent.ClassFilters{{"Project": {"owner": map[string]any{
		"$notInQuery": map[string]any{"className": parse.ClassUser, "where": map[string]any{"username": "bob"}}}}}}
	s := agent.NewScope(a, st)
	found, err := s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Project", Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	allowed := ids(found)
	if slices.Contains(allowed, "pBorealis2") || len(allowed) == 0 {
		t.Fatalf("find: %v; want the projects bob does not own", allowed)
	}
	for _, pipeline := range []string{
		`[{"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "p"}}, {"$project": {"p": 1}}]`,
		`[{"$graphLookup": {"from": "Project", "startWith": "$project", "connectFromField": "owner", "connectToField": "_id", "as": "p", "maxDepth": 0}}, {"$project": {"p": 1}}]`,
	} {
		tsch, err := s.Schema(ctx, "Ticket")
		if err != nil {
			t.Fatal(err)
		}
		p, err := query.ParsePipelineJSON(tsch, func(c string) (parse.Schema, error) { return s.Schema(ctx, c) }, []byte(pipeline))
		if err != nil {
			t.Fatalf("%s: %v", pipeline, err)
		}
		rows, err := s.Aggregate(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", pipeline, err)
		}
		joined := 0
		for _, r := range rows {
			ps, _ := r["p"].([]any)
			for _, x := range ps {
				id, _ := x.(map[string]any)[parse.FieldObjectID].(string)
				joined++
				if !slices.Contains(allowed, id) {
					t.Errorf("%s: ticket %v joined project %s, which the filter leaves out", pipeline, r[parse.FieldObjectID], id)
				}
			}
		}
		if joined == 0 {
			t.Errorf("%s: nothing joined", pipeline)
		}
	}
}
