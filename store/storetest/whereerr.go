package storetest

import (
	"errors"
	"testing"

	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var whereErrorTests = []subtest{
	{"Refused", testWhereRefused},
}

// testWhereRefused: the schema a store reports is what query.ParseWhere
// checks a where against; refusals name the offending location.
func testWhereRefused(t *testing.T, s store.Store) {
	loadItems(t, s)
	createTeam(t, s)
	cases := []struct{ class, where, path string }{
		{"Item", `{"nope": 1}`, "where.nope"},
		{"Item", `{"nope.deeper": 1}`, "where.nope.deeper"},
		{"Item", `{"score": "ten"}`, "where.score"},
		{"Item", `{"score": {"$gt": "ten"}}`, "where.score.$gt"},
		{"Item", `{"active": {"$lt": true}}`, "where.active.$lt"},
		{"Item", `{"when": {"$gte": "not a date"}}`, "where.when.$gte"},
		{"Item", `{"name": {"$in": ["a", "b", 3]}}`, "where.name.$in[2]"},
		{"Item", `{"name": {"$regex": "("}}`, "where.name.$regex"},
		{"Item", `{"score": {"$foo": 1}}`, "where.score.$foo"},
		{"Item", `{"$foo": [{"name": "a"}]}`, "where.$foo"},
		{"Item", `{"$or": [{"name": "a"}, {"nope": 1}]}`, "where.$or[1].nope"},
		{"Item", `{"owner": {"__type": "Pointer", "className": "Team", "objectId": "t1"}}`, "where.owner"},
		{"Item", `{"owner.name": "ada"}`, "where.owner.name"},
		{"Item", `{"ACL": {"*": {"read": true}}}`, "where.ACL"},
		{"Team", `{"members": {"$regex": "u"}}`, "where.members.$regex"},
		{"Team", `{"members.name": "x"}`, "where.members.name"},
	}
	for _, c := range cases {
		sch := mustSchema(t, s, c.class)
		e, err := query.ParseWhere(sch, decodeObject(t, c.where))
		if err == nil {
			t.Errorf("ParseWhere(%s) %s accepted: %#v", c.class, c.where, e)
			continue
		}
		var qe *query.Error
		if !errors.As(err, &qe) {
			t.Errorf("ParseWhere %s: error %T %v, want *query.Error", c.where, err, err)
			continue
		}
		if qe.Path != c.path {
			t.Errorf("ParseWhere %s: Path %q, want %q (%v)", c.where, qe.Path, c.path, err)
		}
	}
}
