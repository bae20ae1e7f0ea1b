package query_test

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// DenyField answers from the schema it is given alone: the class's own
// fields alphabetically then the three system fields (no ACL), at most
// MaxAllowedFields of them, and a rewrite only for the storage name of a
// Pointer of that schema.
func TestDenyField(t *testing.T) {
	s := testSchema()
	d := query.DenyField(s, "secret.x", "where.secret.x", "").Denied
	want := []string{"active", "meta", "name", "owner", "peers", "photo", "raw", "score", "tags", "when", "where", "objectId", "createdAt", "updatedAt"}
	if d.Field != "secret" || !reflect.DeepEqual(d.Allowed, want) || d.More != 0 || d.Rewrite != "" || d.Kind() != query.KindFieldDenied {
		t.Errorf("denial %+v", d)
	}
	for _, c := range []struct{ name, prefix, rewrite string }{
		{"_p_owner", "$", "$owner"},
		{"_p_owner", "", "owner"},
		{"_p_name", "$", ""}, // not a Pointer
		{"_p_ghost", "", ""}, // not in the schema: hidden or missing alike
	} {
		e := query.DenyField(s, c.name, "at", c.prefix)
		if e.Denied.Rewrite != c.rewrite || (c.rewrite != "") != (e.Denied.Kind() == query.KindStorageForm) {
			t.Errorf("%s%s: %+v (%v)", c.prefix, c.name, e.Denied, e)
		}
	}
	wide := parse.NewSchema("Wide")
	for i := range 30 {
		wide.Fields[fmt.Sprintf("f%02d", i)] = parse.Field{Type: parse.TypeString}
	}
	if d := query.DenyField(wide, "x", "keys", "").Denied; len(d.Allowed) != query.MaxAllowedFields || d.More != 13 || d.Allowed[0] != "f00" {
		t.Errorf("wide: %+v", d)
	}
}

// In a pipeline a name the rows lack is a field denial while the rows
// still carry the class's fields, and a shape error once a stage has
// replaced them; a storage-form name is refused either way.
func TestPipelineFieldDenial(t *testing.T) {
	for _, c := range []struct {
		pipeline string
		denied   bool
	}{
		{`[{"$match": {"nope": 1}}]`, true},
		{`[{"$sort": {"score": 1}}, {"$limit": 2}, {"$match": {"nope": 1}}]`, true},
		{`[{"$addFields": {"x": 1}}, {"$match": {"nope": 1}}]`, true},
		{`[{"$unwind": "$tags"}, {"$group": {"_id": "$nope"}}]`, true},
		{`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}, {"$project": {"nope": 1}}]`, true},
		{`[{"$facet": {"a": [{"$sort": {"nope": 1}}]}}]`, true},
		{`[{"$group": {"_id": "$name"}}, {"$match": {"score": 1}}]`, false},
		{`[{"$project": {"name": 1}}, {"$group": {"_id": "$score"}}]`, false},
		{`[{"$count": "n"}, {"$sort": {"score": 1}}]`, false},
		{`[{"$replaceRoot": {"newRoot": {"a": "$name"}}}, {"$sort": {"name": 1}}]`, false},
		{`[{"$group": {"_id": "$name"}}, {"$match": {"_p_owner": "x"}}]`, true},
		{`[{"$group": {"_id": "$name"}}, {"$sort": {"_p_owner": 1}}]`, true},
	} {
		_, err := parsePL(t, c.pipeline)
		var qe *query.Error
		if !errors.As(err, &qe) {
			t.Errorf("%s: %v, want a *query.Error", c.pipeline, err)
			continue
		}
		if (qe.Denied != nil) != c.denied {
			t.Errorf("%s: Denied %+v, want denied %v (%v)", c.pipeline, qe.Denied, c.denied, err)
		}
	}
}

// A where is a field denial only when parsed against an agent's view
// (Parser.View, which the governed scope sets, sub-queries included);
// the operator's own filters, parsed against full schemas, get a plain
// unknown field that lists nothing.
func TestWhereFieldDenialNeedsView(t *testing.T) {
	s := testSchema()
	resolve := func(string) (parse.Schema, error) { return testSchema(), nil }
	for _, where := range []map[string]any{
		{"nope": 1.0},
		{"owner": map[string]any{"$inQuery": map[string]any{"className": "_User", "where": map[string]any{"nope": 1.0}}}},
		{"name": map[string]any{"$select": map[string]any{"query": map[string]any{"className": "Item"}, "key": "nope"}}},
	} {
		for _, view := range []bool{true, false} {
			_, err := query.Parser{Resolve: resolve, View: view}.Where(s, where)
			var qe *query.Error
			if !errors.As(err, &qe) || (qe.Denied != nil) != view {
				t.Errorf("%v (view %v): %v", where, view, err)
				continue
			}
			if !view && (!strings.Contains(qe.Msg, `unknown field "nope"`) || strings.Contains(qe.Msg, "score")) {
				t.Errorf("%v: %q", where, qe.Msg)
			}
		}
	}
}
