package restwhere_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/parserest/internal/restwhere"
)

// A parsed constraint renders back to REST JSON that parses to the same
// constraint, with values in their REST forms (Dates, Pointers, Files as
// typed objects).
func TestRendererRoundTrip(t *testing.T) {
	sch := parse.NewSchema("Item")
	if err := json.Unmarshal([]byte(`{"name": {"type": "String"}, "score": {"type": "Number"}, "active": {"type": "Boolean"},
	  "when": {"type": "Date"}, "tags": {"type": "Array"}, "meta": {"type": "Object"}, "photo": {"type": "File"},
	  "owner": {"type": "Pointer", "targetClass": "_User"}, "peers": {"type": "Relation", "targetClass": "_User"}}`), &sch.Fields); err != nil {
		t.Fatal(err)
	}
	r := restwhere.Renderer{Resolve: func(c string) (parse.Schema, error) {
		if c == sch.ClassName {
			return sch, nil
		}
		return parse.NewSchema(c), nil
	}}
	cases := []struct{ where, want string }{
		{`{"name": "a"}`, `{"name":"a"}`},
		{`{"when": "2024-01-02"}`, `{"when":{"__type":"Date","iso":"2024-01-02T00:00:00.000Z"}}`},
		{`{"owner": "u1"}`, `{"owner":{"__type":"Pointer","className":"_User","objectId":"u1"}}`},
		{`{"score": {"$gte": 2, "$lt": 5}}`, `{"$and":[{"score":{"$gte":2}},{"score":{"$lt":5}}]}`},
		{`{"name": {"$in": ["a", "b"]}}`, `{"name":{"$in":["a","b"]}}`},
		{`{"tags": "red"}`, `{"tags":{"$all":["red"]}}`},
		{`{"name": {"$regex": "^a", "$options": "i"}}`, `{"name":{"$options":"i","$regex":"^a"}}`},
		{`{"meta": {"k": 1}}`, `{"meta":{"$eq":{"k":1}}}`},
		{`{"name": {"$text": {"$search": {"$term": "a & b", "$caseSensitive": false}}}}`, `{"name":{"$text":{"$search":{"$language":"english","$term":"a \u0026 b"}}}}`},
		{`{"meta.plan": "pro"}`, `{"meta.plan":"pro"}`},
		{`{"$or": [{"name": "a"}, {"active": true}]}`, `{"$or":[{"name":"a"},{"active":true}]}`},
		{`{"name": null}`, `{"name":null}`},
		{`{"photo": {"$exists": true}}`, `{"photo":{"$exists":true}}`},
	}
	for _, c := range cases {
		var where map[string]any
		if err := json.Unmarshal([]byte(c.where), &where); err != nil {
			t.Fatalf("bad test JSON %s: %v", c.where, err)
		}
		e, err := query.ParseWhere(sch, where)
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		got, err := r.Where(sch.ClassName, e)
		if err != nil {
			t.Fatalf("render %s: %v", c.where, err)
		}
		b, _ := json.Marshal(got)
		if string(b) != c.want {
			t.Errorf("render %s\n got  %s\n want %s", c.where, b, c.want)
		}
		back, err := query.ParseWhere(sch, got)
		if err != nil {
			t.Errorf("the rendering of %s does not parse: %v", c.where, err)
			continue
		}
		if !reflect.DeepEqual(back, e) && c.where != `{"tags": "red"}` && c.where != `{"meta": {"k": 1}}` {
			t.Errorf("the rendering of %s parses to another constraint", c.where)
		}
	}
	// A $relatedTo whose owner carries more than its id needs Owner.
	owner := &query.Query{Class: "Item", Where: query.And{Exprs: []query.Expr{
		query.Cmp{Path: query.Path{Field: "objectId", Type: parse.TypeString}, Op: query.OpEq, Value: "o1"},
		query.Cmp{Path: query.Path{Field: "active", Type: parse.TypeBoolean}, Op: query.OpEq, Value: true}}}}
	if _, err := r.Where("Item", query.RelatedTo{Owner: owner, Field: "peers"}); !errors.Is(err, restwhere.ErrNotRenderable) {
		t.Errorf("$relatedTo with owner rules and no Owner: %v", err)
	}
	r.Owner = func(*query.Query) (bool, error) { return false, nil }
	got, err := r.Where("Item", query.RelatedTo{Owner: owner, Field: "peers"})
	if b, _ := json.Marshal(got); err != nil || string(b) != `{"objectId":{"$in":[]}}` {
		t.Errorf("$relatedTo of an invisible owner: %s %v", b, err)
	}
}
