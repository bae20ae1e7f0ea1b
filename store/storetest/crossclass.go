package storetest

import (
	"slices"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// Cross-class, Relation, $containedBy and geo operators, on a fixture of
// users, teams and tasks.
var crossClassTests = []subtest{
	{"Operators", testCrossClass},
	{"NearSphereOrder", testNearSphereOrder},
	{"SubqueryReadACL", testSubqueryReadACL},
}

func loadTeams(t *testing.T, s store.Store) {
	t.Helper()
	team := parse.NewSchema("Team")
	team.Fields["name"] = parse.Field{Type: parse.TypeString}
	team.Fields["lead"] = parse.Field{Type: parse.TypePointer, TargetClass: parse.ClassUser}
	team.Fields["members"] = parse.Field{Type: parse.TypeRelation, TargetClass: parse.ClassUser}
	team.Fields["tags"] = parse.Field{Type: parse.TypeArray}
	team.Fields["hq"] = parse.Field{Type: parse.TypeGeoPoint}
	team.Fields["rank"] = parse.Field{Type: parse.TypeNumber}
	task := parse.NewSchema("Task")
	task.Fields["title"] = parse.Field{Type: parse.TypeString}
	task.Fields["team"] = parse.Field{Type: parse.TypePointer, TargetClass: "Team"}
	task.Fields["owner"] = parse.Field{Type: parse.TypeString}
	mustCreateClass(t, s, team)
	mustCreateClass(t, s, task)
	mustCreate(t, s, parse.ClassUser, decodeObjects(t, `[
	  {"objectId": "u1", "username": "ann"}, {"objectId": "u2", "username": "ben"}, {"objectId": "u3", "username": "cat"}
	]`))
	mustCreate(t, s, "Team", decodeObjects(t, `[
	  {"objectId": "t1", "name": "Red", "lead": {"__type": "Pointer", "className": "_User", "objectId": "u1"}, "tags": ["a", "b"],
	   "hq": {"__type": "GeoPoint", "latitude": 48.85, "longitude": 2.35}, "rank": 1},
	  {"objectId": "t2", "name": "Blue", "lead": {"__type": "Pointer", "className": "_User", "objectId": "u2"}, "tags": ["b"],
	   "hq": {"__type": "GeoPoint", "latitude": 51.50, "longitude": -0.12}, "rank": 2},
	  {"objectId": "t3", "name": "Green", "lead": {"__type": "Pointer", "className": "_User", "objectId": "u3"}, "tags": [],
	   "hq": {"__type": "GeoPoint", "latitude": 40.71, "longitude": -74.00}, "rank": 3, "ACL": {"role:Admin": {"read": true}}},
	  {"objectId": "t4", "name": "Gray", "rank": 4}
	]`))
	mustCreate(t, s, "Task", decodeObjects(t, `[
	  {"objectId": "k1", "title": "one", "team": {"__type": "Pointer", "className": "Team", "objectId": "t1"}, "owner": "ann"},
	  {"objectId": "k2", "title": "two", "team": {"__type": "Pointer", "className": "Team", "objectId": "t2"}, "owner": "ben"},
	  {"objectId": "k3", "title": "three", "team": {"__type": "Pointer", "className": "Team", "objectId": "t3"}, "owner": "cat"},
	  {"objectId": "k4", "title": "four", "owner": "zed"}
	]`))
	for owner, ids := range map[string][]string{"t1": {"u1", "u2"}, "t2": {"u3"}} {
		if err := s.AddRelation(ctx, "Team", "members", owner, ids); err != nil {
			t.Fatal(err)
		}
	}
}

// parseWith parses a where on class with cross-class lookups through s.
func parseWith(t *testing.T, s store.Store, class, js string) query.Expr {
	t.Helper()
	p := query.Parser{Resolve: func(c string) (parse.Schema, error) { return s.Schema(ctx, c) }}
	e, err := p.Where(mustSchema(t, s, class), decodeObject(t, js))
	if err != nil {
		t.Fatalf("parse %s %s: %v", class, js, err)
	}
	return openSubqueries(t, e)
}

// openSubqueries gives e's sub-queries no ACL restriction, as the master
// key reads: a sub-query's ACL filter is never implied (unset, it reaches
// no row).
func openSubqueries(t *testing.T, e query.Expr) query.Expr {
	t.Helper()
	if err := query.Subqueries(e, func(q *query.Query) error { q.ReadACL = query.NoACLFilter; return nil }); err != nil {
		t.Fatal(err)
	}
	return e
}

func testCrossClass(t *testing.T, s store.Store) {
	loadTeams(t, s)
	cases := []struct{ class, where, want string }{
		{"Task", `{"team": {"$inQuery": {"className": "Team", "where": {"rank": {"$lte": 2}}}}}`, `["k1", "k2"]`},
		{"Task", `{"team": {"$inQuery": {"className": "Team", "where": {"tags": "a"}}}}`, `["k1"]`},
		{"Task", `{"team": {"$inQuery": {"className": "Team"}}}`, `["k1", "k2", "k3"]`},
		{"Task", `{"team": {"$notInQuery": {"className": "Team", "where": {"rank": {"$lte": 2}}}}}`, `["k3", "k4"]`},
		{"Task", `{"owner": {"$select": {"query": {"className": "_User", "where": {"username": {"$in": ["ann", "cat"]}}}, "key": "username"}}}`, `["k1", "k3"]`},
		{"Task", `{"owner": {"$dontSelect": {"query": {"className": "_User", "where": {}}, "key": "username"}}}`, `["k4"]`},
		{"Task", `{"$or": [{"team": {"$inQuery": {"className": "Team", "where": {"name": "Blue"}}}}, {"owner": "zed"}]}`, `["k2", "k4"]`},
		{"Task", `{"team": {"$inQuery": {"className": "Team", "where": {"lead": {"$inQuery": {"className": "_User", "where": {"username": "cat"}}}}}}}`, `["k3"]`},
		{"_User", `{"$relatedTo": {"object": {"__type": "Pointer", "className": "Team", "objectId": "t1"}, "key": "members"}}`, `["u1", "u2"]`},
		{"_User", `{"$relatedTo": {"object": {"__type": "Pointer", "className": "Team", "objectId": "t3"}, "key": "members"}}`, `[]`},
		{"_User", `{"$relatedTo": {"object": {"__type": "Pointer", "className": "Team", "objectId": "t1"}, "key": "members"}, "username": "ben"}`, `["u2"]`},
		{"Team", `{"members": {"__type": "Pointer", "className": "_User", "objectId": "u2"}}`, `["t1"]`},
		{"Team", `{"members": "u3"}`, `["t2"]`},
		{"Team", `{"members": {"$in": ["u2", "u3"]}}`, `["t1", "t2"]`},
		{"Team", `{"members": {"$nin": ["u2"]}}`, `["t2", "t3", "t4"]`},
		{"Team", `{"members": {"$all": ["u1", "u2"]}}`, `["t1"]`},
		{"Team", `{"tags": {"$containedBy": ["a", "b"]}}`, `["t1", "t2", "t3"]`},
		{"Team", `{"tags": {"$containedBy": ["b"]}}`, `["t2", "t3"]`},
		{"Team", `{"tags": {"$containedBy": []}}`, `["t3"]`},
		{"Team", `{"hq": {"$within": {"$box": [{"__type": "GeoPoint", "latitude": 45, "longitude": -5}, {"__type": "GeoPoint", "latitude": 55, "longitude": 5}]}}}`, `["t1", "t2"]`},
		{"Team", `{"hq": {"$nearSphere": {"__type": "GeoPoint", "latitude": 48.85, "longitude": 2.35}, "$maxDistanceInKilometers": 500}}`, `["t1", "t2"]`},
		{"Team", `{"hq": {"$nearSphere": {"__type": "GeoPoint", "latitude": 48.85, "longitude": 2.35}, "$maxDistanceInKilometers": 100}}`, `["t1"]`},
		{"Team", `{"hq": {"$nearSphere": {"__type": "GeoPoint", "latitude": 48.85, "longitude": 2.35}, "$maxDistanceInMiles": 250}}`, `["t1", "t2"]`},
		{"Team", `{"hq": {"$geoWithin": {"$centerSphere": [[-0.12, 51.50], 0.01]}}}`, `["t2"]`},
		{"Team", `{"hq": {"$geoWithin": {"$centerSphere": [{"__type": "GeoPoint", "latitude": 40.7, "longitude": -74.0}, 0.01]}}}`, `["t3"]`},
		{"Team", `{"hq": {"$geoWithin": {"$polygon": [[40, -80], [40, -70], [45, -70], [45, -80]]}}}`, `["t3"]`},
		{"Team", `{"hq": {"$geoWithin": {"$polygon": [[45, -5], [45, 5], [55, 5], [55, -5]]}}, "rank": {"$gt": 1}}`, `["t2"]`},
	}
	for _, c := range cases {
		w := parseWith(t, s, c.class, c.where)
		var want []string
		for _, v := range decode(t, c.want).([]any) {
			want = append(want, v.(string))
		}
		rows, err := s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: c.class, Where: w, Limit: -1, Order: []query.OrderKey{{Field: parse.FieldObjectID}}})
		if err != nil {
			t.Errorf("Find %s %s: %v", c.class, c.where, err)
			continue
		}
		equalIDs(t, c.class+" "+c.where, ids(rows), sorted(want))
		n, err := s.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: c.class, Where: w})
		if err != nil || n != int64(len(want)) {
			t.Errorf("Count %s %s = %d (%v), want %d", c.class, c.where, n, err, len(want))
		}
	}
}

func testNearSphereOrder(t *testing.T, s store.Store) {
	loadTeams(t, s)
	// From New York: New York, London, Paris; Gray has no hq.
	w := parseWith(t, s, "Team", `{"hq": {"$nearSphere": {"__type": "GeoPoint", "latitude": 40.71, "longitude": -74.00}}}`)
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Team", Where: w, Limit: -1})
	if got := ids(rows); !slices.Equal(got, []string{"t3", "t2", "t1"}) {
		t.Fatalf("nearest first: %v", got)
	}
	// An explicit order wins over distance.
	rows = mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Team", Where: w, Limit: -1, Order: []query.OrderKey{{Field: "rank"}}})
	if got := ids(rows); !slices.Equal(got, []string{"t1", "t2", "t3"}) {
		t.Fatalf("explicit order: %v", got)
	}
}

// A sub-query carries its own ReadACL: rows the reader cannot see in the
// other class do not take part.
func testSubqueryReadACL(t *testing.T, s store.Store) {
	loadTeams(t, s)
	w := parseWith(t, s, "Task", `{"team": {"$inQuery": {"className": "Team", "where": {"rank": {"$lte": 3}}}}}`)
	if err := query.Subqueries(w, func(q *query.Query) error { q.ReadACL = query.ACLEntries("*"); return nil }); err != nil {
		t.Fatal(err)
	}
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Task", Where: w, Limit: -1, Order: []query.OrderKey{{Field: parse.FieldObjectID}}})
	equalIDs(t, "public reader", ids(rows), []string{"k1", "k2"})
	w = parseWith(t, s, "Task", `{"team": {"$notInQuery": {"className": "Team", "where": {"rank": {"$lte": 3}}}}}`)
	_ = query.Subqueries(w, func(q *query.Query) error { q.ReadACL = query.ACLEntries("*"); return nil })
	rows = mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Task", Where: w, Limit: -1, Order: []query.OrderKey{{Field: parse.FieldObjectID}}})
	equalIDs(t, "public reader, notInQuery", ids(rows), []string{"k3", "k4"})
	w = parseWith(t, s, "_User", `{"$relatedTo": {"object": {"__type": "Pointer", "className": "Team", "objectId": "t2"}, "key": "members"}}`)
	_ = query.Subqueries(w, func(q *query.Query) error { q.ReadACL = query.ACLEntries("*"); return nil })
	equalIDs(t, "relatedTo readable owner", ids(mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "_User", Where: w, Limit: -1})), []string{"u3"})
}
