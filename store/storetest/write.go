package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var writeTests = []subtest{
	{"UpdateEveryType", testUpdateEveryType},
	{"UpdateGoValues", testUpdateGoValues},
	{"UpdateUnset", testUpdateUnset},
	{"UpdateACL", testUpdateACL},
	{"UpdateRefused", testUpdateRefused},
	{"NotFound", testWriteNotFound},
	{"WriteACLUpdate", testWriteACLUpdate},
	{"WriteACLDelete", testWriteACLDelete},
	{"WhereConstraint", testWriteWhere},
	{"CompareAndSet", testCompareAndSet},
	{"Delete", testDelete},
	{"DeleteJoinRows", testDeleteJoinRows},
	{"DeleteClass", testDeleteClass},
	{"DeleteClassRefused", testDeleteClassRefused},
	{"Cancelled", testWriteCancelled},
}

// e1Row is one object of every type in the Everything class, and e1Stored
// how Find returns it.
const e1Row = `{
  "objectId": "e1",
  "createdAt": "2024-01-02T03:04:05.006Z",
  "updatedAt": "2024-01-03T00:00:00.000Z",
  "str":  "hello",
  "num":  42.5,
  "flag": true,
  "day":  {"__type": "Date", "iso": "2024-05-06T07:08:09.123Z"},
  "obj":  {"a": 1, "b": [1, "two"]},
  "arr":  [1, "x", true],
  "ptr":  {"__type": "Pointer", "className": "_User", "objectId": "u1"},
  "file": {"__type": "File", "name": "photo.png"},
  "geo":  {"__type": "GeoPoint", "latitude": 40.7128, "longitude": -74.006},
  "poly": {"__type": "Polygon", "coordinates": [[0, 0], [0, 1.5], [1.5, 1.5], [0, 0]]},
  "raw":  {"__type": "Bytes", "base64": "aGVsbG8="},
  "ACL":  {"*": {"read": true}, "u1": {"read": true, "write": true}}
}`

const e1Stored = `{
  "objectId": "e1",
  "createdAt": "2024-01-02T03:04:05.006Z",
  "updatedAt": "2024-01-03T00:00:00.000Z",
  "str":  "hello",
  "num":  42.5,
  "flag": true,
  "day":  {"__type": "Date", "iso": "2024-05-06T07:08:09.123Z"},
  "obj":  {"a": 1, "b": [1, "two"]},
  "arr":  [1, "x", true],
  "ptr":  {"__type": "Pointer", "className": "_User", "objectId": "u1"},
  "file": {"__type": "File", "name": "photo.png"},
  "geo":  {"__type": "GeoPoint", "latitude": 40.7128, "longitude": -74.006},
  "poly": {"__type": "Polygon", "coordinates": [[0, 0], [0, 1.5], [1.5, 1.5], [0, 0]]},
  "raw":  {"__type": "Bytes", "base64": "aGVsbG8="},
  "rel":  {"__type": "Relation", "className": "_Role"},
  "ACL":  {"*": {"read": true}, "u1": {"read": true, "write": true}}
}`

const e2Stored = `{"objectId": "e2", "createdAt": "2024-01-04T00:00:00.000Z", "updatedAt": "2024-01-04T00:00:00.000Z",
  "num": 1, "rel": {"__type": "Relation", "className": "_Role"}}`

// loadE1 creates the Everything class with e1 and a plain e2.
func loadE1(t *testing.T, s store.Store) {
	t.Helper()
	createEverything(t, s)
	mustCreate(t, s, "Everything", []parse.Object{
		decodeObject(t, e1Row),
		decodeObject(t, `{"objectId": "e2", "createdAt": "2024-01-04T00:00:00.000Z", "num": 1}`),
	})
}

// findOne returns the object id of class (no ACL filter), or nil.
func findOne(t *testing.T, s store.Store, class, id string) parse.Object {
	t.Helper()
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: class, Limit: -1, Where: where(t, s, class, fmt.Sprintf(`{"objectId": %q}`, id))})
	switch len(rows) {
	case 0:
		return nil
	case 1:
		return rows[0]
	}
	t.Fatalf("%d rows with objectId %s in %s", len(rows), id, class)
	return nil
}

func mustUpdate(t *testing.T, s store.Store, w store.Write, set string) (before, after parse.Object) {
	t.Helper()
	before, after, err := s.Update(ctx, w, decodeObject(t, set))
	if err != nil {
		t.Fatalf("Update %s %s with %s: %v", w.Class, w.ID, set, err)
	}
	return before, after
}

// checkUpdatedAt checks that obj's updatedAt is a bare ISO string in
// [from, to] and removes it so the rest compares exactly.
func checkUpdatedAt(t *testing.T, what string, obj parse.Object, from, to time.Time) string {
	t.Helper()
	s, ok := obj["updatedAt"].(string)
	if !ok {
		t.Fatalf("%s: updatedAt %#v, want a bare ISO string", what, obj["updatedAt"])
	}
	u, err := time.Parse(parse.DateLayout, s)
	if err != nil {
		t.Errorf("%s: updatedAt %q is not in Parse's layout: %v", what, s, err)
	}
	if u.Before(from.Truncate(time.Millisecond)) || u.After(to) {
		t.Errorf("%s: updatedAt %s not between %s and %s", what, s, from, to)
	}
	delete(obj, "updatedAt")
	return s
}

// testUpdateEveryType sets a new value of every settable type and checks
// the before and after objects, what Find returns, and that the other row
// did not change.
func testUpdateEveryType(t *testing.T, s store.Store) {
	loadE1(t, s)
	start := time.Now().UTC()
	before, after := mustUpdate(t, s, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e1"}, `{
	  "str":  "changed ✓",
	  "num":  -3.25,
	  "flag": false,
	  "day":  {"__type": "Date", "iso": "2025-12-31T23:59:59.999Z"},
	  "obj":  {"x": [1, {"y": null}], "z": "w"},
	  "arr":  ["a", 2, false, {"k": []}],
	  "ptr":  {"__type": "Pointer", "className": "_User", "objectId": "u2"},
	  "file": {"__type": "File", "name": "other.txt", "url": "https://files.example.com/other.txt"},
	  "geo":  {"__type": "GeoPoint", "latitude": -33.8688, "longitude": 151.2093},
	  "poly": {"__type": "Polygon", "coordinates": [[10, 10], [10, 20], [20, 20]]},
	  "raw":  {"__type": "Bytes", "base64": "Ynll"}
	}`)
	end := time.Now().UTC()
	equalJSON(t, "before", before, e1Stored)
	updatedAt := checkUpdatedAt(t, "after", after, start, end)
	const want = `{
	  "objectId": "e1",
	  "createdAt": "2024-01-02T03:04:05.006Z",
	  "str":  "changed ✓",
	  "num":  -3.25,
	  "flag": false,
	  "day":  {"__type": "Date", "iso": "2025-12-31T23:59:59.999Z"},
	  "obj":  {"x": [1, {"y": null}], "z": "w"},
	  "arr":  ["a", 2, false, {"k": []}],
	  "ptr":  {"__type": "Pointer", "className": "_User", "objectId": "u2"},
	  "file": {"__type": "File", "name": "other.txt"},
	  "geo":  {"__type": "GeoPoint", "latitude": -33.8688, "longitude": 151.2093},
	  "poly": {"__type": "Polygon", "coordinates": [[10, 10], [10, 20], [20, 20], [10, 10]]},
	  "raw":  {"__type": "Bytes", "base64": "Ynll"},
	  "rel":  {"__type": "Relation", "className": "_Role"},
	  "ACL":  {"*": {"read": true}, "u1": {"read": true, "write": true}}
	}`
	equalJSON(t, "after", after, want)
	stored := findOne(t, s, "Everything", "e1")
	if stored["updatedAt"] != updatedAt {
		t.Errorf("stored updatedAt %#v, Update returned %q", stored["updatedAt"], updatedAt)
	}
	delete(stored, "updatedAt")
	equalJSON(t, "stored e1", stored, want)
	equalJSON(t, "e2 (not updated)", findOne(t, s, "Everything", "e2"), e2Stored)

	// An empty update changes updatedAt only, and updatedAt always advances.
	prev := updatedAt
	for i := range 3 {
		before, after := mustUpdate(t, s, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e1"}, `{}`)
		if before["updatedAt"] != prev {
			t.Errorf("empty update %d: before.updatedAt %#v, want %q", i, before["updatedAt"], prev)
		}
		next, _ := after["updatedAt"].(string)
		if next <= prev {
			t.Errorf("empty update %d: updatedAt %q did not advance past %q", i, next, prev)
		}
		prev = next
		delete(after, "updatedAt")
		equalJSON(t, fmt.Sprintf("after empty update %d", i), after, want)
	}
}

// testUpdateGoValues: Go callers may pass Go numbers, times and the parse
// helpers' values, as with Create.
func testUpdateGoValues(t *testing.T, s store.Store) {
	loadE1(t, s)
	_, after, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e2"}, parse.Object{
		"num": 7, "flag": true,
		"day": time.Date(2024, 5, 6, 9, 8, 9, 123e6, time.FixedZone("CEST", 2*3600)),
		"geo": parse.GeoPoint(1.5, -2.5), "ptr": parse.Pointer("_User", "u9"),
	})
	if err != nil {
		t.Fatalf("Update with Go values: %v", err)
	}
	delete(after, "updatedAt")
	equalJSON(t, "after", after, `{"objectId": "e2", "createdAt": "2024-01-04T00:00:00.000Z", "num": 7, "flag": true,
	  "day": {"__type": "Date", "iso": "2024-05-06T07:08:09.123Z"},
	  "geo": {"__type": "GeoPoint", "latitude": 1.5, "longitude": -2.5},
	  "ptr": {"__type": "Pointer", "className": "_User", "objectId": "u9"},
	  "rel": {"__type": "Relation", "className": "_Role"}}`)
}

// testUpdateUnset: {"__op":"Delete"} (or null) unsets a field; unsetting an
// absent field is no error.
func testUpdateUnset(t *testing.T, s store.Store) {
	loadE1(t, s)
	before, after := mustUpdate(t, s, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e1"}, `{
	  "str":  {"__op": "Delete"},
	  "flag": {"__op": "Delete"},
	  "day":  {"__op": "Delete"},
	  "obj":  null,
	  "arr":  {"__op": "Delete"},
	  "ptr":  {"__op": "Delete"},
	  "file": {"__op": "Delete"},
	  "geo":  {"__op": "Delete"},
	  "poly": {"__op": "Delete"},
	  "raw":  {"__op": "Delete"}
	}`)
	equalJSON(t, "before", before, e1Stored)
	delete(after, "updatedAt")
	const want = `{"objectId": "e1", "createdAt": "2024-01-02T03:04:05.006Z", "num": 42.5,
	  "rel": {"__type": "Relation", "className": "_Role"},
	  "ACL": {"*": {"read": true}, "u1": {"read": true, "write": true}}}`
	equalJSON(t, "after", after, want)
	stored := findOne(t, s, "Everything", "e1")
	delete(stored, "updatedAt")
	equalJSON(t, "stored e1", stored, want)
	// Unset fields are NULL: {"$exists": false} finds them.
	n := mustCount(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Everything", Where: where(t, s, "Everything", `{"str": {"$exists": false}, "geo": {"$exists": false}, "obj": {"$exists": false}}`)})
	if n != 2 {
		t.Errorf("rows without str, geo and obj: %d, want 2", n)
	}
	// Unsetting what is already unset, and setting one field back.
	_, after = mustUpdate(t, s, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e1"}, `{"str": {"__op": "Delete"}, "flag": false}`)
	delete(after, "updatedAt")
	equalJSON(t, "after the second update", after, `{"objectId": "e1", "createdAt": "2024-01-02T03:04:05.006Z", "num": 42.5, "flag": false,
	  "rel": {"__type": "Relation", "className": "_Role"},
	  "ACL": {"*": {"read": true}, "u1": {"read": true, "write": true}}}`)
}

// testUpdateACL: an "ACL" key replaces _rperm and _wperm; {"__op":"Delete"}
// or null removes the ACL (public), {} leaves nobody but the master key.
func testUpdateACL(t *testing.T, s store.Store) {
	loadDocs(t, s)
	doc := func(id string) store.Write { return store.Write{WriteACL: query.NoACLFilter, Class: "Doc", ID: id} }

	before, after := mustUpdate(t, s, doc("d1"), `{"ACL": {"*": {"read": true}, "u1": {"read": true, "write": true}}}`)
	equalRows(t, "d1 before, after", stripDates([]map[string]any{before, after}), `[
	  {"objectId": "d1", "title": "d1"},
	  {"objectId": "d1", "title": "d1", "ACL": {"*": {"read": true}, "u1": {"read": true, "write": true}}}
	]`)
	visible := func(acl []string) []string {
		return ids(mustFind(t, s, &query.Query{Class: "Doc", Limit: -1, ReadACL: aclOf(acl), Order: order(t, s, "Doc", "objectId")}))
	}
	equalIDs(t, "readable with no entries after d1's ACL was set", visible([]string{}), nil)
	equalIDs(t, "readable by * after d1's ACL was set", visible([]string{"*"}), []string{"d1", "d2", "d8"})
	// The new _wperm governs the next write.
	_, _, err := s.Update(ctx, store.Write{Class: "Doc", ID: "d1", WriteACL: query.ACLEntries("*", "u2")}, parse.Object{"title": "x"})
	wantErr(t, "update d1 as u2 after its ACL was set", err, store.ErrObjectNotFound)
	mustUpdate(t, s, store.Write{Class: "Doc", ID: "d1", WriteACL: query.ACLEntries("u1")}, `{"title": "by u1"}`)

	_, after = mustUpdate(t, s, doc("d5"), `{"ACL": {"__op": "Delete"}}`)
	equalJSON(t, "d5 after removing its ACL", stripDates([]map[string]any{after}), `[{"objectId": "d5", "title": "d5"}]`)
	_, after = mustUpdate(t, s, doc("d2"), `{"ACL": null}`)
	equalJSON(t, "d2 after a null ACL", stripDates([]map[string]any{after}), `[{"objectId": "d2", "title": "d2"}]`)
	_, after = mustUpdate(t, s, doc("d3"), `{"ACL": {}, "title": "locked"}`)
	equalJSON(t, "d3 after an empty ACL", stripDates([]map[string]any{after}), `[{"objectId": "d3", "title": "locked", "ACL": {}}]`)
	_, after = mustUpdate(t, s, doc("d7"), `{"ACL": {"role:Staff": {"write": true}, "u9": {"read": false, "write": false}}}`)
	equalJSON(t, "d7 after a write-only ACL", stripDates([]map[string]any{after}), `[{"objectId": "d7", "title": "d7", "ACL": {"role:Staff": {"write": true}}}]`)

	equalIDs(t, "readable with no entries at the end", visible([]string{}), []string{"d2", "d5"})
	equalRows(t, "Doc at the end", stripDates(all(t, s, "Doc")), `[
	  {"objectId": "d1", "title": "by u1", "ACL": {"*": {"read": true}, "u1": {"read": true, "write": true}}},
	  {"objectId": "d2", "title": "d2"},
	  {"objectId": "d3", "title": "locked", "ACL": {}},
	  {"objectId": "d4", "title": "d4", "ACL": {"role:Admin": {"read": true}}},
	  {"objectId": "d5", "title": "d5"},
	  {"objectId": "d6", "title": "d6", "ACL": {"u1": {"write": true}}},
	  {"objectId": "d7", "title": "d7", "ACL": {"role:Staff": {"write": true}}},
	  {"objectId": "d8", "title": "d8", "ACL": {"*": {"read": true, "write": true}, "role:Admin": {"write": true}}}
	]`)
}

// testUpdateRefused: every invalid update is refused with ErrInvalid naming
// the field, and the row stays exactly as it was (updatedAt included).
func testUpdateRefused(t *testing.T, s store.Store) {
	loadE1(t, s)
	cases := []struct{ name, set, names string }{
		{"objectId", `{"objectId": "e9"}`, `"objectId"`},
		{"createdAt", `{"createdAt": "2020-01-01T00:00:00.000Z"}`, `"createdAt"`},
		{"updatedAt", `{"updatedAt": "2020-01-01T00:00:00.000Z"}`, `"updatedAt"`},
		{"unknown field", `{"nope": 1}`, `"nope"`},
		{"unknown field with a valid one", `{"str": "fine", "nope": 1}`, `"nope"`},
		{"storage column", `{"_rperm": ["*"]}`, `"_rperm"`},
		{"Relation by value", `{"rel": {"__type": "Relation", "className": "_Role"}}`, `"rel"`},
		{"Relation unset", `{"rel": {"__op": "Delete"}}`, `"rel"`},
		{"Relation op", `{"rel": {"__op": "AddRelation", "objects": [{"__type": "Pointer", "className": "_Role", "objectId": "r1"}]}}`, `"rel"`},
		{"required field unset", `{"num": {"__op": "Delete"}}`, `"num"`},
		{"required field null", `{"num": null}`, `"num"`},
		{"unsupported op", `{"num": {"__op": "Increment", "amount": 1}}`, `"num"`},
		{"Delete op with extra keys", `{"obj": {"__op": "Delete", "x": 1}}`, `"obj"`},
		{"string into Number", `{"num": "1"}`, `"num"`},
		{"number into String", `{"str": 5}`, `"str"`},
		{"string into Boolean", `{"flag": "true"}`, `"flag"`},
		{"unparseable Date", `{"day": "yesterday"}`, `"day"`},
		{"number into Date", `{"day": 1700000000}`, `"day"`},
		{"array into Object", `{"obj": [1, 2]}`, `"obj"`},
		{"object into Array", `{"arr": {"0": "a"}}`, `"arr"`},
		{"Pointer to the wrong class", `{"ptr": {"__type": "Pointer", "className": "_Role", "objectId": "r1"}}`, `"ptr"`},
		{"Pointer as a bare id", `{"ptr": "u1"}`, `"ptr"`},
		{"File as a string", `{"file": "a.png"}`, `"file"`},
		{"GeoPoint out of range", `{"geo": {"__type": "GeoPoint", "latitude": 91, "longitude": 0}}`, `"geo"`},
		{"Polygon of two points", `{"poly": {"__type": "Polygon", "coordinates": [[0, 0], [1, 1]]}}`, `"poly"`},
		{"Bytes not base64", `{"raw": {"__type": "Bytes", "base64": "not base64!"}}`, `"raw"`},
		{"Bytes as a string", `{"raw": "aGk="}`, `"raw"`},
		{"ACL not an object", `{"ACL": "public"}`, `ACL`},
		{"ACL entry not an object", `{"ACL": {"*": true}}`, `ACL`},
		{"ACL unknown permission", `{"ACL": {"*": {"delete": true}}}`, `ACL`},
	}
	for _, c := range cases {
		for _, w := range []store.Write{{Class: "Everything", ID: "e1"}, {Class: "Everything", ID: "e1", WriteACL: query.ACLEntries("u1")}} {
			before, after, err := s.Update(ctx, w, decodeObject(t, c.set))
			wantErr(t, "Update with "+c.name, err, store.ErrInvalid)
			if err != nil && !strings.Contains(err.Error(), c.names) {
				t.Errorf("Update with %s: error %q does not name %s", c.name, err, c.names)
			}
			if before != nil || after != nil {
				t.Errorf("Update with %s returned objects %v, %v", c.name, before, after)
			}
		}
	}
	_, _, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything"}, parse.Object{"num": 1})
	wantErr(t, "Update without an objectId", err, store.ErrInvalid)
	_, _, err = s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Nope", ID: "e1"}, parse.Object{"num": 1})
	wantErr(t, "Update in an unknown class", err, store.ErrClassNotFound)
	equalRows(t, "rows after refused updates", all(t, s, "Everything"), "["+e1Stored+","+e2Stored+"]")
}

// testWriteNotFound: a missing object is ErrObjectNotFound and nothing
// changes.
func testWriteNotFound(t *testing.T, s store.Store) {
	loadE1(t, s)
	for _, id := range []string{"e9", "E1", "e1 ", "'; DROP TABLE \"Everything\"; --"} {
		_, _, err := s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: id}, parse.Object{"num": 2})
		wantErr(t, fmt.Sprintf("Update of %q", id), err, store.ErrObjectNotFound)
		_, err = s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: id})
		wantErr(t, fmt.Sprintf("Delete of %q", id), err, store.ErrObjectNotFound)
	}
	_, err := s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything"})
	wantErr(t, "Delete without an objectId", err, store.ErrInvalid)
	_, err = s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Nope", ID: "e1"})
	wantErr(t, "Delete in an unknown class", err, store.ErrClassNotFound)
	// An object of another class is not found here.
	loadItems(t, s)
	_, _, err = s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "i1"}, parse.Object{"num": 2})
	wantErr(t, "Update of an Item id in Everything", err, store.ErrObjectNotFound)
	equalRows(t, "rows after missing writes", all(t, s, "Everything"), "["+e1Stored+","+e2Stored+"]")
	if n := count(t, s, "Item"); n != 6 {
		t.Errorf("Item count = %d, want 6", n)
	}
}

// writeACLCases: the entries a writer holds and the Doc objects (see
// docRows) they may change. A NULL _wperm (d1) is public; an empty one
// (d2, d4, d5, d7: ACLs granting no write) admits nobody; nil is the master
// key.
var writeACLCases = []struct {
	acl  []string
	want []string
}{
	{nil, []string{"d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"}},
	{[]string{}, []string{"d1"}},
	{[]string{"*"}, []string{"d1", "d8"}},
	{[]string{"u1"}, []string{"d1", "d3", "d6"}},
	{[]string{"role:Admin"}, []string{"d1", "d8"}},
	{[]string{"u2", "role:Staff"}, []string{"d1"}}, // d7 grants them read only
	{[]string{"*", "u1", "role:Admin"}, []string{"d1", "d3", "d6", "d8"}},
	{[]string{"Admin"}, []string{"d1"}},      // a role entry needs its "role:" prefix
	{[]string{"role:admin"}, []string{"d1"}}, // entries are case-sensitive
}

var docIDs = []string{"d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8"}

func aclName(acl []string) string {
	if acl == nil {
		return "WriteACL nil"
	}
	return fmt.Sprintf("WriteACL %q", acl)
}

func testWriteACLUpdate(t *testing.T, s store.Store) {
	loadDocs(t, s)
	titles := map[string]string{}
	for _, id := range docIDs {
		titles[id] = id
	}
	for i, c := range writeACLCases {
		title := fmt.Sprintf("case %d", i)
		var got []string
		for _, id := range docIDs {
			before, after, err := s.Update(ctx, store.Write{Class: "Doc", ID: id, WriteACL: aclOf(c.acl)}, parse.Object{"title": title})
			switch {
			case err == nil:
				got = append(got, id)
				if before["title"] != titles[id] || after["title"] != title {
					t.Errorf("Update %s with %s: title before %v after %v, want %q then %q", id, aclName(c.acl), before["title"], after["title"], titles[id], title)
				}
				titles[id] = title
			case errors.Is(err, store.ErrObjectNotFound):
			default:
				t.Errorf("Update %s with %s: %v, want success or ErrObjectNotFound", id, aclName(c.acl), err)
			}
		}
		equalIDs(t, "objects updated with "+aclName(c.acl), got, c.want)
		for _, row := range all(t, s, "Doc") {
			id, _ := row["objectId"].(string)
			if row["title"] != titles[id] {
				t.Errorf("after updates with %s: %s has title %v, want %q", aclName(c.acl), id, row["title"], titles[id])
			}
		}
	}
	// The objects returned are whole, ACL included.
	before, after := mustUpdate(t, s, store.Write{Class: "Doc", ID: "d6", WriteACL: query.ACLEntries("u1")}, `{"title": "final"}`)
	equalRows(t, "d6 before, after", stripDates([]map[string]any{before, after}), fmt.Sprintf(`[
	  {"objectId": "d6", "title": %q, "ACL": {"u1": {"write": true}}},
	  {"objectId": "d6", "title": "final", "ACL": {"u1": {"write": true}}}
	]`, titles["d6"]))
}

// loadDocClass creates a class like Doc under another name, with docRows.
func loadDocClass(t *testing.T, s store.Store, class string) {
	t.Helper()
	mustCreateClass(t, s, classFromJSON(t, `{"className": "`+class+`", "fields": {"title": {"type": "String"}}, "classLevelPermissions": {}}`))
	mustCreate(t, s, class, decodeObjects(t, docRows))
}

func testWriteACLDelete(t *testing.T, s store.Store) {
	for i, c := range writeACLCases {
		class := fmt.Sprintf("Doc%d", i)
		loadDocClass(t, s, class)
		var got []string
		for _, id := range docIDs {
			obj, err := s.Delete(ctx, store.Write{Class: class, ID: id, WriteACL: aclOf(c.acl)})
			switch {
			case err == nil:
				got = append(got, id)
				if obj["objectId"] != id || obj["title"] != id {
					t.Errorf("Delete %s with %s returned %v", id, aclName(c.acl), obj)
				}
			case errors.Is(err, store.ErrObjectNotFound):
				if obj != nil {
					t.Errorf("a refused Delete %s with %s returned %v", id, aclName(c.acl), obj)
				}
			default:
				t.Errorf("Delete %s with %s: %v, want success or ErrObjectNotFound", id, aclName(c.acl), err)
			}
		}
		equalIDs(t, "objects deleted with "+aclName(c.acl), got, c.want)
		var left []string
		for _, id := range docIDs {
			if !contains(c.want, id) {
				left = append(left, id)
			}
		}
		equalIDs(t, "objects left after deletes with "+aclName(c.acl), ids(all(t, s, class)), left)
	}
	// The object returned is whole, ACL included.
	loadDocClass(t, s, "DocLast")
	obj, err := s.Delete(ctx, store.Write{Class: "DocLast", ID: "d3", WriteACL: query.ACLEntries("*", "u1")})
	if err != nil {
		t.Fatalf("Delete d3 as u1: %v", err)
	}
	equalRows(t, "deleted d3", stripDates([]map[string]any{obj}), `[{"objectId": "d3", "title": "d3", "ACL": {"u1": {"read": true, "write": true}}}]`)
}

func contains(a []string, s string) bool {
	for _, x := range a {
		if x == s {
			return true
		}
	}
	return false
}

// testWriteWhere: Where is a constraint the row must also meet; a row that
// does not is not found and stays as it was.
func testWriteWhere(t *testing.T, s store.Store) {
	loadItems(t, s)
	original := all(t, s, "Item")
	item := func(id, w string) store.Write {
		return store.Write{WriteACL: query.NoACLFilter, Class: "Item", ID: id, Where: where(t, s, "Item", w)}
	}
	for _, w := range []string{
		`{"score": {"$lt": 5}}`,
		`{"owner": {"__type": "Pointer", "className": "_User", "objectId": "u2"}}`,
		`{"objectId": "i2"}`,
		`{"tags": "yellow"}`,
		`{"$or": [{"name": "banana"}, {"active": false}]}`,
		`{"meta.plan": "free"}`,
		`{"score": {"$exists": false}}`,
	} {
		_, _, err := s.Update(ctx, item("i1", w), parse.Object{"score": 99})
		wantErr(t, "Update i1 where "+w, err, store.ErrObjectNotFound)
		_, err = s.Delete(ctx, item("i1", w))
		wantErr(t, "Delete i1 where "+w, err, store.ErrObjectNotFound)
	}
	equalRows(t, "Item after refused writes", all(t, s, "Item"), compact(original))

	before, after := mustUpdate(t, s, item("i1", `{"$or": [{"score": 10}, {"name": "x"}], "tags": "red", "meta.plan": "pro"}`), `{"score": 11}`)
	if before["score"] != 10.0 || after["score"] != 11.0 {
		t.Errorf("Update i1 where it matches: score %v → %v, want 10 → 11", before["score"], after["score"])
	}

	// Where and WriteACL both hold, or nothing changes.
	mustUpdate(t, s, store.Write{WriteACL: query.NoACLFilter, Class: "Item", ID: "i2"}, `{"ACL": {"u2": {"read": true, "write": true}}}`)
	_, _, err := s.Update(ctx, store.Write{Class: "Item", ID: "i2", Where: where(t, s, "Item", `{"name": "banana"}`), WriteACL: query.ACLEntries("*", "u1")}, parse.Object{"score": 6})
	wantErr(t, "Update i2 where it matches, without write access", err, store.ErrObjectNotFound)
	_, _, err = s.Update(ctx, store.Write{Class: "Item", ID: "i2", Where: where(t, s, "Item", `{"name": "apple"}`), WriteACL: query.ACLEntries("*", "u2")}, parse.Object{"score": 6})
	wantErr(t, "Update i2 where it does not match, with write access", err, store.ErrObjectNotFound)
	_, after, err = s.Update(ctx, store.Write{Class: "Item", ID: "i2", Where: where(t, s, "Item", `{"name": "banana"}`), WriteACL: query.ACLEntries("*", "u2")}, parse.Object{"score": 6})
	if err != nil || after["score"] != 6.0 {
		t.Errorf("Update i2 where it matches, with write access: %v, score %v", err, after["score"])
	}

	// Delete under a Where.
	obj, err := s.Delete(ctx, item("i4", `{"name": "durian", "score": {"$exists": false}}`))
	if err != nil {
		t.Fatalf("Delete i4 where it matches: %v", err)
	}
	equalJSON(t, "deleted i4", obj, `{"objectId": "i4", "createdAt": "2024-01-04T00:00:00.000Z", "updatedAt": "2024-01-04T00:00:00.000Z",
	  "name": "durian", "tags": [], "meta": {"plan": "free"}}`)
	equalIDs(t, "Item ids at the end", ids(all(t, s, "Item")), []string{"i1", "i2", "i3", "i5", "i6"})
}

// testCompareAndSet: the Where is checked by the UPDATE itself, so of many
// concurrent updates conditioned on the same value exactly one wins.
func testCompareAndSet(t *testing.T, s store.Store) {
	loadItems(t, s)
	w := store.Write{WriteACL: query.NoACLFilter, Class: "Item", ID: "i1", Where: where(t, s, "Item", `{"score": 10}`)}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, errs[i] = s.Update(ctx, w, parse.Object{"score": float64(100 + i)})
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
			if got := findOne(t, s, "Item", "i1")["score"]; got != float64(100+i) {
				t.Errorf("winner %d wrote score %d but i1 has %v", i, 100+i, got)
			}
		case !errors.Is(err, store.ErrObjectNotFound):
			t.Errorf("update %d: %v, want success or ErrObjectNotFound", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d concurrent compare-and-set updates succeeded, want exactly 1", won)
	}
}

// testDelete: Delete returns the whole object as Find did, and it is gone.
func testDelete(t *testing.T, s store.Store) {
	loadE1(t, s)
	obj, err := s.Delete(ctx, store.Write{Class: "Everything", ID: "e1", WriteACL: query.ACLEntries("u1")})
	if err != nil {
		t.Fatalf("Delete e1: %v", err)
	}
	equalJSON(t, "deleted e1", obj, e1Stored)
	equalRows(t, "rows after Delete", all(t, s, "Everything"), "["+e2Stored+"]")
	_, err = s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e1"})
	wantErr(t, "second Delete of e1", err, store.ErrObjectNotFound)
	_, _, err = s.Update(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Everything", ID: "e1"}, parse.Object{"num": 1})
	wantErr(t, "Update of deleted e1", err, store.ErrObjectNotFound)
	// The id is free again.
	mustCreate(t, s, "Everything", []parse.Object{{"objectId": "e1", "num": 3}})
	if n := count(t, s, "Everything"); n != 2 {
		t.Errorf("Count = %d after re-creating e1, want 2", n)
	}
}

// testDeleteJoinRows: deleting an object removes the join rows it owns;
// rows of other owners that point at it stay, as in Parse Server.
func testDeleteJoinRows(t *testing.T, s store.Store) {
	createTeam(t, s)
	addRelation(t, s, "Team", "members", "t1", "u1", "u2")
	addRelation(t, s, "Team", "rivals", "t1", "t2")
	addRelation(t, s, "Team", "rivals", "t2", "t1")
	addRelation(t, s, "Team", "members", "t2", "u3")
	obj, err := s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Team", ID: "t1"})
	if err != nil {
		t.Fatalf("Delete t1: %v", err)
	}
	equalJSON(t, "deleted t1", stripDates([]map[string]any{obj}), `[{"objectId": "t1", "name": "red",
	  "members": {"__type": "Relation", "className": "_User"}, "rivals": {"__type": "Relation", "className": "Team"}}]`)
	equalIDs(t, "t1.members after Delete", related(t, s, "Team", "members", "t1"), nil)
	equalIDs(t, "t1.rivals after Delete", related(t, s, "Team", "rivals", "t1"), nil)
	equalIDs(t, "t2.rivals after Delete t1", related(t, s, "Team", "rivals", "t2"), []string{"t1"})
	equalIDs(t, "t2.members after Delete t1", related(t, s, "Team", "members", "t2"), []string{"u3"})
	// A refused Delete leaves the join rows.
	_, err = s.Delete(ctx, store.Write{Class: "Team", ID: "t2", WriteACL: query.ACLEntries(), Where: where(t, s, "Team", `{"name": "red"}`)})
	wantErr(t, "Delete t2 where it does not match", err, store.ErrObjectNotFound)
	equalIDs(t, "t2.members after a refused Delete", related(t, s, "Team", "members", "t2"), []string{"u3"})

	// A system class's join tables too.
	mustCreate(t, s, "_Role", decodeObjects(t, `[{"objectId": "r1", "name": "Admin"}, {"objectId": "r2", "name": "Staff"}]`))
	addRelation(t, s, "_Role", "users", "r1", "u1")
	addRelation(t, s, "_Role", "roles", "r1", "r2")
	addRelation(t, s, "_Role", "users", "r2", "u2")
	if _, err := s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "_Role", ID: "r1"}); err != nil {
		t.Fatalf("Delete r1: %v", err)
	}
	equalIDs(t, "r1.users after Delete", related(t, s, "_Role", "users", "r1"), nil)
	equalIDs(t, "r1.roles after Delete", related(t, s, "_Role", "roles", "r1"), nil)
	equalIDs(t, "r2.users after Delete r1", related(t, s, "_Role", "users", "r2"), []string{"u2"})
}

// testDeleteClass: a class is dropped only when empty, with its join
// tables and _SCHEMA row; the name can then be used again.
func testDeleteClass(t *testing.T, s store.Store) {
	const scratch = `{"className": "Scratch", "fields": {
	  "label": {"type": "String"},
	  "links": {"type": "Relation", "targetClass": "_User"},
	  "owner": {"type": "Pointer", "targetClass": "_User"}
	}, "classLevelPermissions": {}, "indexes": {"label_1": {"label": 1}}}`
	mustCreateClass(t, s, classFromJSON(t, scratch))
	mustCreate(t, s, "Scratch", decodeObjects(t, `[{"objectId": "s1", "label": "a"}, {"objectId": "s2", "label": "b"}]`))
	// A join row whose owner is no object: only dropping the table removes it.
	addRelation(t, s, "Scratch", "links", "ghost", "u1")
	nSchemas := len(mustSchemas(t, s))

	err := s.DeleteClass(ctx, "Scratch")
	wantErr(t, "DeleteClass with 2 objects", err, store.ErrClassNotEmpty)
	if err != nil && !strings.Contains(err.Error(), "Scratch holds 2 objects") {
		t.Errorf("DeleteClass with 2 objects: error %q does not say how many", err)
	}
	if _, err := s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Scratch", ID: "s1"}); err != nil {
		t.Fatal(err)
	}
	err = s.DeleteClass(ctx, "Scratch")
	wantErr(t, "DeleteClass with 1 object", err, store.ErrClassNotEmpty)
	if err != nil && !strings.Contains(err.Error(), "Scratch holds 1 object;") {
		t.Errorf("DeleteClass with 1 object: error %q does not say how many", err)
	}
	equalIDs(t, "Scratch after refused DeleteClass", ids(all(t, s, "Scratch")), []string{"s2"})
	equalIDs(t, "ghost.links after refused DeleteClass", related(t, s, "Scratch", "links", "ghost"), []string{"u1"})

	if _, err := s.Delete(ctx, store.Write{WriteACL: query.NoACLFilter, Class: "Scratch", ID: "s2"}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteClass(ctx, "Scratch"); err != nil {
		t.Fatalf("DeleteClass of an empty class: %v", err)
	}
	// Gone at once from this store: schema, rows, relations.
	_, err = s.Schema(ctx, "Scratch")
	wantErr(t, "Schema after DeleteClass", err, store.ErrClassNotFound)
	if got := mustSchemas(t, s); len(got) != nSchemas-1 {
		t.Errorf("Schemas after DeleteClass: %d classes, want %d", len(got), nSchemas-1)
	}
	for _, sch := range mustSchemas(t, s) {
		if sch.ClassName == "Scratch" {
			t.Errorf("Schemas still lists Scratch")
		}
	}
	_, err = s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Scratch", Limit: -1})
	wantErr(t, "Find after DeleteClass", err, store.ErrClassNotFound)
	wantErr(t, "Create after DeleteClass", s.Create(ctx, "Scratch", []parse.Object{{"label": "x"}}), store.ErrClassNotFound)
	wantErr(t, "AddRelation after DeleteClass", s.AddRelation(ctx, "Scratch", "links", "s1", []string{"u1"}), store.ErrClassNotFound)
	wantErr(t, "DeleteClass twice", s.DeleteClass(ctx, "Scratch"), store.ErrClassNotFound)

	// The name is free: a new class of that name with other field types
	// starts empty, join tables included.
	mustCreateClass(t, s, classFromJSON(t, `{"className": "Scratch", "fields": {
	  "label": {"type": "Number"},
	  "links": {"type": "Relation", "targetClass": "_User"}
	}, "classLevelPermissions": {}, "indexes": {"label_1": {"label": 1}}}`))
	equalIDs(t, "ghost.links in the new class", related(t, s, "Scratch", "links", "ghost"), nil)
	mustCreate(t, s, "Scratch", decodeObjects(t, `[{"objectId": "n1", "label": 5}]`))
	equalRows(t, "rows of the new class", stripDates(all(t, s, "Scratch")), `[{"objectId": "n1", "label": 5, "links": {"__type": "Relation", "className": "_User"}}]`)

	// A class without relations, never used.
	mustCreateClass(t, s, parse.NewSchema("Bare"))
	if err := s.DeleteClass(ctx, "Bare"); err != nil {
		t.Fatalf("DeleteClass Bare: %v", err)
	}
	_, err = s.Schema(ctx, "Bare")
	wantErr(t, "Schema(Bare) after DeleteClass", err, store.ErrClassNotFound)
}

func mustSchemas(t *testing.T, s store.Store) []parse.Schema {
	t.Helper()
	all, err := s.Schemas(ctx)
	if err != nil {
		t.Fatalf("Schemas: %v", err)
	}
	return all
}

// testDeleteClassRefused: unknown classes, system classes (even empty ones)
// and classes holding objects are refused, and nothing changes.
func testDeleteClassRefused(t *testing.T, s store.Store) {
	loadItems(t, s)
	wantErr(t, "DeleteClass of an unknown class", s.DeleteClass(ctx, "Nope"), store.ErrClassNotFound)
	wantErr(t, "DeleteClass of an empty name", s.DeleteClass(ctx, ""), store.ErrClassNotFound)
	for _, class := range []string{"_User", "_Role", "_Session", "_Installation", "_AgentAudit", "_Nope"} {
		err := s.DeleteClass(ctx, class)
		wantErr(t, "DeleteClass "+class, err, store.ErrInvalid)
		if err != nil && !strings.Contains(err.Error(), class) {
			t.Errorf("DeleteClass %s: error %q does not name the class", class, err)
		}
	}
	for _, class := range []string{"_User", "_Role", "_Session"} {
		mustSchema(t, s, class)
		count(t, s, class)
	}
	err := s.DeleteClass(ctx, "Item")
	wantErr(t, "DeleteClass Item", err, store.ErrClassNotEmpty)
	if err != nil && !strings.Contains(err.Error(), "Item holds 6 objects") {
		t.Errorf("DeleteClass Item: error %q does not say how many objects", err)
	}
	if n := count(t, s, "Item"); n != 6 {
		t.Errorf("Item count after a refused DeleteClass = %d", n)
	}
}

// testWriteCancelled: writes under a cancelled or expired context fail with
// the context's error and change nothing.
func testWriteCancelled(t *testing.T, s store.Store) {
	loadItems(t, s)
	mustCreateClass(t, s, parse.NewSchema("Empty"))
	original := all(t, s, "Item")
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := s.Update(c, store.Write{WriteACL: query.NoACLFilter, Class: "Item", ID: "i1"}, parse.Object{"score": 1})
	wantErr(t, "Update with a cancelled context", err, context.Canceled)
	_, err = s.Delete(c, store.Write{WriteACL: query.NoACLFilter, Class: "Item", ID: "i1"})
	wantErr(t, "Delete with a cancelled context", err, context.Canceled)
	wantErr(t, "DeleteClass with a cancelled context", s.DeleteClass(c, "Empty"), context.Canceled)

	d, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, _, err = s.Update(d, store.Write{WriteACL: query.NoACLFilter, Class: "Item", ID: "i1"}, parse.Object{"score": 1})
	wantErr(t, "Update past its deadline", err, context.DeadlineExceeded)
	_, err = s.Delete(d, store.Write{WriteACL: query.NoACLFilter, Class: "Item", ID: "i1"})
	wantErr(t, "Delete past its deadline", err, context.DeadlineExceeded)
	wantErr(t, "DeleteClass past its deadline", s.DeleteClass(d, "Empty"), context.DeadlineExceeded)

	equalRows(t, "Item after cancelled writes", all(t, s, "Item"), compact(original))
	mustSchema(t, s, "Empty")
	// The store still works.
	mustUpdate(t, s, store.Write{WriteACL: query.NoACLFilter, Class: "Item", ID: "i1"}, `{"score": 1}`)
	if err := s.DeleteClass(ctx, "Empty"); err != nil {
		t.Errorf("DeleteClass after cancellations: %v", err)
	}
}
