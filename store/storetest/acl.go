package storetest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var aclTests = []subtest{
	{"ReadACL", testReadACL},
	{"ACLRoundTrip", testACLRoundTrip},
	{"UnsetACLFilter", testUnsetACLFilter},
}

// testUnsetACLFilter: a read, a count, a pipeline or a write whose ACL
// filter was never set reaches no row, not every row (a forgotten filter
// fails closed); query.NoACLFilter reaches them all.
func testUnsetACLFilter(t *testing.T, s store.Store) {
	loadDocs(t, s)
	if rows := mustFind(t, s, &query.Query{Class: "Doc", Limit: -1}); len(rows) != 0 {
		t.Errorf("Find with an unset ReadACL returned %v", ids(rows))
	}
	if n := mustCount(t, s, &query.Query{Class: "Doc", Limit: -1}); n != 0 {
		t.Errorf("Count with an unset ReadACL = %d", n)
	}
	if n := mustCount(t, s, &query.Query{Class: "Doc", Limit: -1, ReadACL: query.NoACLFilter}); n != 8 {
		t.Errorf("Count with NoACLFilter = %d, want 8", n)
	}
	p, err := query.ParsePipelineJSON(mustSchema(t, s, "Doc"), nil, []byte(`[{"$group": {"_id": null, "n": {"$sum": 1}}}]`))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.Aggregate(ctx, "Doc", p, query.ACLFilter{})
	if err != nil || len(rows) != 0 {
		t.Errorf("Aggregate with an unset ACL filter: %v, %v", rows, err)
	}
	// d1 has no ACL: any set filter may write it, an unset one may not.
	_, _, err = s.Update(ctx, store.Write{Class: "Doc", ID: "d1"}, parse.Object{"title": "unset"})
	if !errors.Is(err, store.ErrObjectNotFound) {
		t.Errorf("Update with an unset WriteACL: %v, want ErrObjectNotFound", err)
	}
	if _, err := s.Delete(ctx, store.Write{Class: "Doc", ID: "d1"}); !errors.Is(err, store.ErrObjectNotFound) {
		t.Errorf("Delete with an unset WriteACL: %v, want ErrObjectNotFound", err)
	}
	if got := mustFind(t, s, &query.Query{Class: "Doc", Limit: -1, ReadACL: query.NoACLFilter, Where: where(t, s, "Doc", `{"objectId": "d1"}`)}); len(got) != 1 || got[0]["title"] != "d1" {
		t.Errorf("a refused write changed d1: %v", got)
	}
}

// The ACL fixture, class Doc (title = objectId):
//
//	d1  no ACL                                  everyone
//	d2  {"*": read}                             everyone
//	d3  {u1: read+write}                        u1
//	d4  {role:Admin: read}                      Admin role
//	d5  {}                                      nobody but the master key
//	d6  {u1: write}                             nobody but the master key
//	d7  {u2: read, role:Staff: read}            u2, Staff role
//	d8  {"*": read+write, role:Admin: write}    everyone
const docRows = `[
  {"objectId": "d1", "title": "d1"},
  {"objectId": "d2", "title": "d2", "ACL": {"*": {"read": true}}},
  {"objectId": "d3", "title": "d3", "ACL": {"u1": {"read": true, "write": true}}},
  {"objectId": "d4", "title": "d4", "ACL": {"role:Admin": {"read": true}}},
  {"objectId": "d5", "title": "d5", "ACL": {}},
  {"objectId": "d6", "title": "d6", "ACL": {"u1": {"write": true}}},
  {"objectId": "d7", "title": "d7", "ACL": {"u2": {"read": true}, "role:Staff": {"read": true}}},
  {"objectId": "d8", "title": "d8", "ACL": {"*": {"read": true, "write": true}, "role:Admin": {"write": true}}}
]`

func loadDocs(t *testing.T, s store.Store) {
	t.Helper()
	mustCreateClass(t, s, classFromJSON(t, `{"className": "Doc", "fields": {"title": {"type": "String"}}, "classLevelPermissions": {}}`))
	mustCreate(t, s, "Doc", decodeObjects(t, docRows))
}

func testReadACL(t *testing.T, s store.Store) {
	loadDocs(t, s)
	byID := order(t, s, "Doc", "objectId")
	cases := []struct {
		acl  []string
		want []string
	}{
		{nil, []string{"d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"}}, // master key
		{[]string{}, []string{"d1"}},                                    // no entries at all
		{[]string{"*"}, []string{"d1", "d2", "d8"}},
		{[]string{"*", "u1"}, []string{"d1", "d2", "d3", "d8"}},
		{[]string{"u1"}, []string{"d1", "d3"}},
		{[]string{"*", "u2", "role:Staff"}, []string{"d1", "d2", "d7", "d8"}},
		{[]string{"*", "u3", "role:Admin"}, []string{"d1", "d2", "d4", "d8"}},
		{[]string{"role:Admin", "role:Staff"}, []string{"d1", "d4", "d7"}},
		{[]string{"*", "u1", "u2", "role:Admin", "role:Staff"}, []string{"d1", "d2", "d3", "d4", "d7", "d8"}},
		{[]string{"Admin"}, []string{"d1"}},               // a role entry needs its "role:" prefix
		{[]string{"role:admin"}, []string{"d1"}},          // entries are case-sensitive
		{[]string{"*", "u9"}, []string{"d1", "d2", "d8"}}, // an unknown user
		{[]string{"write"}, []string{"d1"}},
	}
	for _, c := range cases {
		what := fmt.Sprintf("ReadACL %q", c.acl)
		if c.acl == nil {
			what = "ReadACL nil"
		}
		rows := mustFind(t, s, &query.Query{Class: "Doc", Limit: -1, Order: byID, ReadACL: aclOf(c.acl)})
		equalIDs(t, "Find "+what, ids(rows), c.want)
		if n := mustCount(t, s, &query.Query{Class: "Doc", Limit: -1, ReadACL: aclOf(c.acl)}); n != int64(len(c.want)) {
			t.Errorf("Count %s = %d, want %d", what, n, len(c.want))
		}
	}

	// ReadACL combines with the where, order, limit and skip.
	q := &query.Query{Class: "Doc", Limit: -1, Order: byID, ReadACL: query.ACLEntries("*", "u1"),
		Where: where(t, s, "Doc", `{"objectId": {"$in": ["d1", "d3", "d4", "d5"]}}`)}
	equalIDs(t, "Find ReadACL [* u1] with where", ids(mustFind(t, s, q)), []string{"d1", "d3"})
	if n := mustCount(t, s, q); n != 2 {
		t.Errorf("Count ReadACL [* u1] with where = %d, want 2", n)
	}
	q = &query.Query{Class: "Doc", Limit: 2, Skip: 1, Order: order(t, s, "Doc", "-title"), ReadACL: query.ACLEntries("*", "role:Admin")}
	equalIDs(t, "Find ReadACL [* role:Admin] order -title limit 2 skip 1", ids(mustFind(t, s, q)), []string{"d4", "d2"})
	if n := mustCount(t, s, q); n != 4 {
		t.Errorf("Count ReadACL [* role:Admin] = %d, want 4", n)
	}
	q = &query.Query{Class: "Doc", Limit: -1, Order: byID, ReadACL: query.ACLEntries("*"),
		Where: where(t, s, "Doc", `{"$or": [{"title": "d3"}, {"title": "d2"}]}`)}
	equalIDs(t, "Find ReadACL [*] with $or", ids(mustFind(t, s, q)), []string{"d2"})

	// The rows a reader sees are whole, ACL included.
	rows := mustFind(t, s, &query.Query{Class: "Doc", Limit: -1, Order: byID, ReadACL: query.ACLEntries("u2"), Keys: []string{"ACL"}})
	equalRows(t, "Find ReadACL [u2]", stripDates(rows), `[
	  {"objectId": "d1"},
	  {"objectId": "d7", "ACL": {"u2": {"read": true}, "role:Staff": {"read": true}}}
	]`)
}

// testACLRoundTrip: every ACL shape comes back as it went in; no ACL comes
// back as no ACL key, an empty ACL as {}.
func testACLRoundTrip(t *testing.T, s store.Store) {
	loadDocs(t, s)
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Doc", Limit: -1, Order: order(t, s, "Doc", "objectId")})
	equalRows(t, "Find(Doc)", stripDates(rows), `[
	  {"objectId": "d1", "title": "d1"},
	  {"objectId": "d2", "title": "d2", "ACL": {"*": {"read": true}}},
	  {"objectId": "d3", "title": "d3", "ACL": {"u1": {"read": true, "write": true}}},
	  {"objectId": "d4", "title": "d4", "ACL": {"role:Admin": {"read": true}}},
	  {"objectId": "d5", "title": "d5", "ACL": {}},
	  {"objectId": "d6", "title": "d6", "ACL": {"u1": {"write": true}}},
	  {"objectId": "d7", "title": "d7", "ACL": {"u2": {"read": true}, "role:Staff": {"read": true}}},
	  {"objectId": "d8", "title": "d8", "ACL": {"*": {"read": true, "write": true}, "role:Admin": {"write": true}}}
	]`)
	// An entry granting nothing carries no right, as in Parse.
	mustCreate(t, s, "Doc", decodeObjects(t, `[{"objectId": "d9", "title": "d9", "ACL": {"u1": {"read": false, "write": false}, "u2": {"read": true, "write": false}}}]`))
	rows = mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Doc", Limit: -1, Where: where(t, s, "Doc", `{"objectId": "d9"}`)})
	equalRows(t, "Find(d9)", stripDates(rows), `[{"objectId": "d9", "title": "d9", "ACL": {"u2": {"read": true}}}]`)
	equalIDs(t, "d9 visible to u1", ids(mustFind(t, s, &query.Query{Class: "Doc", Limit: -1, ReadACL: query.ACLEntries("u1"),
		Where: where(t, s, "Doc", `{"objectId": "d9"}`)})), nil)
}

// stripDates drops the assigned createdAt/updatedAt so rows compare by the
// fields a test set.
func stripDates(rows []map[string]any) []map[string]any {
	for _, r := range rows {
		delete(r, "createdAt")
		delete(r, "updatedAt")
	}
	return rows
}

// aclOf is the filter a test case's entries mean: nil for none (the
// master key), else those entries.
func aclOf(entries []string) query.ACLFilter {
	if entries == nil {
		return query.NoACLFilter
	}
	return query.ACLEntries(entries...)
}
