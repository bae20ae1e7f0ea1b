package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var relationTests = []subtest{
	{"AddAndList", testRelations},
	{"SystemClass", testRoleRelations},
	{"NotARelation", testRelationInvalid},
}

func createTeam(t *testing.T, s store.Store) {
	t.Helper()
	mustCreateClass(t, s, classFromJSON(t, `{"className": "Team", "fields": {
	  "name":    {"type": "String"},
	  "leader":  {"type": "Pointer", "targetClass": "_User"},
	  "members": {"type": "Relation", "targetClass": "_User"},
	  "rivals":  {"type": "Relation", "targetClass": "Team"}
	}, "classLevelPermissions": {}}`))
	mustCreate(t, s, "Team", decodeObjects(t, `[{"objectId": "t1", "name": "red"}, {"objectId": "t2", "name": "blue"}]`))
}

func related(t *testing.T, s store.Store, class, field, owner string) []string {
	t.Helper()
	got, err := s.RelatedIDs(ctx, class, field, owner)
	if err != nil {
		t.Fatalf("RelatedIDs(%s, %s, %s): %v", class, field, owner, err)
	}
	return sorted(got)
}

func addRelation(t *testing.T, s store.Store, class, field, owner string, ids ...string) {
	t.Helper()
	if err := s.AddRelation(ctx, class, field, owner, ids); err != nil {
		t.Fatalf("AddRelation(%s, %s, %s, %q): %v", class, field, owner, ids, err)
	}
}

func testRelations(t *testing.T, s store.Store) {
	createTeam(t, s)
	equalIDs(t, "t1.members before any link", related(t, s, "Team", "members", "t1"), nil)

	addRelation(t, s, "Team", "members", "t1", "u1", "u2")
	equalIDs(t, "t1.members", related(t, s, "Team", "members", "t1"), []string{"u1", "u2"})

	// Re-adding is idempotent; new ids join the old.
	addRelation(t, s, "Team", "members", "t1", "u2", "u1")
	addRelation(t, s, "Team", "members", "t1", "u3", "u2", "u3")
	equalIDs(t, "t1.members after re-adding", related(t, s, "Team", "members", "t1"), []string{"u1", "u2", "u3"})
	addRelation(t, s, "Team", "members", "t1")
	equalIDs(t, "t1.members after adding nothing", related(t, s, "Team", "members", "t1"), []string{"u1", "u2", "u3"})

	// Owners and fields are independent.
	addRelation(t, s, "Team", "members", "t2", "u3", "u4")
	addRelation(t, s, "Team", "rivals", "t1", "t2")
	equalIDs(t, "t2.members", related(t, s, "Team", "members", "t2"), []string{"u3", "u4"})
	equalIDs(t, "t1.members", related(t, s, "Team", "members", "t1"), []string{"u1", "u2", "u3"})
	equalIDs(t, "t1.rivals", related(t, s, "Team", "rivals", "t1"), []string{"t2"})
	equalIDs(t, "t2.rivals", related(t, s, "Team", "rivals", "t2"), nil)
	equalIDs(t, "t9.members (no such owner)", related(t, s, "Team", "members", "t9"), nil)

	// Rows carry a Relation field as Parse's marker, whatever is linked, and
	// only when keys select it.
	byID := order(t, s, "Team", "objectId")
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Team", Limit: -1, Order: byID})
	equalRows(t, "Team rows", stripDates(rows), `[
	  {"objectId": "t1", "name": "red",
	   "members": {"__type": "Relation", "className": "_User"}, "rivals": {"__type": "Relation", "className": "Team"}},
	  {"objectId": "t2", "name": "blue",
	   "members": {"__type": "Relation", "className": "_User"}, "rivals": {"__type": "Relation", "className": "Team"}}
	]`)
	rows = mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Team", Limit: -1, Order: byID, Keys: []string{"name"}})
	equalRows(t, "Team rows, keys name", stripDates(rows), `[{"objectId": "t1", "name": "red"}, {"objectId": "t2", "name": "blue"}]`)
	rows = mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Team", Limit: -1, Order: byID, Keys: []string{"members"}})
	equalRows(t, "Team rows, keys members", stripDates(rows), `[
	  {"objectId": "t1", "members": {"__type": "Relation", "className": "_User"}},
	  {"objectId": "t2", "members": {"__type": "Relation", "className": "_User"}}
	]`)
}

func testRoleRelations(t *testing.T, s store.Store) {
	mustCreate(t, s, "_Role", decodeObjects(t, `[{"objectId": "r1", "name": "Admin"}, {"objectId": "r2", "name": "Staff"}]`))
	addRelation(t, s, "_Role", "users", "r1", "u1", "u2")
	addRelation(t, s, "_Role", "roles", "r2", "r1")
	equalIDs(t, "Admin users", related(t, s, "_Role", "users", "r1"), []string{"u1", "u2"})
	equalIDs(t, "Staff roles", related(t, s, "_Role", "roles", "r2"), []string{"r1"})
	equalIDs(t, "Staff users", related(t, s, "_Role", "users", "r2"), nil)
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "_Role", Limit: -1, Order: order(t, s, "_Role", "objectId")})
	equalRows(t, "_Role rows", stripDates(rows), `[
	  {"objectId": "r1", "name": "Admin",
	   "users": {"__type": "Relation", "className": "_User"}, "roles": {"__type": "Relation", "className": "_Role"}},
	  {"objectId": "r2", "name": "Staff",
	   "users": {"__type": "Relation", "className": "_User"}, "roles": {"__type": "Relation", "className": "_Role"}}
	]`)
}

func testRelationInvalid(t *testing.T, s store.Store) {
	createTeam(t, s)
	for _, field := range []string{"leader", "name", "objectId", "ACL", "nope", ""} {
		wantErr(t, "AddRelation on Team."+field, s.AddRelation(ctx, "Team", field, "t1", []string{"u1"}), store.ErrInvalid)
		_, err := s.RelatedIDs(ctx, "Team", field, "t1")
		wantErr(t, "RelatedIDs on Team."+field, err, store.ErrInvalid)
	}
	wantErr(t, "AddRelation on an unknown class", s.AddRelation(ctx, "Nope", "members", "t1", []string{"u1"}), store.ErrClassNotFound)
	equalIDs(t, "t1.members", related(t, s, "Team", "members", "t1"), nil)
}

var contextTests = []subtest{
	{"Cancelled", testCancelled},
	{"DeadlineExceeded", testDeadline},
}

func testCancelled(t *testing.T, s store.Store) {
	loadItems(t, s)
	w := where(t, s, "Item", `{"score": {"$gt": 0}}`)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	for _, q := range []*query.Query{
		{Class: "Item", Limit: -1, ReadACL: query.NoACLFilter},
		{Class: "Item", Limit: -1, Where: w, Order: order(t, s, "Item", "-score"), ReadACL: query.NoACLFilter},
	} {
		rows, err := s.Find(c, q)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Find with a cancelled context: rows %d, err %v; want an error wrapping context.Canceled", len(rows), err)
		}
		n, err := s.Count(c, q)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Count with a cancelled context: %d, err %v; want an error wrapping context.Canceled", n, err)
		}
	}
	// Writes under a cancelled context fail and change nothing.
	err := s.Create(c, "Item", []parse.Object{{"objectId": "x1", "name": "late"}})
	if err == nil {
		t.Errorf("Create with a cancelled context succeeded")
	}
	err = s.AddRelation(c, "_Role", "users", "r1", []string{"u1"})
	if err == nil {
		t.Errorf("AddRelation with a cancelled context succeeded")
	}
	err = s.CreateClass(c, parse.Schema{ClassName: "Late"})
	if err == nil {
		t.Errorf("CreateClass with a cancelled context succeeded")
	}
	if n := count(t, s, "Item"); n != 6 {
		t.Errorf("Count after a cancelled Create = %d, want 6", n)
	}
	equalIDs(t, "_Role.users after a cancelled AddRelation", related(t, s, "_Role", "users", "r1"), nil)
	if _, err := s.Schema(ctx, "Late"); !errors.Is(err, store.ErrClassNotFound) {
		t.Errorf("Schema(Late) after a cancelled CreateClass: %v, want ErrClassNotFound", err)
	}
	// The store still works.
	if n := count(t, s, "Item"); n != 6 {
		t.Errorf("Count after cancellations = %d", n)
	}
}

func testDeadline(t *testing.T, s store.Store) {
	loadItems(t, s)
	c, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	q := &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: -1}
	if _, err := s.Find(c, q); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Find past its deadline: %v, want an error wrapping context.DeadlineExceeded", err)
	}
	if _, err := s.Count(c, q); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Count past its deadline: %v, want an error wrapping context.DeadlineExceeded", err)
	}
}
