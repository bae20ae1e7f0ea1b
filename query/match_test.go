package query_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The differential proof against the SQL backends is the Match group of
// store/storetest (store/storetest/matchdiff.go), which SQLite and
// PostgreSQL both run; these are the node-by-node cases.

func matchSchemas() map[string]parse.Schema {
	item := parse.NewSchema("Item")
	for name, f := range map[string]parse.Field{
		"name":   {Type: parse.TypeString},
		"score":  {Type: parse.TypeNumber},
		"active": {Type: parse.TypeBoolean},
		"when":   {Type: parse.TypeDate},
		"meta":   {Type: parse.TypeObject},
		"tags":   {Type: parse.TypeArray},
		"owner":  {Type: parse.TypePointer, TargetClass: parse.ClassUser},
		"photo":  {Type: parse.TypeFile},
		"place":  {Type: parse.TypeGeoPoint},
		"area":   {Type: parse.TypePolygon},
		"raw":    {Type: parse.TypeBytes},
		"peers":  {Type: parse.TypeRelation, TargetClass: parse.ClassUser},
	} {
		item.Fields[name] = f
	}
	user := parse.NewSchema(parse.ClassUser)
	user.Fields["username"] = parse.Field{Type: parse.TypeString}
	user.Fields["best"] = parse.Field{Type: parse.TypeRelation, TargetClass: "Item"}
	return map[string]parse.Schema{"Item": item, parse.ClassUser: user}
}

func matchParser() query.Parser {
	return query.Parser{Resolve: func(class string) (parse.Schema, error) {
		if s, ok := matchSchemas()[class]; ok {
			return s, nil
		}
		return parse.Schema{}, fmt.Errorf("class %q was not found", class)
	}}
}

func parseMatchWhere(t testing.TB, where string) query.Expr {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(where), &m); err != nil {
		t.Fatalf("where %s: %v", where, err)
	}
	e, err := matchParser().Where(matchSchemas()["Item"], m)
	if err != nil {
		t.Fatalf("where %s: %v", where, err)
	}
	return e
}

func matchDate(iso string) map[string]any { return map[string]any{"__type": "Date", "iso": iso} }

func TestMatch(t *testing.T) {
	type obj = parse.Object
	cases := []struct {
		where string
		obj   obj
		want  bool
	}{
		// String, missing and null
		{`{"name": "a"}`, obj{"name": "a"}, true},
		{`{"name": "a"}`, obj{"name": "A"}, false},
		{`{"name": "a"}`, obj{}, false},
		{`{"name": "a"}`, obj{"name": nil}, false},
		{`{"name": null}`, obj{}, true},
		{`{"name": null}`, obj{"name": nil}, true},
		{`{"name": null}`, obj{"name": ""}, false},
		{`{"name": {"$ne": "a"}}`, obj{}, true}, // $ne matches a missing field
		{`{"name": {"$ne": "a"}}`, obj{"name": nil}, true},
		{`{"name": {"$ne": "a"}}`, obj{"name": "a"}, false},
		{`{"name": {"$ne": "a"}}`, obj{"name": "b"}, true},
		{`{"name": {"$ne": null}}`, obj{}, false},
		{`{"name": {"$ne": null}}`, obj{"name": ""}, true},
		{`{"name": {"$gt": "a"}}`, obj{}, false},
		{`{"name": {"$gt": "a"}}`, obj{"name": "b"}, true},
		{`{"name": {"$gt": "a"}}`, obj{"name": "B"}, false}, // byte order: upper case first
		{`{"name": {"$gte": "a", "$lt": "b"}}`, obj{"name": "a"}, true},
		{`{"name": {"$gte": "a", "$lt": "b"}}`, obj{"name": "azz"}, true},
		{`{"name": {"$gte": "a", "$lt": "b"}}`, obj{"name": "b"}, false},
		{`{"name": {"$lte": "é"}}`, obj{"name": "z"}, true},
		{`{"name": {"$exists": true}}`, obj{"name": ""}, true},
		{`{"name": {"$exists": true}}`, obj{"name": nil}, false},
		{`{"name": {"$exists": false}}`, obj{}, true},
		// a value of the wrong type: present, equal to nothing, ordered with nothing
		{`{"name": "5"}`, obj{"name": 5.0}, false},
		{`{"name": {"$ne": "5"}}`, obj{"name": 5.0}, true},
		{`{"name": {"$lt": "z"}}`, obj{"name": 5.0}, false},
		{`{"name": {"$exists": true}}`, obj{"name": 5.0}, true},
		{`{"name": {"$in": ["5"]}}`, obj{"name": 5.0}, false},
		{`{"name": {"$nin": ["5"]}}`, obj{"name": 5.0}, true},

		// Number: float64, json.Number, ints
		{`{"score": 1}`, obj{"score": 1.0}, true},
		{`{"score": 1}`, obj{"score": 1}, true},
		{`{"score": 1}`, obj{"score": int64(1)}, true},
		{`{"score": 1}`, obj{"score": json.Number("1.0")}, true},
		{`{"score": 1}`, obj{"score": json.Number("x")}, false},
		{`{"score": 1}`, obj{"score": "1"}, false},
		{`{"score": 1}`, obj{"score": true}, false},
		{`{"score": 1}`, obj{"score": math.NaN()}, false},
		{`{"score": {"$ne": 1}}`, obj{"score": math.NaN()}, true},
		{`{"score": {"$gt": 1}}`, obj{"score": 1.5}, true},
		{`{"score": {"$gt": 1}}`, obj{"score": 1}, false},
		{`{"score": {"$gte": 1}}`, obj{"score": 1}, true},
		{`{"score": {"$lt": 0}}`, obj{"score": -0.5}, true},
		{`{"score": {"$lt": 0}}`, obj{}, false},
		{`{"score": {"$lte": -1}}`, obj{"score": math.Inf(-1)}, true},

		// Boolean
		{`{"active": true}`, obj{"active": true}, true},
		{`{"active": true}`, obj{"active": 1.0}, false},
		{`{"active": false}`, obj{}, false},
		{`{"active": {"$ne": true}}`, obj{}, true},
		{`{"active": {"$ne": true}}`, obj{"active": false}, true},
		{`{"active": {"$in": [false]}}`, obj{"active": false}, true},

		// Date: REST Date, ISO string (createdAt), time.Time; instants at millisecond precision
		{`{"when": {"$lt": {"__type": "Date", "iso": "2024-06-01T00:00:00.000Z"}}}`, obj{"when": matchDate("2024-05-31T23:59:59.999Z")}, true},
		{`{"when": {"$lt": {"__type": "Date", "iso": "2024-06-01T00:00:00.000Z"}}}`, obj{"when": matchDate("2024-06-01T00:00:00.000Z")}, false},
		{`{"when": {"$lt": "2024-06-01"}}`, obj{"when": matchDate("2024-05-31T12:00:00.000Z")}, true},
		{`{"when": {"__type": "Date", "iso": "2024-06-01T00:00:00.000Z"}}`, obj{"when": matchDate("2024-06-01T02:00:00.000+02:00")}, true},
		{`{"when": {"__type": "Date", "iso": "2024-06-01T00:00:00.000Z"}}`, obj{"when": "2024-06-01T00:00:00Z"}, true},
		{`{"when": {"__type": "Date", "iso": "2024-06-01T00:00:00.000Z"}}`, obj{"when": time.Date(2024, 6, 1, 0, 0, 0, 999_999, time.UTC)}, true},
		{`{"when": {"__type": "Date", "iso": "2024-06-01T00:00:00.001Z"}}`, obj{"when": time.Date(2024, 6, 1, 0, 0, 0, 999_999, time.UTC)}, false},
		{`{"when": {"$gt": "2024-06-01T02:00:00.000+02:00"}}`, obj{"when": matchDate("2024-06-01T00:00:00.001Z")}, true},
		{`{"when": {"$gt": "2024-01-01"}}`, obj{"when": matchDate("not a date")}, false},
		{`{"when": {"$ne": "2024-01-01"}}`, obj{"when": matchDate("not a date")}, true},
		{`{"when": {"$gt": "2024-01-01"}}`, obj{"when": "2025-01-01"}, true},
		{`{"when": {"$in": ["2024-01-01", "2025-01-01"]}}`, obj{"when": matchDate("2025-01-01T00:00:00.000Z")}, true},
		{`{"createdAt": {"$gte": "2024-01-01"}}`, obj{"createdAt": "2024-03-01T10:00:00.000Z"}, true},
		{`{"createdAt": {"$gte": "2024-01-01"}}`, obj{"createdAt": "2023-12-31T23:59:59.999Z"}, false},
		{`{"updatedAt": {"$exists": true}}`, obj{"updatedAt": "2023-12-31T23:59:59.999Z"}, true},

		// Pointer: by objectId; className on the object is not compared
		{`{"owner": "u1"}`, obj{"owner": parse.Pointer(parse.ClassUser, "u1")}, true},
		{`{"owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"}}`, obj{"owner": parse.Pointer(parse.ClassUser, "u1")}, true},
		{`{"owner": "u1"}`, obj{"owner": map[string]any{"__type": "Object", "className": "_User", "objectId": "u1", "username": "x"}}, true},
		{`{"owner": "u1"}`, obj{"owner": parse.Pointer(parse.ClassUser, "u2")}, false},
		{`{"owner": "u1"}`, obj{"owner": "u1"}, false}, // not a Pointer value
		{`{"owner": {"$ne": "u1"}}`, obj{}, true},
		{`{"owner": {"$ne": "u1"}}`, obj{"owner": parse.Pointer(parse.ClassUser, "u1")}, false},
		{`{"owner": {"$in": ["u2", "u1"]}}`, obj{"owner": parse.Pointer(parse.ClassUser, "u1")}, true},
		{`{"owner": {"$nin": ["u2", "u1"]}}`, obj{}, true},

		// File: by name
		{`{"photo": {"__type": "File", "name": "a.png"}}`, obj{"photo": parse.File("a.png", "http://x/a.png")}, true},
		{`{"photo": "a.png"}`, obj{"photo": parse.File("b.png", "")}, false},

		// GeoPoint, Polygon, Bytes: only presence
		{`{"place": {"$exists": true}}`, obj{"place": parse.GeoPoint(1, 2)}, true},
		{`{"place": null}`, obj{"place": parse.GeoPoint(1, 2)}, false},
		{`{"raw": {"$ne": null}}`, obj{"raw": map[string]any{"__type": "Bytes", "base64": "AA=="}}, true},

		// $in / $nin with null and empty
		{`{"name": {"$in": ["a", "b"]}}`, obj{"name": "b"}, true},
		{`{"name": {"$in": ["a", "b"]}}`, obj{}, false},
		{`{"name": {"$in": ["a", null]}}`, obj{}, true},
		{`{"name": {"$in": [null]}}`, obj{"name": "a"}, false},
		{`{"name": {"$in": []}}`, obj{}, false},
		{`{"name": {"$nin": []}}`, obj{}, true},
		{`{"name": {"$nin": ["a", "b"]}}`, obj{}, true},
		{`{"name": {"$nin": ["a", "b"]}}`, obj{"name": "a"}, false},
		{`{"name": {"$nin": ["a", "b"]}}`, obj{"name": "c"}, true},
		{`{"name": {"$nin": ["a", null]}}`, obj{}, false},
		{`{"name": {"$nin": ["a", null]}}`, obj{"name": "c"}, true},
		{`{"name": {"$nin": [null]}}`, obj{"name": "c"}, true},

		// Array: element matching, strict by kind
		{`{"tags": "red"}`, obj{"tags": []any{"blue", "red"}}, true},
		{`{"tags": "red"}`, obj{"tags": []any{"Red"}}, false},
		{`{"tags": "red"}`, obj{"tags": []any{[]any{"red"}}}, false},
		{`{"tags": "red"}`, obj{}, false},
		{`{"tags": 1}`, obj{"tags": []any{"1", true}}, false},
		{`{"tags": 1}`, obj{"tags": []any{1}}, true},
		{`{"tags": 1}`, obj{"tags": []any{json.Number("1.0")}}, true},
		{`{"tags": true}`, obj{"tags": []any{1.0}}, false},
		{`{"tags": true}`, obj{"tags": []any{true}}, true},
		{`{"tags": false}`, obj{"tags": []any{0.0, nil}}, false},
		{`{"tags": {"$ne": "red"}}`, obj{}, true},
		{`{"tags": {"$ne": "red"}}`, obj{"tags": []any{}}, true},
		{`{"tags": {"$ne": "red"}}`, obj{"tags": []any{"red", "x"}}, false},
		{`{"tags": {"$ne": "red"}}`, obj{"tags": "red"}, true}, // not an array: no elements
		{`{"tags": "red"}`, obj{"tags": "red"}, false},
		{`{"tags": {"$eq": 2}}`, obj{"tags": []any{1.0, 2.0}}, true},
		{`{"tags": ["a", "b"]}`, obj{"tags": []any{"a", "b"}}, true},
		{`{"tags": ["a", "b"]}`, obj{"tags": []any{"b", "a"}}, false},
		{`{"tags": ["a", 1]}`, obj{"tags": []any{"a", 1}}, true},
		{`{"tags": []}`, obj{"tags": []any{}}, true},
		{`{"tags": []}`, obj{}, false},
		{`{"tags": null}`, obj{"tags": []any{}}, false},
		{`{"tags": {"$ne": null}}`, obj{"tags": []any{}}, true},
		{`{"tags": {"$exists": true}}`, obj{"tags": []any{}}, true},
		{`{"tags": {"$in": ["a", 2]}}`, obj{"tags": []any{2.0}}, true},
		{`{"tags": {"$in": ["a", 2]}}`, obj{"tags": []any{"2"}}, false},
		{`{"tags": {"$in": []}}`, obj{"tags": []any{"a"}}, false},
		{`{"tags": {"$nin": ["a", 2]}}`, obj{}, true},
		{`{"tags": {"$nin": ["a", 2]}}`, obj{"tags": []any{"b", "a"}}, false},
		{`{"tags": {"$nin": ["a", 2]}}`, obj{"tags": []any{"b"}}, true},
		{`{"tags": {"$nin": []}}`, obj{"tags": []any{"a"}}, true},
		{`{"tags": {"$all": ["a", 1, true]}}`, obj{"tags": []any{true, 1.0, "a", "z"}}, true},
		{`{"tags": {"$all": ["a", 1, true]}}`, obj{"tags": []any{true, "1", "a"}}, false},
		{`{"tags": {"$all": []}}`, obj{}, true},
		{`{"tags": {"$all": ["a"]}}`, obj{}, false},
		{`{"tags": {"$containedBy": ["a", "b"]}}`, obj{"tags": []any{"a"}}, true},
		{`{"tags": {"$containedBy": ["a", "b"]}}`, obj{"tags": []any{"a", "c"}}, false},
		{`{"tags": {"$containedBy": ["a", "b"]}}`, obj{"tags": []any{}}, true},
		{`{"tags": {"$containedBy": ["a", "b"]}}`, obj{}, false},
		{`{"tags": {"$containedBy": ["a", "b"]}}`, obj{"tags": []any{"a", nil}}, false},
		{`{"tags": {"$containedBy": ["a", "b"]}}`, obj{"tags": []any{[]any{"a"}}}, false},
		{`{"tags": {"$containedBy": [1, true]}}`, obj{"tags": []any{true, 1.0, true}}, true},
		{`{"tags": {"$containedBy": [1]}}`, obj{"tags": []any{true}}, false},
		{`{"tags": {"$containedBy": []}}`, obj{"tags": []any{}}, true},
		{`{"tags": {"$containedBy": []}}`, obj{"tags": []any{nil}}, false},

		// Object: paths into it
		{`{"meta.plan": "pro"}`, obj{"meta": map[string]any{"plan": "pro"}}, true},
		{`{"meta.plan": "pro"}`, obj{"meta": map[string]any{"plan": []any{"pro"}}}, false},
		{`{"meta.plan": "pro"}`, obj{"meta": "pro"}, false},
		{`{"meta.plan": {"$ne": "pro"}}`, obj{}, true},
		{`{"meta.plan": {"$ne": "pro"}}`, obj{"meta": map[string]any{"plan": map[string]any{}}}, true},
		{`{"meta.plan": null}`, obj{"meta": map[string]any{"plan": nil}}, true},
		{`{"meta.plan": null}`, obj{"meta": map[string]any{"plan": map[string]any{}}}, false},
		{`{"meta.plan": {"$exists": true}}`, obj{"meta": map[string]any{"plan": nil}}, false},
		{`{"meta.plan": {"$exists": true}}`, obj{"meta": map[string]any{"plan": []any{}}}, true},
		{`{"meta.seats": 3}`, obj{"meta": map[string]any{"seats": "3"}}, false},
		{`{"meta.seats": 3}`, obj{"meta": map[string]any{"seats": json.Number("3")}}, true},
		{`{"meta.seats": {"$gt": 1}}`, obj{"meta": map[string]any{"seats": "3"}}, false}, // never across types
		{`{"meta.seats": {"$gt": 1}}`, obj{"meta": map[string]any{"seats": 3}}, true},
		{`{"meta.seats": {"$lt": "a"}}`, obj{"meta": map[string]any{"seats": 3}}, false},
		{`{"meta.flag": true}`, obj{"meta": map[string]any{"flag": 1.0}}, false},
		{`{"meta.flag": {"$gt": false}}`, obj{"meta": map[string]any{"flag": true}}, true},
		{`{"meta.a.b.c": 1}`, obj{"meta": map[string]any{"a": map[string]any{"b": map[string]any{"c": 1.0}}}}, true},
		{`{"meta.a.b.c": 1}`, obj{"meta": map[string]any{"a": map[string]any{"b": "c"}}}, false},
		{`{"meta.a.b.c": {"$exists": false}}`, obj{"meta": map[string]any{"a": 5.0}}, true},
		{`{"meta.a.0": 1}`, obj{"meta": map[string]any{"a": map[string]any{"0": 1.0}}}, true}, // "0" is a key of an object
		{`{"meta.a.x": 1}`, obj{"meta": map[string]any{"a": []any{1.0}}}, false},
		{`{"meta.when": {"$lt": {"__type": "Date", "iso": "2025-01-01T00:00:00.000Z"}}}`, obj{"meta": map[string]any{"when": "2024-01-01T00:00:00.000Z"}}, true},
		{`{"meta.when": {"$lt": {"__type": "Date", "iso": "2025-01-01T00:00:00.000Z"}}}`, obj{"meta": map[string]any{"when": matchDate("2024-01-01T00:00:00.000Z")}}, false},
		{`{"meta.when.iso": {"$lt": {"__type": "Date", "iso": "2025-01-01T00:00:00.000Z"}}}`, obj{"meta": map[string]any{"when": matchDate("2024-01-01T00:00:00.000Z")}}, true},
		{`{"meta.plan": {"$in": ["pro", 5]}}`, obj{"meta": map[string]any{"plan": 5.0}}, true},
		{`{"meta.plan": {"$nin": ["pro", null]}}`, obj{"meta": map[string]any{}}, false},

		// Object: the whole value, as JSON text (keys sorted)
		{`{"meta": {"b": 1, "a": [true, "x"]}}`, obj{"meta": map[string]any{"a": []any{true, "x"}, "b": 1.0}}, true},
		{`{"meta": {"b": 1}}`, obj{"meta": map[string]any{"b": 1.0, "c": nil}}, false},
		{`{"meta": {}}`, obj{"meta": map[string]any{}}, true},
		{`{"meta": {"$ne": {}}}`, obj{}, true},
		{`{"meta": {"$in": [{"a": 1}, {}]}}`, obj{"meta": map[string]any{"a": 1}}, true},

		// $text: PostgreSQL's english configuration (stems, stop words)
		{`{"name": {"$text": {"$search": {"$term": "runs"}}}}`, obj{"name": "Running shoes"}, true},
		{`{"name": {"$text": {"$search": {"$term": "RUN"}}}}`, obj{"name": "she ran"}, false},
		{`{"name": {"$text": {"$search": {"$term": "slow & load"}}}}`, obj{"name": "is slow to load"}, true},
		{`{"name": {"$text": {"$search": {"$term": "slow <-> load"}}}}`, obj{"name": "is slow to load"}, false},
		{`{"name": {"$text": {"$search": {"$term": "'slow to load'"}}}}`, obj{"name": "is slow to load"}, true},
		{`{"name": {"$text": {"$search": {"$term": "slow | crash"}}}}`, obj{"name": "it crashed"}, true},
		{`{"name": {"$text": {"$search": {"$term": "the"}}}}`, obj{"name": "the"}, false}, // stop words only: nothing
		{`{"name": {"$text": {"$search": {"$term": "runs", "$language": "simple"}}}}`, obj{"name": "Running shoes"}, false},
		{`{"name": {"$text": {"$search": {"$term": "x"}}}}`, obj{}, false},
		{`{"name": {"$text": {"$search": {"$term": "x"}}}}`, obj{"name": 5.0}, false},
		{`{"$nor": [{"name": {"$text": {"$search": {"$term": "x"}}}}]}`, obj{}, true},

		// $regex and its flags
		{`{"name": {"$regex": "^a"}}`, obj{"name": "abc"}, true},
		{`{"name": {"$regex": "^a"}}`, obj{"name": "Abc"}, false},
		{`{"name": {"$regex": "^a", "$options": "i"}}`, obj{"name": "Abc"}, true},
		{`{"name": {"$regex": "^a"}}`, obj{}, false},
		{`{"name": {"$regex": ""}}`, obj{"name": ""}, true},
		{`{"name": {"$regex": ""}}`, obj{}, false},
		{`{"name": {"$regex": "^two$"}}`, obj{"name": "one\ntwo"}, false},
		{`{"name": {"$regex": "^two$", "$options": "m"}}`, obj{"name": "one\ntwo"}, true},
		{`{"name": {"$regex": "one.two"}}`, obj{"name": "one\ntwo"}, false},
		{`{"name": {"$regex": "one.two", "$options": "s"}}`, obj{"name": "one\ntwo"}, true},
		{`{"name": {"$regex": "ONE.TWO$", "$options": "ims"}}`, obj{"name": "one\ntwo\nthree"}, true},
		{`{"name": {"$regex": "é+"}}`, obj{"name": "cafée"}, true},
		{`{"name": {"$regex": "5"}}`, obj{"name": 5.0}, false},
		{`{"meta.plan": {"$regex": "^p"}}`, obj{"meta": map[string]any{"plan": "pro"}}, true},
		{`{"meta.plan": {"$regex": "5"}}`, obj{"meta": map[string]any{"plan": 5.0}}, false},
		{`{"meta.plan": {"$regex": "pro"}}`, obj{"meta": map[string]any{"plan": []any{"pro"}}}, false},

		// $and, $or, $nor
		{`{"name": "a", "score": 1}`, obj{"name": "a", "score": 1.0}, true},
		{`{"name": "a", "score": 1}`, obj{"name": "a"}, false},
		{`{"$or": [{"name": "a"}, {"score": 1}]}`, obj{"score": 1.0}, true},
		{`{"$or": [{"name": "a"}, {"score": 1}]}`, obj{}, false},
		{`{"$and": [{"name": "a"}, {"score": {"$exists": false}}]}`, obj{"name": "a"}, true},
		{`{"$nor": [{"name": "a"}, {"score": 1}]}`, obj{}, true}, // a clause on a missing field is not true
		{`{"$nor": [{"score": {"$gt": 1}}]}`, obj{}, true},
		{`{"$nor": [{"name": "a"}, {"score": 1}]}`, obj{"score": 1.0}, false},
		{`{"$nor": [{"tags": {"$containedBy": ["a"]}}]}`, obj{"tags": []any{"a", nil}}, true},
		{`{"$or": [{}, {"name": "x"}]}`, obj{}, true},
		{`{"$nor": [{}]}`, obj{}, false},
		{`{"$and": [{}]}`, obj{}, true},
		{`{"$or": [{"$and": [{"name": "a"}, {"$nor": [{"tags": "x"}]}]}, {"score": {"$gte": 5}}]}`, obj{"name": "a", "tags": []any{"y"}}, true},
		{`{"$or": [{"$and": [{"name": "a"}, {"$nor": [{"tags": "x"}]}]}, {"score": {"$gte": 5}}]}`, obj{"name": "a", "tags": []any{"x"}, "score": 4.0}, false},
	}
	for _, c := range cases {
		e := parseMatchWhere(t, c.where)
		got, err := query.Match(e, c.obj)
		if err != nil {
			t.Errorf("%s on %v: %v", c.where, c.obj, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s on %v = %v, want %v", c.where, c.obj, got, c.want)
		}
		// $nor of one clause is its negation: Match is two-valued.
		neg, err := query.Match(query.Nor{Exprs: []query.Expr{e}}, c.obj)
		if err != nil || neg == got {
			t.Errorf("$nor [%s] on %v = %v, %v; want %v", c.where, c.obj, neg, err, !got)
		}
	}
}

func TestMatchASTEdges(t *testing.T) {
	str := query.Path{Field: "name", Type: parse.TypeString}
	arr := query.Path{Field: "tags", Type: parse.TypeArray}
	obj := parse.Object{"name": "a", "tags": []any{"x", nil}}
	cases := []struct {
		name string
		e    query.Expr
		want bool
	}{
		{"nil expression", nil, true},
		{"empty And", query.And{}, true},
		{"empty Or", query.Or{}, false},
		{"empty Nor", query.Nor{}, true},
		{"In with only null, not set", query.In{Path: query.Path{Field: "nope", Type: parse.TypeString}, Values: []any{nil}}, true},
		{"$nin with only null, set", query.In{Path: str, Values: []any{nil}, Not: true}, true},
		{"ordering with null", query.Cmp{Path: str, Op: query.OpLt, Value: nil}, false},
		{"array element = null", query.Cmp{Path: arr, Op: query.OpEq, Value: nil, ArrayElem: true}, false},
		{"array element <> null", query.Cmp{Path: arr, Op: query.OpNe, Value: nil, ArrayElem: true}, true},
		{"int operand", query.Cmp{Path: query.Path{Field: "n", Type: parse.TypeNumber}, Op: query.OpEq, Value: 2}, false},
		{"Date operand not canonical", query.Cmp{Path: query.Path{Field: "d", Type: parse.TypeDate}, Op: query.OpEq, Value: "2024-01-01"}, true},
		{"Boolean ordering", query.Cmp{Path: query.Path{Field: "b", Type: parse.TypeBoolean}, Op: query.OpGt, Value: false}, true},
	}
	extra := parse.Object{"name": "a", "tags": []any{"x", nil}, "d": time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), "b": true}
	for _, c := range cases {
		o := obj
		if c.name == "Date operand not canonical" || c.name == "Boolean ordering" {
			o = extra
		}
		got, err := query.Match(c.e, o)
		if err != nil || got != c.want {
			t.Errorf("%s: Match = %v, %v; want %v", c.name, got, err, c.want)
		}
	}
}

func TestMatchNotMatchable(t *testing.T) {
	obj := parse.Object{"name": "a", "owner": parse.Pointer(parse.ClassUser, "u1"), "place": parse.GeoPoint(1, 1),
		"meta": map[string]any{"a": []any{1.0}, "b": map[string]any{"0": 1.0}}}
	wheres := []string{
		`{"owner": {"$inQuery": {"className": "_User", "where": {"username": "a"}}}}`,
		`{"owner": {"$notInQuery": {"className": "_User"}}}`,
		`{"name": {"$select": {"query": {"className": "_User"}, "key": "username"}}}`,
		`{"name": {"$dontSelect": {"query": {"className": "_User"}, "key": "username"}}}`,
		`{"$relatedTo": {"object": {"__type": "Pointer", "className": "_User", "objectId": "u1"}, "key": "best"}}`,
		`{"peers": "u1"}`,
		`{"peers": {"$in": ["u1", "u2"]}}`,
		`{"peers": {"$nin": ["u1"]}}`,
		`{"peers": {"$all": ["u1"]}}`,
		`{"place": {"$nearSphere": [1, 1]}}`,
		`{"place": {"$nearSphere": [1, 1], "$maxDistanceInKilometers": 5}}`,
		`{"place": {"$within": {"$box": [[0, 0], [2, 2]]}}}`,
		`{"place": {"$geoWithin": {"$polygon": [[0, 0], [0, 2], [2, 2]]}}}`,
		`{"place": {"$geoWithin": {"$centerSphere": [[1, 1], 0.1]}}}`,
		`{"meta": {"$gt": {"a": 1}}}`, // SQLite orders JSON text, PostgreSQL jsonb
		// refused whatever the object holds: the first clause is false, the second needs the database
		`{"$and": [{"name": "zzz"}, {"owner": {"$inQuery": {"className": "_User"}}}]}`,
		`{"$or": [{"name": "a"}, {"place": {"$nearSphere": [1, 1]}}]}`,
		`{"$nor": [{"name": "a"}, {"peers": "u1"}]}`,
	}
	for _, w := range wheres {
		e := parseMatchWhere(t, w)
		if err := query.Matchable(e); !errors.Is(err, query.ErrNotMatchable) {
			t.Errorf("Matchable(%s) = %v, want ErrNotMatchable", w, err)
		}
		ok, err := query.Match(e, obj)
		if ok || !errors.Is(err, query.ErrNotMatchable) {
			t.Errorf("Match(%s) = %v, %v; want false, ErrNotMatchable", w, ok, err)
		}
	}

	// A path that indexes an array: PostgreSQL's #> would, SQLite's
	// json_extract does not. Refused only when the data is an array there.
	e := parseMatchWhere(t, `{"meta.a.0": 1}`)
	if err := query.Matchable(e); err != nil {
		t.Errorf("Matchable(meta.a.0) = %v", err)
	}
	if ok, err := query.Match(e, obj); ok || !errors.Is(err, query.ErrNotMatchable) {
		t.Errorf("meta.a.0 on an array: %v, %v; want false, ErrNotMatchable", ok, err)
	}
	if ok, err := query.Match(parseMatchWhere(t, `{"meta.b.0": 1}`), obj); !ok || err != nil {
		t.Errorf("meta.b.0 on an object: %v, %v; want true", ok, err)
	}

	str := query.Path{Field: "name", Type: parse.TypeString}
	rel := query.Path{Field: "peers", Type: parse.TypeRelation}
	geo := query.Path{Field: "place", Type: parse.TypeGeoPoint}
	arr := query.Path{Field: "tags", Type: parse.TypeArray}
	asts := map[string]query.Expr{
		"pointer node":              &query.And{},
		"Cmp on a Relation":         query.Cmp{Path: rel, Op: query.OpEq, Value: "u1"},
		"Exists on a Relation":      query.Exists{Path: rel, Exists: true},
		"ACL":                       query.Exists{Path: query.Path{Field: "ACL", Type: parse.TypeACL}, Exists: true},
		"unknown type":              query.Exists{Path: query.Path{Field: "x", Type: "Weird"}, Exists: true},
		"sub-path into a String":    query.Exists{Path: query.Path{Field: "name", Sub: []string{"x"}, Type: parse.TypeString}, Exists: true},
		"unknown operator":          query.Cmp{Path: str, Op: "~", Value: "a"},
		"map operand":               query.Cmp{Path: str, Op: query.OpEq, Value: map[string]any{"a": 1}},
		"map in $in":                query.In{Path: str, Values: []any{"a", []any{"b"}}},
		"GeoPoint by value":         query.Cmp{Path: geo, Op: query.OpEq, Value: "x"},
		"element ordering":          query.Cmp{Path: arr, Op: query.OpLt, Value: "a", ArrayElem: true},
		"element compare on String": query.Cmp{Path: str, Op: query.OpEq, Value: "a", ArrayElem: true},
		"$all on a String":          query.All{Path: str, Values: []any{"a"}},
		"$all with null":            query.All{Path: arr, Values: []any{nil}},
		"$containedBy with a map":   query.ContainedBy{Path: arr, Values: []any{map[string]any{}}},
		"$regex on a Number":        query.Regex{Path: query.Path{Field: "score", Type: parse.TypeNumber}, Pattern: "1"},
		"$regex on a whole Object":  query.Regex{Path: query.Path{Field: "meta", Type: parse.TypeObject}, Pattern: "1"},
		"Array ordering":            query.Cmp{Path: arr, Op: query.OpGt, Value: "[]"},
		"nested in Or":              query.Or{Exprs: []query.Expr{query.Exists{Path: str, Exists: true}, query.GeoBox{Path: geo}}},
		"RelationHas":               query.RelationHas{Field: "peers", Class: "Item", IDs: []any{"u1"}},
		"RelatedTo without owner":   query.RelatedTo{Field: "best"},
		"GeoPolygon":                query.GeoPolygon{Path: geo},
		"GeoNear":                   query.GeoNear{Path: geo},
	}
	for name, e := range asts {
		ok, err := query.Match(e, obj)
		if ok || !errors.Is(err, query.ErrNotMatchable) {
			t.Errorf("%s: Match = %v, %v; want false, ErrNotMatchable", name, ok, err)
		}
	}
}

func TestMatchBadRegex(t *testing.T) {
	// The parser refuses a pattern Go cannot compile; a hand-built one is an
	// error too, and not ErrNotMatchable (the database would fail the same).
	e := query.Regex{Path: query.Path{Field: "name", Type: parse.TypeString}, Pattern: "(a"}
	ok, err := query.Match(e, parse.Object{"name": "a"})
	if ok || err == nil || errors.Is(err, query.ErrNotMatchable) {
		t.Errorf("Match(bad regex) = %v, %v; want false and a regex error", ok, err)
	}
	if err := query.Matchable(e); err == nil {
		t.Error("Matchable(bad regex) = nil")
	}
	// Flags are the compiler's: (?i) etc. in front of the pattern.
	e = query.Regex{Path: query.Path{Field: "name", Type: parse.TypeString}, Pattern: "^B$", Flags: query.RegexFlags{CaseInsensitive: true, Multiline: true}}
	if ok, err := query.Match(e, parse.Object{"name": "a\nb"}); !ok || err != nil {
		t.Errorf("Match(im) = %v, %v", ok, err)
	}
}

// matchFuzzObjects are the objects each fuzzed where-constraint is tried on,
// besides the one the fuzzer supplies.
func matchFuzzObjects() []parse.Object {
	return []parse.Object{
		{},
		{"name": "a", "score": 1.0, "active": true, "when": matchDate("2024-01-01T00:00:00.000Z"), "createdAt": "2024-01-01T00:00:00.000Z",
			"meta": map[string]any{"plan": "pro", "seats": 3.0, "a": []any{1.0, map[string]any{}}}, "tags": []any{"red", 1.0, true, nil, []any{}},
			"owner": parse.Pointer(parse.ClassUser, "u1"), "photo": parse.File("f.png", ""), "place": parse.GeoPoint(40, -74)},
		{"name": 1.0, "score": "x", "active": "yes", "when": 7.0, "meta": []any{1.0}, "tags": map[string]any{"a": 1.0}, "owner": "u1", "photo": 3.0,
			"createdAt": map[string]any{"__type": "Date"}, "ACL": map[string]any{"*": map[string]any{"read": true}}},
		{"name": nil, "meta": map[string]any{"plan": nil, "seats": json.Number("2"), "n": map[string]any{"deep": math.Inf(1)}}, "tags": []any{}},
	}
}

var matchSeeds = []string{
	`{}`,
	`{"name": "a", "score": {"$gte": 1, "$lt": 10}}`,
	`{"active": true, "when": {"$lt": {"__type": "Date", "iso": "2025-01-01T00:00:00.000Z"}}}`,
	`{"createdAt": {"$gte": "2024-01-31"}, "updatedAt": {"$exists": true}}`,
	`{"meta.plan": "pro", "meta.seats": {"$gt": 3}, "meta.a.b": {"$ne": null}}`,
	`{"meta": {"plan": "pro"}}`,
	`{"tags": "red", "name": {"$in": ["a", "b", null]}}`,
	`{"tags": {"$all": ["red", 1, true]}, "score": {"$nin": [1, 2]}}`,
	`{"tags": {"$containedBy": ["a", "b"]}}`,
	`{"tags": ["a", "b"], "photo": {"__type": "File", "name": "f.png"}}`,
	`{"tags": {"$ne": null}, "place": {"$exists": true}}`,
	`{"owner": {"$in": ["u1", {"__type": "Pointer", "className": "_User", "objectId": "u2"}]}}`,
	`{"name": {"$regex": "^a.*b$", "$options": "ims"}}`,
	`{"$or": [{"name": "a"}, {"$and": [{"score": 1}, {"$nor": [{"active": false}]}]}]}`,
	`{"$or": [{}, {"name": {"$exists": false}}]}`,
	`{"owner": {"$inQuery": {"className": "_User", "where": {"username": "x"}}}}`,
	`{"name": {"$select": {"query": {"className": "_User"}, "key": "username"}}}`,
	`{"$relatedTo": {"object": {"__type": "Pointer", "className": "_User", "objectId": "u1"}, "key": "best"}}`,
	`{"peers": {"$in": ["u1"]}}`,
	`{"place": {"$nearSphere": {"__type": "GeoPoint", "latitude": 40, "longitude": -74}, "$maxDistanceInKilometers": 10}}`,
	`{"place": {"$geoWithin": {"$polygon": [[0, 0], [0, 1], [1, 1]]}}}`,
}

// FuzzMatchNoPanic: for any where-constraint that parses and any object,
// Match neither panics nor fails but with ErrNotMatchable, answers the same
// twice, refuses exactly what Matchable refuses (or data the backends
// disagree on), and $nor of the constraint is its negation.
func FuzzMatchNoPanic(f *testing.F) {
	for _, s := range matchSeeds {
		f.Add([]byte(s), []byte(`{"name": "a", "score": 2, "tags": ["red", 1, null], "meta": {"plan": "pro", "a": {"b": [1]}}}`))
	}
	f.Add([]byte(`{"meta.a.0": 1}`), []byte(`{"meta": {"a": [1]}}`))
	f.Add([]byte(`{"tags": {"$containedBy": []}, "when": {"$gt": "2020-01-01"}}`), []byte(`{"tags": [], "when": "2024-01-01"}`))
	f.Add([]byte(`{"$nor": [{"meta.x": {"$regex": "^a", "$options": "ims"}}]}`), []byte(`{"meta": {"x": "A"}}`))
	schema := matchSchemas()["Item"]
	parser := matchParser()
	f.Fuzz(func(t *testing.T, whereData, objData []byte) {
		if len(whereData) > 1<<14 || len(objData) > 1<<14 {
			return
		}
		var where map[string]any
		if json.Unmarshal(whereData, &where) != nil {
			return
		}
		e, err := parser.Where(schema, where)
		if err != nil {
			return
		}
		objs := matchFuzzObjects()
		var o map[string]any
		if json.Unmarshal(objData, &o) == nil {
			objs = append(objs, o)
		}
		static := query.Matchable(e)
		if static != nil && !errors.Is(static, query.ErrNotMatchable) {
			t.Fatalf("Matchable(%s) = %v: a parsed where is matchable or ErrNotMatchable", whereData, static)
		}
		for _, o := range objs {
			got, err := query.Match(e, o)
			if err != nil {
				if !errors.Is(err, query.ErrNotMatchable) {
					t.Fatalf("Match(%s, %v): %v is not ErrNotMatchable", whereData, o, err)
				}
				if got {
					t.Fatalf("Match(%s, %v) = true with an error", whereData, o)
				}
				continue
			}
			if static != nil {
				t.Fatalf("Match(%s, %v) succeeded where Matchable refused: %v", whereData, o, static)
			}
			again, err2 := query.Match(e, o)
			if again != got || err2 != nil {
				t.Fatalf("Match(%s, %v) = %v then %v, %v", whereData, o, got, again, err2)
			}
			if neg, err := query.Match(query.Nor{Exprs: []query.Expr{e}}, o); err != nil || neg == got {
				t.Fatalf("$nor [%s] on %v = %v, %v; Match = %v", whereData, o, neg, err, got)
			}
		}
	})
}
