package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// The differential proof of query.Match: for every where-constraint below,
// the objects a backend's Find selects are exactly those Match accepts,
// among the same objects as Find reads them back. Match is what the live
// change feed and the governed scope decide visibility with, without the
// database; a backend whose SQL disagrees with it on any constraint here
// is a bug in the backend's dialect, the compiler or Match.

var matchTests = []subtest{
	{"Differential", testMatchDifferential},
	{"NotMatchable", testMatchNotMatchable},
}

// RunMatch runs only the query.Match tests; Run runs them too. A backend
// whose answers depend on how its database is set up (PostgreSQL's
// collation) runs RunMatch once per setup.
func RunMatch(t *testing.T, open func(t *testing.T) store.Store) {
	runGroup(t, "Match", matchTests, open, nil)
}

func matchDiffSchema() parse.Schema {
	sch := parse.NewSchema("Thing")
	for name, f := range map[string]parse.Field{
		"name":   {Type: parse.TypeString},
		"note":   {Type: parse.TypeString},
		"score":  {Type: parse.TypeNumber},
		"active": {Type: parse.TypeBoolean},
		"when":   {Type: parse.TypeDate},
		"meta":   {Type: parse.TypeObject},
		"tags":   {Type: parse.TypeArray},
		"owner":  {Type: parse.TypePointer, TargetClass: parse.ClassUser},
		"photo":  {Type: parse.TypeFile},
		"place":  {Type: parse.TypeGeoPoint},
	} {
		sch.Fields[name] = f
	}
	return sch
}

func mdDate(iso string) map[string]any { return map[string]any{"__type": "Date", "iso": iso} }

// matchDiffObjects are hand-picked edge cases followed by seeded random
// combinations.
func matchDiffObjects() []parse.Object {
	objs := []parse.Object{
		{"name": "alpha", "score": 1, "active": true, "tags": []any{"red", "blue"}, "meta": map[string]any{"plan": "pro", "seats": json.Number("3")}},
		{"name": "Alpha", "score": 1.5, "active": false, "tags": []any{"red"}, "meta": map[string]any{"plan": "free", "seats": 0.5}},
		{"name": "ALPHA", "score": -10.0, "tags": []any{}, "meta": map[string]any{}},
		{"name": "", "score": int64(0), "active": false, "tags": []any{1, 2.0, int64(3)}, "meta": map[string]any{"plan": 5}},
		{"name": nil, "score": nil, "tags": nil, "meta": nil, "owner": nil},
		{}, // every user field missing
		{"name": "beta", "tags": []any{true}, "meta": map[string]any{"plan": true, "flag": true}},
		{"name": "b", "tags": []any{false, 0.0}, "meta": map[string]any{"plan": nil, "flag": 1.0}},
		{"name": "gamma ray", "tags": []any{nil}, "meta": map[string]any{"flag": false, "seats": "3"}},
		{"name": "Δelta", "tags": []any{"red", nil}, "meta": map[string]any{"flag": 0.0, "n": map[string]any{"deep": "x"}}},
		{"name": "zeta", "tags": []any{[]any{"red"}}, "meta": map[string]any{"n": map[string]any{"deep": 2.0}}},
		{"name": "a.b", "tags": []any{map[string]any{"a": 1.0}}, "meta": map[string]any{"n": "str"}},
		{"name": "x%_y", "tags": []any{"Red"}, "meta": map[string]any{"list": []any{1.0, 2.0}}},
		{"name": "line1\nline2", "tags": []any{1.0, "1"}, "meta": map[string]any{"when": "2024-01-01T00:00:00.000Z"}},
		{"name": "alphabet", "tags": []any{"blue", 2.0, true}, "meta": map[string]any{"arr": []any{map[string]any{"k": 1.0}}}},
		{"note": "one\ntwo\nthree", "score": 2.0},
		{"note": "ONE\nTWO", "score": 3.0, "tags": []any{1.0, true}},
		{"note": "one two", "score": 10.0},
		{"note": "two", "score": 100.0},
		{"note": "xtwo\n", "score": 1e9},
		{"when": mdDate("2024-03-15T10:30:00.123Z"), "score": -0.5},
		{"when": mdDate("2024-03-15T10:30:00.122Z"), "active": true},
		{"when": mdDate("2021-01-01T00:00:00.000Z"), "owner": parse.Pointer(parse.ClassUser, "u1")},
		{"when": mdDate("1999-12-31T23:59:59.999Z"), "owner": parse.Pointer(parse.ClassUser, "u2"), "photo": parse.File("a.png", "")},
		{"when": mdDate("2030-06-01T00:00:00.000Z"), "owner": parse.Pointer(parse.ClassUser, "u3"), "photo": parse.File("b.png", "")},
		{"meta": map[string]any{"plan": "pro", "seats": 3.0}, "place": parse.GeoPoint(40, -74)},
		{"meta": map[string]any{"plan": map[string]any{"x": 1.0}}},
		{"meta": map[string]any{"plan": []any{"pro"}}},
		{"meta": map[string]any{"plan": "Pro", "when": "2026-01-01T00:00:00.000Z"}},
		// the same values under another JSON type: text that reads as a
		// number or a boolean, a boolean where text or a number was, nulls
		// and nested arrays and objects
		{"name": "c", "tags": []any{[]any{}, []any{nil}, map[string]any{"k": nil}}, "meta": map[string]any{"flag": "true", "plan": "1", "seats": "0.5", "list": []any{[]any{1.0}}}},
		{"name": "d", "tags": []any{nil, nil}, "meta": map[string]any{"flag": "1", "plan": false, "seats": nil, "n": nil}},
		{"tags": []any{0.0, false, "0", "false"}, "meta": map[string]any{"flag": 0.0, "plan": "false", "seats": true, "n": []any{}}},
		// text for the regular expression engines to disagree on: case
		// folding beyond ASCII (the Kelvin sign folds to k, final sigma
		// to σ), Unicode letters and digits, word boundaries, newlines
		// and the characters the engines treat specially
		{"name": "\u212aelvin", "note": "ΣΊΣΥΦΟΣ\nend", "meta": map[string]any{"plan": "ς"}},
		{"name": "naïve café", "note": "tab\there\r\nCRLF", "meta": map[string]any{"plan": "١٢٣"}},
		{"name": "a\\b(c)[d]{e}", "note": "x*y+z?^$|."},
		{"name": "under_score-dash", "note": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{"name": "１２３ fullwidth", "note": "\u00a0nbsp\u2028ls"},
	}
	handPicked := len(objs)
	r := rand.New(rand.NewPCG(7, 11))
	pick := func(vals ...any) any { return vals[r.IntN(len(vals))] }
	const missing = "\x00missing"
	for len(objs) < handPicked+27 {
		o := parse.Object{}
		set := func(k string, v any) {
			if v != missing {
				o[k] = v
			}
		}
		set("name", pick(missing, "alpha", "Alpha", "beta", "b", "", "gamma", "zeta", "alpine", nil))
		set("note", pick(missing, "one\ntwo", "ONE TWO", "two", "a\nb"))
		set("score", pick(missing, -1.0, 0.0, 0.5, 1.0, 2.0, 5.0, 7.25, nil))
		set("active", pick(missing, true, false))
		set("when", pick(missing, mdDate("2024-06-01T00:00:00.000Z"), mdDate("2023-02-28T12:00:00.000Z"), mdDate("2025-12-31T23:59:59.999Z")))
		set("meta", pick(missing, map[string]any{"plan": "pro"}, map[string]any{"plan": "free", "seats": 2.0},
			map[string]any{"seats": 10.0, "flag": true}, map[string]any{"n": map[string]any{"deep": "y"}}, map[string]any{"plan": 1.0}))
		set("tags", pick(missing, []any{"red"}, []any{"blue", "red"}, []any{2.0}, []any{"green", 1.0, false}, []any{}))
		set("owner", pick(missing, parse.Pointer(parse.ClassUser, "u1"), parse.Pointer(parse.ClassUser, "u2")))
		set("photo", pick(missing, parse.File("a.png", ""), parse.File("c.png", "")))
		objs = append(objs, o)
	}
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, o := range objs {
		o["objectId"] = fmt.Sprintf("o%02d", i)
		o["createdAt"] = mdDate(parse.FormatDate(base.Add(time.Duration(i) * 40 * 24 * time.Hour)))
		o["updatedAt"] = mdDate(parse.FormatDate(base.Add(time.Duration(i)*40*24*time.Hour + time.Duration(i%7)*time.Hour)))
	}
	return objs
}

// matchDiffWheres cover every operator Match supports.
var matchDiffWheres = []string{
	// String
	`{"name": "alpha"}`,
	`{"name": "Alpha"}`,
	`{"name": ""}`,
	`{"name": null}`,
	`{"name": {"$eq": "beta"}}`,
	`{"name": {"$ne": "alpha"}}`,
	`{"name": {"$ne": null}}`,
	`{"name": {"$gt": "b"}}`,
	`{"name": {"$gte": "b", "$lt": "gamma"}}`,
	`{"name": {"$lte": "Alpha"}}`,
	`{"name": {"$lt": "a"}}`,
	`{"name": {"$gte": "B", "$lt": "b"}}`,
	`{"name": {"$gt": "naive"}}`,
	`{"objectId": {"$lt": "O"}}`,
	`{"name": {"$ne": "alpha", "$exists": true}}`,
	`{"name": {"$exists": false}}`,
	// Number
	`{"score": 1}`,
	`{"score": {"$ne": 1}}`,
	`{"score": {"$gt": 1}}`,
	`{"score": {"$gte": 1.5, "$lte": 10}}`,
	`{"score": {"$lt": 0}}`,
	`{"score": null}`,
	`{"score": {"$exists": false}}`,
	`{"score": {"$exists": true}}`,
	`{"score": {"$in": [0, 1, 2]}}`,
	`{"score": {"$nin": [0, 1]}}`,
	// Boolean
	`{"active": true}`,
	`{"active": false}`,
	`{"active": {"$ne": true}}`,
	`{"active": {"$ne": false}}`,
	`{"active": {"$exists": true}}`,
	`{"active": {"$in": [true]}}`,
	`{"active": {"$nin": [true]}}`,
	// Date
	`{"when": {"$lt": {"__type": "Date", "iso": "2024-06-01T00:00:00.000Z"}}}`,
	`{"when": {"$gte": "2024-06-01"}}`,
	`{"when": {"__type": "Date", "iso": "2024-03-15T10:30:00.123Z"}}`,
	`{"when": {"$ne": {"__type": "Date", "iso": "2024-03-15T10:30:00.123Z"}}}`,
	`{"when": {"$gt": "2024-03-15T10:30:00.122Z", "$lte": "2024-03-15T10:30:00.123Z"}}`,
	`{"when": {"$in": ["2024-03-15T10:30:00.123Z", {"__type": "Date", "iso": "2021-01-01T00:00:00.000Z"}]}}`,
	`{"when": {"$gt": "2024-03-15T11:30:00.122+01:00"}}`,
	`{"createdAt": {"$gte": "2023-01-01"}}`,
	`{"updatedAt": {"$lt": {"__type": "Date", "iso": "2022-01-01T00:00:00.000Z"}}}`,
	`{"createdAt": {"$gt": "2021-01-01", "$lt": "2022-01-01"}}`,
	// Pointer, File, objectId
	`{"owner": "u1"}`,
	`{"owner": {"__type": "Pointer", "className": "_User", "objectId": "u2"}}`,
	`{"owner": {"$ne": "u1"}}`,
	`{"owner": {"$in": ["u1", {"__type": "Pointer", "className": "_User", "objectId": "u3"}]}}`,
	`{"owner": {"$nin": ["u1"]}}`,
	`{"owner": {"$exists": false}}`,
	`{"photo": {"__type": "File", "name": "a.png"}}`,
	`{"photo": {"$ne": "a.png"}}`,
	`{"photo": {"$in": ["a.png", "b.png"]}}`,
	`{"place": {"$exists": true}}`,
	`{"place": null}`,
	`{"objectId": {"$in": ["o01", "o05", "o49"]}}`,
	`{"objectId": {"$gt": "o30"}}`,
	// $in / $nin and null
	`{"name": {"$in": ["alpha", "beta"]}}`,
	`{"name": {"$in": ["alpha", null]}}`,
	`{"name": {"$nin": ["alpha", "beta"]}}`,
	`{"name": {"$nin": ["alpha", null]}}`,
	`{"name": {"$in": []}}`,
	`{"name": {"$nin": []}}`,
	`{"name": {"$in": [null]}}`,
	`{"name": {"$nin": [null]}}`,
	// Array
	`{"tags": "red"}`,
	`{"tags": 1}`,
	`{"tags": true}`,
	`{"tags": false}`,
	`{"tags": "1"}`,
	`{"tags": {"$ne": "red"}}`,
	`{"tags": {"$eq": 2}}`,
	`{"tags": {"$ne": false}}`,
	`{"tags": ["red", "blue"]}`,
	`{"tags": ["blue", "red"]}`,
	`{"tags": []}`,
	`{"tags": [1, 2, 3]}`,
	`{"tags": null}`,
	`{"tags": {"$ne": null}}`,
	`{"tags": {"$exists": true}}`,
	`{"tags": {"$in": ["red", 2]}}`,
	`{"tags": {"$nin": ["red", 2]}}`,
	`{"tags": {"$in": [true, "1"]}}`,
	`{"tags": {"$in": []}}`,
	`{"tags": {"$nin": []}}`,
	`{"tags": {"$all": ["red", "blue"]}}`,
	`{"tags": {"$all": []}}`,
	`{"tags": {"$all": [1, true]}}`,
	`{"tags": {"$all": [false]}}`,
	`{"tags": {"$containedBy": []}}`,
	`{"tags": 0}`,
	`{"tags": "0"}`,
	`{"tags": {"$ne": 0}}`,
	`{"tags": {"$nin": [false]}}`,
	`{"tags": {"$all": [false, 0]}}`,
	`{"tags": {"$all": ["0", "false"]}}`,
	// $containedBy: a null or nested element is none of the values
	`{"tags": {"$containedBy": ["red", "blue"]}}`,
	`{"tags": {"$containedBy": ["red"]}}`,
	`{"tags": {"$containedBy": [1, 2, 3, "1"]}}`,
	`{"tags": {"$containedBy": [false, 0, true, 2, "blue", "green", 1]}}`,
	`{"tags": {"$containedBy": [0, false, "0", "false"]}}`,
	`{"$nor": [{"tags": {"$containedBy": ["red", "blue"]}}]}`,
	`{"$nor": [{"tags": {"$containedBy": [1, 2, 3, "1"]}}]}`,
	// Object: paths into it
	`{"meta.plan": "pro"}`,
	`{"meta.plan": {"$ne": "pro"}}`,
	`{"meta.plan": null}`,
	`{"meta.plan": {"$ne": null}}`,
	`{"meta.plan": {"$exists": true}}`,
	`{"meta.plan": {"$exists": false}}`,
	`{"meta.plan": {"$in": ["pro", "free"]}}`,
	`{"meta.plan": {"$in": ["pro", 5]}}`,
	`{"meta.plan": {"$nin": ["pro", null]}}`,
	`{"meta.plan": {"$nin": ["pro"]}}`,
	`{"meta.plan": {"$gte": "free", "$lte": "pro"}}`,
	`{"meta.plan": {"$gt": "P"}}`,
	`{"meta.plan": {"$lt": "Pro"}}`,
	`{"meta.seats": {"$lte": 0.5}}`,
	`{"meta.seats": {"$gt": 1, "$lt": 100}}`,
	`{"meta.seats": 3}`,
	`{"meta.seats": "3"}`,
	`{"meta.n.deep": "x"}`,
	`{"meta.n.deep": {"$exists": true}}`,
	`{"meta.n": {"$exists": true}}`,
	`{"meta.n": "str"}`,
	`{"meta.n": {"$ne": "str"}}`,
	`{"meta.when": {"$lt": {"__type": "Date", "iso": "2025-01-01T00:00:00.000Z"}}}`,
	`{"meta.missing.deeper": {"$exists": false}}`,
	// Object paths compare only values of the operand's JSON type.
	// boolean and number: true is not 1, false is not 0
	`{"meta.flag": true}`,
	`{"meta.flag": false}`,
	`{"meta.flag": 1}`,
	`{"meta.flag": 0}`,
	`{"meta.flag": {"$ne": true}}`,
	`{"meta.flag": {"$ne": 1}}`,
	`{"meta.flag": {"$in": [true, "x"]}}`,
	`{"meta.flag": {"$in": [1, false]}}`,
	`{"meta.flag": {"$nin": [true, 0]}}`,
	`{"meta.flag": {"$gt": false}}`,
	`{"meta.flag": {"$gte": 0}}`,
	`{"meta.flag": {"$lte": 0}}`,
	`{"meta.plan": {"$lt": 6}}`,
	`{"$nor": [{"meta.flag": true}]}`,
	// number and string: "3" is not 3, and text does not order among numbers
	`{"meta.seats": {"$gt": 1}}`,
	`{"meta.seats": {"$lt": "4"}}`,
	`{"meta.seats": {"$ne": 3}}`,
	`{"meta.seats": {"$nin": ["3"]}}`,
	`{"meta.seats": {"$in": ["3", 0.5]}}`,
	`{"meta.seats": "0.5"}`,
	`{"meta.n.deep": {"$gte": 1}}`,
	`{"meta.plan": 1}`,
	`{"meta.plan": "1"}`,
	`{"meta.plan": {"$gt": 0}}`,
	`{"meta.plan": {"$regex": "5"}}`,
	// string and boolean: "true" is not true
	`{"meta.flag": "true"}`,
	`{"meta.flag": {"$in": ["true", "1", true]}}`,
	`{"meta.flag": {"$gt": "0"}}`,
	`{"meta.plan": false}`,
	`{"meta.plan": "false"}`,
	`{"meta.plan": {"$lt": "z"}}`,
	`{"meta.seats": true}`,
	`{"meta.plan": {"$regex": "^1$"}}`,
	`{"meta.plan": {"$regex": "true|false"}}`,
	// null and missing are the same; a value of another type is neither
	`{"meta.seats": null}`,
	`{"meta.seats": {"$exists": false}}`,
	`{"meta.n": null}`,
	`{"meta.n.deep": null}`,
	`{"meta.n.deep": {"$ne": null}}`,
	`{"meta.plan": {"$in": ["pro", null]}}`,
	`{"meta.plan": {"$in": [5, true, null]}}`,
	`{"meta.plan": {"$nin": [5, true, null]}}`,
	`{"$nor": [{"meta.plan": null}]}`,
	// mixed lists: each value matches its own type
	`{"meta.plan": {"$in": [true, 5, "free"]}}`,
	`{"meta.plan": {"$nin": [true, 5, "free"]}}`,
	`{"$nor": [{"meta.plan": {"$in": ["pro", 5]}}]}`,
	// a nested array or object is no scalar: not its JSON text
	`{"meta.plan": {"$gt": "a"}}`,
	`{"meta.plan": {"$regex": "pro"}}`,
	`{"meta.list": "[1,2]"}`,
	`{"meta.list": {"$ne": "[1,2]"}}`,
	`{"meta.list": {"$gt": ""}}`,
	`{"meta.list": {"$regex": "1"}}`,
	`{"meta.list": {"$exists": true}}`,
	`{"meta.list": null}`,
	`{"meta.n": {"$gte": ""}}`,
	`{"meta.n": {"$in": ["str", null]}}`,
	`{"meta.n": {"$nin": ["str", null]}}`,
	`{"meta.arr.k": 1}`,
	`{"meta.arr.k": {"$exists": true}}`,
	// Object: the whole value
	`{"meta": {"plan": "pro", "seats": 3}}`,
	`{"meta": {"seats": 3, "plan": "pro"}}`,
	`{"meta": {}}`,
	`{"meta": null}`,
	`{"meta": {"$exists": true}}`,
	`{"meta": {"$in": [{"plan": "pro", "seats": 3}, {}]}}`,
	`{"meta": {"$ne": {}}}`,
	// $text: PostgreSQL's text search, in Go on SQLite and in Match
	`{"name": {"$text": {"$search": {"$term": "alpha"}}}}`,
	`{"name": {"$text": {"$search": {"$term": "!alpha"}}}}`,
	`{"name": {"$text": {"$search": {"$term": "caf:*"}}}}`,
	`{"name": {"$text": {"$search": {"$term": "rays"}}}}`,
	`{"name": {"$text": {"$search": {"$term": "rays", "$language": "simple"}}}}`,
	`{"name": {"$text": {"$search": {"$term": "'under_score-dash'"}}}}`,
	`{"note": {"$text": {"$search": {"$term": "one & two"}}}}`,
	`{"note": {"$text": {"$search": {"$term": "two | three"}}}}`,
	`{"note": {"$text": {"$search": {"$term": "one <-> two"}}}}`,
	`{"note": {"$text": {"$search": {"$term": "'ΣΊΣΥΦΟΣ'"}}}}`,
	`{"$nor": [{"note": {"$text": {"$search": {"$term": "two"}}}}]}`,
	`{"$or": [{"note": {"$text": {"$search": {"$term": "the"}}}}, {"score": {"$gt": 5}}]}`,
	// $regex
	`{"name": {"$regex": "^a"}}`,
	`{"name": {"$regex": "^a", "$options": "i"}}`,
	`{"name": {"$regex": "lph"}}`,
	`{"name": {"$regex": "Δ"}}`,
	`{"name": {"$regex": "^line2$"}}`,
	`{"name": {"$regex": "^line2$", "$options": "m"}}`,
	`{"name": {"$regex": ""}}`,
	`{"note": {"$regex": "^two$"}}`,
	`{"note": {"$regex": "^two$", "$options": "m"}}`,
	`{"note": {"$regex": "one.two"}}`,
	`{"note": {"$regex": "one.two", "$options": "s"}}`,
	`{"note": {"$regex": "ONE.TWO$", "$options": "ims"}}`,
	`{"meta.plan": {"$regex": "^p"}}`,
	`{"meta.plan": {"$regex": "^p", "$options": "i"}}`,
	// $regex is RE2 (Go's engine) on every backend: what RE2 means by a
	// class, a boundary, an escape or a flag, whatever the SQL engine's
	// own syntax
	`{"note": {"$regex": "one[^x]two"}}`,
	`{"note": {"$regex": "^[^x]+$"}}`,
	`{"note": {"$regex": "one\\Dtwo"}}`,
	`{"note": {"$regex": "one\\Wtwo"}}`,
	`{"note": {"$regex": "one\\stwo"}}`,
	`{"note": {"$regex": "one[\\s]two"}}`,
	`{"note": {"$regex": "^[^\\n]*$"}}`,
	`{"note": {"$regex": "^two$", "$options": "ms"}}`,
	`{"note": {"$regex": "e$", "$options": "m"}}`,
	`{"note": {"$regex": "^[a-z]+$", "$options": "m"}}`,
	`{"note": {"$regex": "two\\z"}}`,
	`{"note": {"$regex": "\\Atwo"}}`,
	`{"note": {"$regex": "(?m)^two$"}}`,
	`{"note": {"$regex": "(?s:one.)two"}}`,
	`{"note": {"$regex": "here\\r$", "$options": "m"}}`,
	`{"note": {"$regex": "\\x{2028}"}}`,
	`{"note": {"$regex": "^\\s"}}`,
	`{"note": {"$regex": "\\*y\\+z\\?\\^\\$\\|\\."}}`,
	`{"note": {"$regex": "^a{200,}$"}}`,
	`{"note": {"$regex": "^a{300}$"}}`,
	`{"note": {"$regex": "^a{301}"}}`,
	`{"note": {"$regex": "^(?:aa){150}$"}}`,
	`{"note": {"$regex": "σίσυφος", "$options": "i"}}`,
	`{"name": {"$regex": "\\bray"}}`,
	`{"name": {"$regex": "ma\\b"}}`,
	`{"name": {"$regex": "a\\B"}}`,
	`{"name": {"$regex": "\\bcaf"}}`,
	`{"name": {"$regex": "caf\\b"}}`,
	`{"name": {"$regex": "^\\w+$"}}`,
	`{"name": {"$regex": "^[\\w-]+$"}}`,
	`{"name": {"$regex": "\\d"}}`,
	`{"name": {"$regex": "[[:digit:]]"}}`,
	`{"name": {"$regex": "[[:^alpha:]]"}}`,
	`{"name": {"$regex": "^[[:alpha:]]+$"}}`,
	`{"name": {"$regex": "[[:upper:]]"}}`,
	`{"name": {"$regex": "\\pL\\pL\\pL\\pL\\pL\\pL"}}`,
	`{"name": {"$regex": "\\p{Greek}"}}`,
	`{"name": {"$regex": "\\PL"}}`,
	`{"name": {"$regex": "\\pN"}}`,
	`{"name": {"$regex": "k", "$options": "i"}}`,
	`{"name": {"$regex": "KELVIN", "$options": "i"}}`,
	`{"name": {"$regex": "(?i)ALPHA"}}`,
	`{"name": {"$regex": "(?i:A)lpha"}}`,
	`{"name": {"$regex": "Δ", "$options": "i"}}`,
	`{"name": {"$regex": "δ", "$options": "i"}}`,
	`{"name": {"$regex": "[δ]", "$options": "i"}}`,
	`{"name": {"$regex": "NAÏVE", "$options": "i"}}`,
	`{"name": {"$regex": "[^a-z]", "$options": "i"}}`,
	`{"name": {"$regex": "(?P<first>al)pha"}}`,
	`{"name": {"$regex": "\\Qa.b\\E"}}`,
	`{"name": {"$regex": "\\Q(c)[d]\\E"}}`,
	`{"name": {"$regex": "\\x41"}}`,
	`{"name": {"$regex": "\\x{394}"}}`,
	`{"name": {"$regex": "\\\\b\\("}}`,
	`{"name": {"$regex": "\\{e\\}"}}`,
	`{"name": {"$regex": "[\\]\\[]"}}`,
	`{"name": {"$regex": "[a\\-z]"}}`,
	`{"name": {"$regex": "[.]"}}`,
	`{"name": {"$regex": "^(|a)lpha"}}`,
	`{"name": {"$regex": "^(a|b|)$"}}`,
	`{"name": {"$regex": "^.{5}$"}}`,
	`{"name": {"$regex": "^...$"}}`,
	`{"name": {"$regex": "ph+a*?"}}`,
	`{"name": {"$regex": "(?U)ph+"}}`,
	`{"name": {"$regex": "[^\\x00-\\x{10FFFF}]"}}`,
	`{"name": {"$regex": "x|[^\\x00-\\x{10FFFF}]"}}`,
	`{"name": {"$regex": "^$"}}`,
	`{"name": {"$regex": "\\x20"}}`,
	`{"name": {"$regex": "\\t|\\v|\\f"}}`,
	`{"note": {"$regex": "\\t"}}`,
	`{"note": {"$regex": "\\r\\n"}}`,
	`{"note": {"$regex": "\\x{a0}"}}`,
	`{"meta.plan": {"$regex": "^\\d+$"}}`,
	`{"meta.plan": {"$regex": "^\\pN+$"}}`,
	`{"meta.plan": {"$regex": "Σ", "$options": "i"}}`,
	// $and, $or, $nor
	`{"$or": [{"name": "alpha"}, {"score": {"$gt": 5}}]}`,
	`{"$and": [{"name": {"$exists": true}}, {"score": {"$lt": 2}}]}`,
	`{"$nor": [{"name": "alpha"}, {"score": {"$gt": 5}}]}`,
	`{"$nor": [{"score": {"$gt": 1}}]}`,
	`{"$nor": [{"meta.plan": "pro"}]}`,
	`{"$or": [{}, {"name": "x"}]}`,
	`{"$nor": [{}]}`,
	`{"$and": [{}]}`,
	`{"$or": [{"$and": [{"active": true}, {"$nor": [{"tags": "red"}]}]}, {"owner": {"$exists": false}, "score": {"$gte": 0}}]}`,
	`{"score": {"$gt": 0}, "active": false, "tags": {"$ne": "red"}}`,
	`{"$nor": [{"$or": [{"name": {"$regex": "^a", "$options": "i"}}, {"meta.seats": {"$gte": 2}}]}, {"when": {"$exists": false}}]}`,
}

// testMatchDifferential: for every constraint in matchDiffWheres, Find and
// Match select the same objects.
func testMatchDifferential(t *testing.T, s store.Store) {
	mustCreateClass(t, s, matchDiffSchema())
	originals := matchDiffObjects()
	mustCreate(t, s, "Thing", originals)
	sch := mustSchema(t, s, "Thing")
	stored := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Thing", Limit: -1})
	if len(stored) != len(originals) {
		t.Fatalf("read back %d objects, wrote %d", len(stored), len(originals))
	}

	// matchSet is the ids of objs Match accepts for e.
	matchSet := func(w string, e query.Expr, objs []parse.Object) []string {
		t.Helper()
		var out []string
		for _, o := range objs {
			ok, err := query.Match(e, o)
			if err != nil {
				t.Fatalf("%s: Match(%v): %v", w, o, err)
			}
			if ok {
				out = append(out, o[parse.FieldObjectID].(string))
			}
		}
		sort.Strings(out)
		return out
	}
	trivial := 0
	seen := map[string]bool{}
	for _, w := range matchDiffWheres {
		if seen[w] {
			t.Errorf("duplicate case %s", w)
		}
		seen[w] = true
		e, err := query.ParseWhereJSON(sch, w)
		if err != nil {
			t.Fatalf("%s: ParseWhereJSON: %v", w, err)
		}
		rows, err := s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Thing", Where: e, Limit: -1})
		if err != nil {
			t.Errorf("%s: Find: %v", w, err)
			continue
		}
		sqlIDs := sorted(ids(rows))
		matchIDs := matchSet(w, e, stored)
		// The objects as the caller wrote them (Date maps, nulls, ints
		// where Find has float64) match as their stored form does.
		if orig := matchSet(w, e, originals); !slices.Equal(orig, matchIDs) {
			t.Errorf("%s: Match on the objects as written %v, as read back %v", w, orig, matchIDs)
		}
		if n, err := s.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Thing", Where: e, Limit: -1}); err != nil || n != int64(len(sqlIDs)) {
			t.Errorf("%s: Count = %d, %v; Find selects %d", w, n, err, len(sqlIDs))
		}
		switch want, listed := matchDiffTrivial[w]; {
		case listed && want == "none" && len(sqlIDs) != 0, listed && want == "all" && len(sqlIDs) != len(stored):
			t.Errorf("%s selects %d of %d objects, want %s", w, len(sqlIDs), len(stored), want)
		case listed:
			trivial++
		case len(sqlIDs) == 0 || len(sqlIDs) == len(stored):
			t.Errorf("%s selects %d of %d objects: a constraint that selects none or all proves little; "+
				"add objects that split it, or list it in matchDiffTrivial if the semantics say so", w, len(sqlIDs), len(stored))
		}
		if !slices.Equal(sqlIDs, matchIDs) {
			t.Errorf("%s:\n  Find selects  %v\n  Match accepts %v\n  only Find:  %v\n  only Match: %v",
				w, sqlIDs, matchIDs, matchDiffMinus(sqlIDs, matchIDs), matchDiffMinus(matchIDs, sqlIDs))
		}
	}
	t.Logf("%d constraints on %d objects (%d select none or all of them, as listed)", len(matchDiffWheres), len(stored), trivial)
}

// matchDiffTrivial lists the constraints that select none or all of the
// objects on purpose (empty $in/$nin/$all and clauses, patterns, paths and
// orderings that must not match what the objects hold), each asserted to
// select exactly that; every other constraint must select some objects and
// not others, or it proves little.
var matchDiffTrivial = map[string]string{
	`{"name": {"$text": {"$search": {"$term": "rays", "$language": "simple"}}}}`: "none", // simple does not stem
	`{"$nor": [{}]}`:                               "none",
	`{"meta.arr.k": 1}`:                            "none",
	`{"meta.arr.k": {"$exists": true}}`:            "none",
	`{"meta.list": "[1,2]"}`:                       "none",
	`{"meta.list": {"$gt": ""}}`:                   "none",
	`{"meta.list": {"$regex": "1"}}`:               "none",
	`{"meta.plan": {"$regex": "5"}}`:               "none",
	`{"name": {"$in": []}}`:                        "none",
	`{"name": {"$regex": "[^\\x00-\\x{10FFFF}]"}}`: "none",
	`{"name": {"$regex": "\\t|\\v|\\f"}}`:          "none",
	`{"name": {"$regex": "^line2$"}}`:              "none",
	`{"note": {"$regex": "^(?:aa){150}$"}}`:        "none",
	`{"note": {"$regex": "^\\s"}}`:                 "none",
	`{"note": {"$regex": "^a{300}$"}}`:             "none",
	`{"note": {"$regex": "^a{301}"}}`:              "none",
	`{"objectId": {"$lt": "O"}}`:                   "none",
	`{"tags": {"$in": []}}`:                        "none",
	`{"$and": [{}]}`:                               "all",
	`{"$or": [{}, {"name": "x"}]}`:                 "all",
	`{"meta.list": {"$ne": "[1,2]"}}`:              "all",
	`{"meta.missing.deeper": {"$exists": false}}`:  "all",
	`{"name": {"$nin": []}}`:                       "all",
	`{"tags": {"$all": []}}`:                       "all",
	`{"tags": {"$nin": []}}`:                       "all",
}

// testMatchNotMatchable: what Match refuses, whatever the object holds,
// the backend runs; a sub-query selects the same rows as the matchable
// constraint it stands for (with the users it names in the store).
func testMatchNotMatchable(t *testing.T, s store.Store) {
	mustCreateClass(t, s, matchDiffSchema())
	objs := matchDiffObjects()
	mustCreate(t, s, "Thing", objs)
	mustCreate(t, s, parse.ClassUser, []parse.Object{{parse.FieldObjectID: "u1", "username": "a"}, {parse.FieldObjectID: "u2", "username": "alpha"}})
	sch := mustSchema(t, s, "Thing")
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	parseWhere := func(w string) query.Expr {
		t.Helper()
		e, err := query.Parser{Resolve: resolve}.Where(sch, decodeObject(t, w))
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		return openSubqueries(t, e)
	}
	find := func(w string, e query.Expr) []string {
		t.Helper()
		rows, err := s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Thing", Where: e, Limit: -1, Keys: []string{parse.FieldObjectID}})
		if err != nil {
			t.Fatalf("%s: Find: %v", w, err)
		}
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r[parse.FieldObjectID].(string)
		}
		slices.Sort(ids)
		return ids
	}
	// The matchable equivalent of each sub-query ("" for the geo
	// operators, which Match refuses on their own).
	for w, same := range map[string]string{
		`{"owner": {"$inQuery": {"className": "_User", "where": {"username": "a"}}}}`:                  `{"owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"}}`,
		`{"owner": {"$notInQuery": {"className": "_User"}}}`:                                           `{"owner": {"$nin": [{"__type": "Pointer", "className": "_User", "objectId": "u1"}, {"__type": "Pointer", "className": "_User", "objectId": "u2"}]}}`,
		`{"name": {"$select": {"query": {"className": "_User"}, "key": "username"}}}`:                  `{"name": {"$in": ["a", "alpha"]}}`,
		`{"place": {"$nearSphere": {"__type": "GeoPoint", "latitude": 40, "longitude": -74}}}`:         "",
		`{"place": {"$within": {"$box": [[0, 0], [1, 1]]}}}`:                                           "",
		`{"place": {"$geoWithin": {"$polygon": [[0, 0], [0, 1], [1, 1]]}}}`:                            "",
		`{"$or": [{"name": "alpha"}, {"place": {"$geoWithin": {"$centerSphere": [[-74, 40], 0.1]}}}]}`: "",
	} {
		e := parseWhere(w)
		got := find(w, e)
		if same != "" {
			want := find(same, parseWhere(same))
			if len(want) == 0 || len(want) == len(objs) {
				t.Fatalf("%s selects %d of %d objects: the case proves nothing", same, len(want), len(objs))
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s selects %v; %s selects %v", w, got, same, want)
			}
		}
		for _, o := range objs {
			if ok, err := query.Match(e, o); ok || !errors.Is(err, query.ErrNotMatchable) {
				t.Errorf("%s on %v: Match = %v, %v; want false, ErrNotMatchable", w, o[parse.FieldObjectID], ok, err)
			}
		}
	}
}

func matchDiffMinus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
