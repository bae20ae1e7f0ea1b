package storetest

import (
	"fmt"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var queryTests = []subtest{
	{"Where", testWhere},
	{"Order", testOrder},
	{"LimitSkip", testLimitSkip},
	{"Keys", testKeys},
	{"Count", testCount},
	{"ArrayElementTypes", testArrayElementTypes},
}

// The query fixture, class Item:
//
//	id  name        score  active  when                      tags               meta                                          owner
//	i1  apple       10     true    2024-01-10T00:00:00.000Z  [red, fruit]       {plan:pro, level:3, flags:{beta:true}}        u1
//	i2  banana      5      false   2024-02-15T12:00:00.000Z  [yellow, fruit]    {plan:free, level:1}                          u2
//	i3  cherry      7.5    true    2024-03-20T08:30:00.000Z  [red]              {plan:pro, level:2}                           u1
//	i4  durian      —      —       —                         []                 {plan:free}                                   —
//	i5  —           0      false   2023-12-31T23:59:59.999Z  —                  —                                             u2
//	i6  elderberry  -2     true    2024-02-15T12:00:00.000Z  [purple, fruit]    {plan:enterprise, level:5}                    u3
//
// createdAt is 2024-01-0N for iN; "—" is a field left out.
const itemSchema = `{
  "className": "Item",
  "fields": {
    "name":   {"type": "String"},
    "score":  {"type": "Number"},
    "active": {"type": "Boolean"},
    "when":   {"type": "Date"},
    "tags":   {"type": "Array"},
    "meta":   {"type": "Object"},
    "owner":  {"type": "Pointer", "targetClass": "_User"}
  },
  "classLevelPermissions": {}
}`

const itemRows = `[
  {"objectId": "i1", "createdAt": "2024-01-01T00:00:00.000Z", "name": "apple", "score": 10, "active": true,
   "when": {"__type": "Date", "iso": "2024-01-10T00:00:00.000Z"}, "tags": ["red", "fruit"],
   "meta": {"plan": "pro", "level": 3, "flags": {"beta": true}},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"}},
  {"objectId": "i2", "createdAt": "2024-01-02T00:00:00.000Z", "name": "banana", "score": 5, "active": false,
   "when": {"__type": "Date", "iso": "2024-02-15T12:00:00.000Z"}, "tags": ["yellow", "fruit"],
   "meta": {"plan": "free", "level": 1},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u2"}},
  {"objectId": "i3", "createdAt": "2024-01-03T00:00:00.000Z", "name": "cherry", "score": 7.5, "active": true,
   "when": {"__type": "Date", "iso": "2024-03-20T08:30:00.000Z"}, "tags": ["red"],
   "meta": {"plan": "pro", "level": 2},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"}},
  {"objectId": "i4", "createdAt": "2024-01-04T00:00:00.000Z", "name": "durian",
   "tags": [], "meta": {"plan": "free"}},
  {"objectId": "i5", "createdAt": "2024-01-05T00:00:00.000Z", "score": 0, "active": false,
   "when": {"__type": "Date", "iso": "2023-12-31T23:59:59.999Z"},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u2"}},
  {"objectId": "i6", "createdAt": "2024-01-06T00:00:00.000Z", "name": "elderberry", "score": -2, "active": true,
   "when": {"__type": "Date", "iso": "2024-02-15T12:00:00.000Z"}, "tags": ["purple", "fruit"],
   "meta": {"plan": "enterprise", "level": 5},
   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u3"}}
]`

func loadItems(t *testing.T, s store.Store) {
	t.Helper()
	mustCreateClass(t, s, classFromJSON(t, itemSchema))
	mustCreate(t, s, "Item", decodeObjects(t, itemRows))
}

// whereCases are where-constraints over the Item fixture and the ids they
// select, worked out by hand with MongoDB's semantics (a missing field
// matches $ne, $nin, $nor and {"field": null}).
var whereCases = []struct{ where, want string }{
	// implicit equality
	{`{}`, `["i1","i2","i3","i4","i5","i6"]`},
	{`{"name": "banana"}`, `["i2"]`},
	{`{"name": "Banana"}`, `[]`},
	{`{"name": "nope"}`, `[]`},
	{`{"score": 5}`, `["i2"]`},
	{`{"score": 7.5}`, `["i3"]`},
	{`{"score": 0}`, `["i5"]`},
	{`{"active": true}`, `["i1","i3","i6"]`},
	{`{"active": false}`, `["i2","i5"]`},
	{`{"objectId": "i4"}`, `["i4"]`},
	{`{"name": "apple", "active": true}`, `["i1"]`},
	{`{"name": "apple", "active": false}`, `[]`},
	{`{"name": null}`, `["i5"]`},
	{`{"score": null}`, `["i4"]`},
	{`{"score": {"$eq": 10}}`, `["i1"]`},
	{`{"score": {"$eq": null}}`, `["i4"]`},

	// $ne matches rows without the field
	{`{"score": {"$ne": 5}}`, `["i1","i3","i4","i5","i6"]`},
	{`{"name": {"$ne": "apple"}}`, `["i2","i3","i4","i5","i6"]`},
	{`{"active": {"$ne": true}}`, `["i2","i4","i5"]`},
	{`{"score": {"$ne": null}}`, `["i1","i2","i3","i5","i6"]`},

	// ordering comparisons: numbers
	{`{"score": {"$lt": 5}}`, `["i5","i6"]`},
	{`{"score": {"$lte": 5}}`, `["i2","i5","i6"]`},
	{`{"score": {"$gt": 7.5}}`, `["i1"]`},
	{`{"score": {"$gte": 7.5}}`, `["i1","i3"]`},
	{`{"score": {"$gt": 0, "$lt": 10}}`, `["i2","i3"]`},
	{`{"score": {"$gte": -2, "$lte": 0}}`, `["i5","i6"]`},
	{`{"score": {"$lt": -100}}`, `[]`},

	// dates, as Date values and as ISO strings
	{`{"when": {"$lt": {"__type": "Date", "iso": "2024-01-10T00:00:00.000Z"}}}`, `["i5"]`},
	{`{"when": {"$lte": {"__type": "Date", "iso": "2024-01-10T00:00:00.000Z"}}}`, `["i1","i5"]`},
	{`{"when": {"$gt": "2024-02-15T12:00:00.000Z"}}`, `["i3"]`},
	{`{"when": {"$gte": "2024-02-15"}}`, `["i2","i3","i6"]`},
	{`{"when": {"$gte": "2024-01-01T00:00:00+02:00"}}`, `["i1","i2","i3","i5","i6"]`},
	{`{"when": {"$gt": "2023-12-31T23:59:59.998Z", "$lt": "2024-01-01"}}`, `["i5"]`},
	{`{"when": "2024-02-15T12:00:00Z"}`, `["i2","i6"]`},
	{`{"when": {"__type": "Date", "iso": "2024-03-20T08:30:00.000Z"}}`, `["i3"]`},
	{`{"when": {"$ne": {"__type": "Date", "iso": "2024-03-20T08:30:00.000Z"}}}`, `["i1","i2","i4","i5","i6"]`},
	{`{"when": {"$in": ["2024-01-10", {"__type": "Date", "iso": "2024-03-20T08:30:00.000Z"}]}}`, `["i1","i3"]`},
	{`{"createdAt": {"$gt": "2024-01-03T00:00:00.000Z"}}`, `["i4","i5","i6"]`},
	{`{"createdAt": {"$lte": {"__type": "Date", "iso": "2024-01-02T00:00:00.000Z"}}}`, `["i1","i2"]`},
	{`{"createdAt": "2024-01-05"}`, `["i5"]`},
	{`{"updatedAt": {"$gte": "2024-01-06"}}`, `["i6"]`},

	// strings (lower-case ASCII: byte order and dictionary order agree)
	{`{"name": {"$lt": "c"}}`, `["i1","i2"]`},
	{`{"name": {"$gte": "cherry"}}`, `["i3","i4","i6"]`},
	{`{"name": {"$gt": "cherry", "$lte": "elderberry"}}`, `["i4","i6"]`},

	// $in / $nin, with null meaning "missing"
	{`{"name": {"$in": ["apple", "cherry", "zzz"]}}`, `["i1","i3"]`},
	{`{"name": {"$in": ["apple", null]}}`, `["i1","i5"]`},
	{`{"name": {"$in": [null]}}`, `["i5"]`},
	{`{"name": {"$in": []}}`, `[]`},
	{`{"name": {"$nin": ["apple", "banana"]}}`, `["i3","i4","i5","i6"]`},
	{`{"name": {"$nin": ["apple", null]}}`, `["i2","i3","i4","i6"]`},
	{`{"name": {"$nin": []}}`, `["i1","i2","i3","i4","i5","i6"]`},
	{`{"score": {"$in": [5, 10]}}`, `["i1","i2"]`},
	{`{"score": {"$nin": [5, 10]}}`, `["i3","i4","i5","i6"]`},
	{`{"active": {"$in": [false]}}`, `["i2","i5"]`},
	{`{"objectId": {"$in": ["i2", "i4", "nope"]}}`, `["i2","i4"]`},

	// $exists
	{`{"score": {"$exists": true}}`, `["i1","i2","i3","i5","i6"]`},
	{`{"score": {"$exists": false}}`, `["i4"]`},
	{`{"tags": {"$exists": true}}`, `["i1","i2","i3","i4","i6"]`},
	{`{"tags": {"$exists": false}}`, `["i5"]`},
	{`{"when": {"$exists": false}}`, `["i4"]`},
	{`{"meta.level": {"$exists": true}}`, `["i1","i2","i3","i6"]`},
	{`{"meta.level": {"$exists": false}}`, `["i4","i5"]`},

	// $regex
	{`{"name": {"$regex": "an"}}`, `["i2","i4"]`},
	{`{"name": {"$regex": "^APP"}}`, `[]`},
	{`{"name": {"$regex": "^APP", "$options": "i"}}`, `["i1"]`},
	{`{"name": {"$regex": "Rr", "$options": "i"}}`, `["i3","i6"]`},
	{`{"name": {"$regex": "y$"}}`, `["i3","i6"]`},
	{`{"name": {"$regex": "^(apple|durian)$"}}`, `["i1","i4"]`},
	{`{"name": {"$regex": "e.*e"}}`, `["i6"]`},
	{`{"name": {"$regex": ""}}`, `["i1","i2","i3","i4","i6"]`},
	{`{"meta.plan": {"$regex": "^PRO$", "$options": "i"}}`, `["i1","i3"]`},

	// $or / $and / $nor
	{`{"$or": [{"name": "apple"}, {"score": {"$lt": 0}}]}`, `["i6","i1"]`},
	{`{"$or": [{"name": "nope"}]}`, `[]`},
	{`{"$and": [{"active": true}, {"score": {"$gt": 0}}]}`, `["i1","i3"]`},
	{`{"$and": [{"score": {"$gt": 0}}, {"score": {"$lt": 7.5}}]}`, `["i2"]`},
	{`{"$nor": [{"active": true}, {"name": "banana"}]}`, `["i4","i5"]`},
	{`{"$nor": [{"score": {"$gt": 5}}]}`, `["i2","i4","i5","i6"]`},
	{`{"$nor": [{"name": {"$in": ["apple", "banana"]}}]}`, `["i3","i4","i5","i6"]`},
	{`{"$or": [{"$and": [{"active": true}, {"tags": "red"}]}, {"meta.plan": "free"}]}`, `["i1","i2","i3","i4"]`},
	{`{"active": true, "$or": [{"score": {"$gte": 10}}, {"score": {"$lt": 0}}]}`, `["i1","i6"]`},
	{`{"$or": [{}, {"name": "nope"}]}`, `["i1","i2","i3","i4","i5","i6"]`},

	// Array fields: equality is "contains"; $all, $in, $nin, $ne on elements
	{`{"tags": "red"}`, `["i1","i3"]`},
	{`{"tags": "fruit"}`, `["i1","i2","i6"]`},
	{`{"tags": "green"}`, `[]`},
	{`{"tags": {"$all": ["red", "fruit"]}}`, `["i1"]`},
	{`{"tags": {"$all": ["fruit"]}}`, `["i1","i2","i6"]`},
	{`{"tags": {"$in": ["yellow", "purple"]}}`, `["i2","i6"]`},
	{`{"tags": {"$nin": ["fruit"]}}`, `["i3","i4","i5"]`},
	{`{"tags": {"$ne": "red"}}`, `["i2","i4","i5","i6"]`},
	{`{"tags": {"$eq": "red"}}`, `["i1","i3"]`},
	{`{"tags": ["red"]}`, `["i3"]`},
	{`{"tags": []}`, `["i4"]`},
	{`{"tags": null}`, `["i5"]`},
	{`{"tags": {"$eq": null}}`, `["i5"]`},

	// dot paths into Object fields
	{`{"meta.plan": "pro"}`, `["i1","i3"]`},
	{`{"meta.level": 2}`, `["i3"]`},
	{`{"meta.level": {"$gte": 2}}`, `["i1","i3","i6"]`},
	{`{"meta.level": {"$lt": 3}}`, `["i2","i3"]`},
	{`{"meta.flags.beta": true}`, `["i1"]`},
	{`{"meta.plan": {"$in": ["free", "enterprise"]}}`, `["i2","i4","i6"]`},
	{`{"meta.plan": {"$ne": "pro"}}`, `["i2","i4","i5","i6"]`},
	{`{"meta.plan": {"$nin": ["pro", "free"]}}`, `["i5","i6"]`},
	{`{"meta.nothing": "x"}`, `[]`},
	// … comparing only values of the operand's JSON type: true is not 1,
	// "3" is not 3, text does not order among numbers, a nested object is
	// not its JSON text, and a mixed list matches each value by its type
	{`{"meta.flags.beta": 1}`, `[]`},
	{`{"meta.flags.beta": {"$ne": 1}}`, `["i1","i2","i3","i4","i5","i6"]`},
	{`{"meta.level": "3"}`, `[]`},
	{`{"meta.level": {"$lt": "z"}}`, `[]`},
	{`{"meta.plan": {"$gt": 0}}`, `[]`},
	{`{"meta.flags": {"$regex": "beta"}}`, `[]`},
	{`{"meta.plan": {"$in": ["pro", 3]}}`, `["i1","i3"]`},
	{`{"meta.level": {"$in": [3, "free", true]}}`, `["i1"]`},
	{`{"meta.level": {"$nin": [3, "free"]}}`, `["i2","i3","i4","i5","i6"]`},
	{`{"meta.level": {"$in": ["3", null]}}`, `["i4","i5"]`},
	{`{"meta.level": {"$nin": ["3", null]}}`, `["i1","i2","i3","i6"]`},
	{`{"meta.plan": {"$nin": ["pro", null]}}`, `["i2","i4","i6"]`},

	// pointers, by bare id and by Pointer value
	{`{"owner": "u1"}`, `["i1","i3"]`},
	{`{"owner": {"__type": "Pointer", "className": "_User", "objectId": "u2"}}`, `["i2","i5"]`},
	{`{"owner": {"$eq": {"__type": "Pointer", "className": "_User", "objectId": "u3"}}}`, `["i6"]`},
	{`{"owner": {"$in": ["u1", {"__type": "Pointer", "className": "_User", "objectId": "u3"}]}}`, `["i1","i3","i6"]`},
	{`{"owner": {"$nin": ["u1"]}}`, `["i2","i4","i5","i6"]`},
	{`{"owner": {"$ne": "u1"}}`, `["i2","i4","i5","i6"]`},
	{`{"owner": {"$ne": {"__type": "Pointer", "className": "_User", "objectId": "u2"}}}`, `["i1","i3","i4","i6"]`},
	{`{"owner": {"$exists": false}}`, `["i4"]`},
	{`{"owner": null}`, `["i4"]`},
}

func testWhere(t *testing.T, s store.Store) {
	loadItems(t, s)
	byID := order(t, s, "Item", "objectId")
	sch := mustSchema(t, s, "Item")
	for _, c := range whereCases {
		w, err := query.ParseWhere(sch, decodeObject(t, c.where))
		if err != nil {
			t.Errorf("ParseWhere %s: %v", c.where, err)
			continue
		}
		var want []string
		for _, v := range decode(t, c.want).([]any) {
			want = append(want, v.(string))
		}
		rows, err := s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Where: w, Limit: -1, Order: byID})
		if err != nil {
			t.Errorf("Find %s: %v", c.where, err)
			continue
		}
		equalIDs(t, "Find "+c.where, ids(rows), sorted(want))
		n, err := s.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Where: w, Limit: -1})
		if err != nil {
			t.Errorf("Count %s: %v", c.where, err)
			continue
		}
		if n != int64(len(want)) {
			t.Errorf("Count %s = %d, want %d", c.where, n, len(want))
		}
	}

	// Rows come back whole.
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Where: where(t, s, "Item", `{"name": {"$in": ["banana", "durian"]}}`), Limit: -1, Order: byID})
	equalRows(t, "Find banana, durian", rows, `[
	  {"objectId": "i2", "createdAt": "2024-01-02T00:00:00.000Z", "updatedAt": "2024-01-02T00:00:00.000Z", "name": "banana", "score": 5, "active": false,
	   "when": {"__type": "Date", "iso": "2024-02-15T12:00:00.000Z"}, "tags": ["yellow", "fruit"],
	   "meta": {"plan": "free", "level": 1},
	   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u2"}},
	  {"objectId": "i4", "createdAt": "2024-01-04T00:00:00.000Z", "updatedAt": "2024-01-04T00:00:00.000Z", "name": "durian",
	   "tags": [], "meta": {"plan": "free"}}
	]`)
}

func testOrder(t *testing.T, s store.Store) {
	loadItems(t, s)
	cases := []struct {
		order string
		want  []string
	}{
		// nulls sort first ascending, last descending; objectId breaks ties
		{"score", []string{"i4", "i6", "i5", "i2", "i3", "i1"}},
		{"-score", []string{"i1", "i3", "i2", "i5", "i6", "i4"}},
		{"name", []string{"i5", "i1", "i2", "i3", "i4", "i6"}},
		{"-name", []string{"i6", "i4", "i3", "i2", "i1", "i5"}},
		{"active", []string{"i4", "i2", "i5", "i1", "i3", "i6"}},
		{"-active", []string{"i1", "i3", "i6", "i2", "i5", "i4"}},
		{"-when,name", []string{"i3", "i2", "i6", "i1", "i5", "i4"}},
		{"-when,-name", []string{"i3", "i6", "i2", "i1", "i5", "i4"}},
		{"when,-name", []string{"i4", "i5", "i1", "i6", "i2", "i3"}},
		{"active,-score", []string{"i4", "i2", "i5", "i1", "i3", "i6"}},
		{"-active,score", []string{"i6", "i3", "i1", "i5", "i2", "i4"}},
		{"owner,-createdAt", []string{"i4", "i3", "i1", "i5", "i2", "i6"}},
		{"-createdAt", []string{"i6", "i5", "i4", "i3", "i2", "i1"}},
		{"updatedAt", []string{"i1", "i2", "i3", "i4", "i5", "i6"}},
		{"-objectId", []string{"i6", "i5", "i4", "i3", "i2", "i1"}},
		{"", []string{"i1", "i2", "i3", "i4", "i5", "i6"}},
	}
	for _, c := range cases {
		rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: -1, Order: order(t, s, "Item", c.order)})
		equalIDs(t, "order "+c.order, ids(rows), c.want)
	}
	// Order combined with a where.
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: -1, Order: order(t, s, "Item", "-score"),
		Where: where(t, s, "Item", `{"tags": "fruit"}`)})
	equalIDs(t, "fruit by -score", ids(rows), []string{"i1", "i2", "i6"})
}

func testLimitSkip(t *testing.T, s store.Store) {
	loadItems(t, s)
	byScore := order(t, s, "Item", "score") // i4 i6 i5 i2 i3 i1
	cases := []struct {
		limit, skip int
		want        []string
	}{
		{-1, 0, []string{"i4", "i6", "i5", "i2", "i3", "i1"}},
		{2, 0, []string{"i4", "i6"}},
		{2, 2, []string{"i5", "i2"}},
		{2, 5, []string{"i1"}},
		{-1, 4, []string{"i3", "i1"}},
		{100, 1, []string{"i6", "i5", "i2", "i3", "i1"}},
		{-1, 6, nil},
		{-1, 10, nil},
		{0, 0, nil}, // limit 0 returns no rows (Parse's count-only form)
		{0, 3, nil},
	}
	for _, c := range cases {
		rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: c.limit, Skip: c.skip, Order: byScore})
		equalIDs(t, fmt.Sprintf("limit %d skip %d", c.limit, c.skip), ids(rows), c.want)
	}
	// With a where.
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: 1, Skip: 1, Order: byScore,
		Where: where(t, s, "Item", `{"active": true}`)})
	equalIDs(t, "active, limit 1 skip 1", ids(rows), []string{"i3"})
}

func testKeys(t *testing.T, s store.Store) {
	loadItems(t, s)
	mustCreate(t, s, "Item", decodeObjects(t, `[
	  {"objectId": "i7", "createdAt": "2024-01-07T00:00:00.000Z", "name": "fig", "ACL": {"*": {"read": true}, "u1": {"write": true}}}
	]`))
	find := func(keys []string, where string) []parse.Object {
		t.Helper()
		return mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: -1, Keys: keys, Order: order(t, s, "Item", "objectId"),
			Where: whereOf(t, s, where)})
	}
	equalRows(t, "keys name,score", find([]string{"name", "score"}, `{"objectId": {"$in": ["i1", "i4", "i5"]}}`), `[
	  {"objectId": "i1", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "name": "apple", "score": 10},
	  {"objectId": "i4", "createdAt": "2024-01-04T00:00:00.000Z", "updatedAt": "2024-01-04T00:00:00.000Z", "name": "durian"},
	  {"objectId": "i5", "createdAt": "2024-01-05T00:00:00.000Z", "updatedAt": "2024-01-05T00:00:00.000Z", "score": 0}
	]`)
	equalRows(t, "keys [] (none)", find([]string{}, `{"objectId": "i2"}`), `[
	  {"objectId": "i2", "createdAt": "2024-01-02T00:00:00.000Z", "updatedAt": "2024-01-02T00:00:00.000Z"}
	]`)
	equalRows(t, "keys objectId", find([]string{"objectId"}, `{"objectId": "i2"}`), `[
	  {"objectId": "i2", "createdAt": "2024-01-02T00:00:00.000Z", "updatedAt": "2024-01-02T00:00:00.000Z"}
	]`)
	equalRows(t, "keys owner,when,tags,meta", find([]string{"owner", "when", "tags", "meta"}, `{"objectId": "i3"}`), `[
	  {"objectId": "i3", "createdAt": "2024-01-03T00:00:00.000Z", "updatedAt": "2024-01-03T00:00:00.000Z",
	   "when": {"__type": "Date", "iso": "2024-03-20T08:30:00.000Z"}, "tags": ["red"], "meta": {"plan": "pro", "level": 2},
	   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"}}
	]`)
	// The ACL is a field like the others: absent unless asked for.
	equalRows(t, "keys name (ACL row)", find([]string{"name"}, `{"objectId": "i7"}`), `[
	  {"objectId": "i7", "createdAt": "2024-01-07T00:00:00.000Z", "updatedAt": "2024-01-07T00:00:00.000Z", "name": "fig"}
	]`)
	equalRows(t, "keys ACL", find([]string{"ACL"}, `{"objectId": {"$in": ["i1", "i7"]}}`), `[
	  {"objectId": "i1", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z"},
	  {"objectId": "i7", "createdAt": "2024-01-07T00:00:00.000Z", "updatedAt": "2024-01-07T00:00:00.000Z",
	   "ACL": {"*": {"read": true}, "u1": {"write": true}}}
	]`)
	equalRows(t, "keys nil (all)", find(nil, `{"objectId": "i7"}`), `[
	  {"objectId": "i7", "createdAt": "2024-01-07T00:00:00.000Z", "updatedAt": "2024-01-07T00:00:00.000Z", "name": "fig",
	   "ACL": {"*": {"read": true}, "u1": {"write": true}}}
	]`)
	// Keys filter what is returned, not what is matched or sorted by.
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: 2, Keys: []string{"name"}, Order: order(t, s, "Item", "-score"),
		Where: whereOf(t, s, `{"active": true}`)})
	equalRows(t, "keys name, where active, order -score", rows, `[
	  {"objectId": "i1", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "name": "apple"},
	  {"objectId": "i3", "createdAt": "2024-01-03T00:00:00.000Z", "updatedAt": "2024-01-03T00:00:00.000Z", "name": "cherry"}
	]`)
}

func whereOf(t *testing.T, s store.Store, js string) query.Expr {
	t.Helper()
	if js == "" {
		return nil
	}
	return where(t, s, "Item", js)
}

func testCount(t *testing.T, s store.Store) {
	loadItems(t, s)
	cases := []struct {
		q    query.Query
		want int64
	}{
		{query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: -1}, 6},
		{query.Query{ReadACL: query.NoACLFilter, Class: "Item"}, 6},                    // Limit 0 is ignored
		{query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: 2, Skip: 5}, 6}, // so are Limit and Skip
		{query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: 1, Skip: 1, Where: where(t, s, "Item", `{"active": true}`)}, 3},
		{query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: -1, Skip: 100, Where: where(t, s, "Item", `{"score": {"$ne": 5}}`)}, 5},
		{query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: -1, Where: where(t, s, "Item", `{"name": "nope"}`)}, 0},
		{query.Query{ReadACL: query.NoACLFilter, Class: "Item", Limit: -1, Order: order(t, s, "Item", "-score"), Keys: []string{"name"}}, 6},
	}
	for i, c := range cases {
		if n := mustCount(t, s, &c.q); n != c.want {
			t.Errorf("case %d: Count = %d, want %d", i, n, c.want)
		}
	}
	mustCreateClass(t, s, parse.Schema{ClassName: "Empty"})
	if n := count(t, s, "Empty"); n != 0 {
		t.Errorf("Count(Empty) = %d", n)
	}
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Empty", Limit: -1})
	if len(rows) != 0 {
		t.Errorf("Find(Empty) = %s", pretty(rows))
	}
}

// testArrayElementTypes: array "contains" compares elements by JSON type and
// value, as MongoDB does: true is not 1, "1" is not 1, and a nested array is
// not its JSON text (nor, for $containedBy, one of the values; nor is null).
func testArrayElementTypes(t *testing.T, s store.Store) {
	mustCreateClass(t, s, classFromJSON(t, `{"className": "Bag", "fields": {"arr": {"type": "Array"}}, "classLevelPermissions": {}}`))
	mustCreate(t, s, "Bag", decodeObjects(t, `[
	  {"objectId": "b1", "arr": [1, "1"]},
	  {"objectId": "b2", "arr": [true]},
	  {"objectId": "b3", "arr": ["true"]},
	  {"objectId": "b4", "arr": [1.5, false]},
	  {"objectId": "b5", "arr": [0]},
	  {"objectId": "b6", "arr": []},
	  {"objectId": "b7", "arr": [["a"], {"k": "v"}, null]}
	]`))
	cases := []struct {
		where string
		want  []string
	}{
		{`{"arr": 1}`, []string{"b1"}},
		{`{"arr": "1"}`, []string{"b1"}},
		{`{"arr": true}`, []string{"b2"}},
		{`{"arr": "true"}`, []string{"b3"}},
		{`{"arr": false}`, []string{"b4"}},
		{`{"arr": 0}`, []string{"b5"}},
		{`{"arr": 1.5}`, []string{"b4"}},
		{`{"arr": "a"}`, nil},
		{`{"arr": "[\"a\"]"}`, nil},
		{`{"arr": {"$in": [true, 0]}}`, []string{"b2", "b5"}},
		{`{"arr": {"$in": ["1", false]}}`, []string{"b1", "b4"}},
		{`{"arr": {"$all": [1.5, false]}}`, []string{"b4"}},
		{`{"arr": {"$all": [1, true]}}`, nil},
		{`{"arr": {"$ne": true}}`, []string{"b1", "b3", "b4", "b5", "b6", "b7"}},
		{`{"arr": {"$nin": [1, false]}}`, []string{"b2", "b3", "b5", "b6", "b7"}},
		// a null or nested element is none of the values
		{`{"arr": {"$containedBy": [1, "1", true, "true", 1.5, false, 0, "a"]}}`, []string{"b1", "b2", "b3", "b4", "b5", "b6"}},
		{`{"$nor": [{"arr": {"$containedBy": [1, "1", true, "true", 1.5, false, 0, "a"]}}]}`, []string{"b7"}},
	}
	byID := order(t, s, "Bag", "objectId")
	for _, c := range cases {
		rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Bag", Limit: -1, Order: byID, Where: where(t, s, "Bag", c.where)})
		equalIDs(t, "Find "+c.where, ids(rows), c.want)
	}
}
