package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var limitTests = []subtest{
	{"AtTheCaps", testShapeAtCaps},
}

// testShapeAtCaps: a where at each query-shape cap runs on the backend
// (the caps leave room under SQLite's expression depth and PostgreSQL's
// parameter count), and one past the cap is refused as the caller's
// mistake, before the database sees it.
func testShapeAtCaps(t *testing.T, s store.Store) {
	loadItems(t, s)
	sch := mustSchema(t, s, "Item")
	ctx := context.Background()
	ors := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"name": "n%d"}`, i)
		}
		parts[0] = `{"name": "banana"}`
		return `{"$or": [` + strings.Join(parts, ", ") + `]}`
	}
	// An $or of empty objects whose last element puts every condition side
	// by side: the deepest expression the caps allow.
	deep := func(branches, conditions int) string {
		parts := make([]string, branches)
		for i := range parts {
			parts[i] = `{}`
		}
		var side []string
		for i := range conditions {
			side = append(side, fmt.Sprintf(`"meta.k%d": {"$ne": %d}`, i, i))
		}
		parts[len(parts)-1] = "{" + strings.Join(side, ", ") + "}"
		return `{"$or": [{"$or": [` + strings.Join(parts[1:], ", ") + `]}]}`
	}
	list := func(op string, n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf(`"v%d"`, i)
		}
		return fmt.Sprintf(`{"tags": {"%s": [%s]}}`, op, strings.Join(vals, ","))
	}
	// Two lists that each fit but together do not.
	twoLists := func(n int) string {
		vals := make([]string, n)
		for i := range vals {
			vals[i] = fmt.Sprintf(`"v%d"`, i)
		}
		return fmt.Sprintf(`{"tags": {"$in": [%s]}, "name": {"$nin": [%[1]s]}}`, strings.Join(vals, ","))
	}
	for _, c := range []struct {
		name, atCap, overCap string
		count                int64
	}{
		{"branches", ors(query.MaxBranches), ors(query.MaxBranches + 1), 1},
		{"deep branches", deep(query.MaxBranches, query.MaxConstraints), deep(query.MaxBranches+1, 10), 6},
		{"deep conditions", deep(2, query.MaxConstraints), deep(2, query.MaxConstraints+1), 6},
		{"$in values", list("$in", query.MaxValues), twoLists(query.MaxValues/2 + 1), 0},
		{"$all values", list("$all", query.MaxAllValues), list("$all", query.MaxAllValues+1), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := query.ParseWhere(sch, decodeObject(t, c.atCap))
			if err != nil {
				t.Fatalf("at the cap: %v", err)
			}
			n, err := s.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Where: e, Limit: -1})
			if err != nil || n != c.count {
				t.Fatalf("at the cap: count %d, %v; want %d", n, err, c.count)
			}
			_, err = query.ParseWhere(sch, decodeObject(t, c.overCap))
			var qe *query.Error
			if !errors.As(err, &qe) || qe.Path != "where" {
				t.Fatalf("past the cap: %v, want a query.Error at where", err)
			}
		})
	}
}
