package storetest

import (
	"regexp"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var objectTests = []subtest{
	{"EveryTypeRoundTrip", testObjectRoundTrip},
	{"InputForms", testObjectInputForms},
	{"AssignedFields", testAssignedFields},
	{"ExplicitFields", testExplicitFields},
	{"AtomicInvalidBatch", testAtomicInvalidBatch},
	{"AtomicDuplicateID", testAtomicDuplicateID},
	{"Rejected", testObjectRejected},
	{"SystemClassRows", testSystemClassRows},
	{"FindJSONKeep", testFindJSONKeep},
}

func createEverything(t *testing.T, s store.Store) {
	t.Helper()
	mustCreateClass(t, s, classFromJSON(t, everythingSchema))
}

// testObjectRoundTrip stores one object of every field type in REST form and
// reads it back unchanged, as Parse Server returns it: createdAt/updatedAt as
// bare ISO strings, every Relation field as {"__type":"Relation","className":
// target}, and a Polygon's ring closed (its first point repeated last when the
// caller left it open).
func testObjectRoundTrip(t *testing.T, s store.Store) {
	createEverything(t, s)
	in := decodeObjects(t, `[
	  {
	    "objectId": "e1",
	    "createdAt": "2024-01-02T03:04:05.006Z",
	    "updatedAt": "2024-01-03T00:00:00.000Z",
	    "str":  "héllo, wörld 🌍 'quoted' \"double\"",
	    "num":  42.5,
	    "flag": true,
	    "day":  {"__type": "Date", "iso": "2024-05-06T07:08:09.123Z"},
	    "obj":  {"a": 1, "b": [1, "two", {"c": null}], "d": {"e": false, "f": {"__type": "Pointer", "className": "X", "objectId": "x1"}}},
	    "arr":  [1, "x", true, null, {"k": "v"}, [2, 3]],
	    "ptr":  {"__type": "Pointer", "className": "_User", "objectId": "u1"},
	    "file": {"__type": "File", "name": "tfss-abc_photo.png"},
	    "geo":  {"__type": "GeoPoint", "latitude": 40.7128, "longitude": -74.006},
	    "poly": {"__type": "Polygon", "coordinates": [[0, 0], [0, 1.5], [1.5, 1.5], [1.5, 0]]},
	    "raw":  {"__type": "Bytes", "base64": "aGVsbG8gd29ybGQ="},
	    "ACL":  {"*": {"read": true}, "u1": {"read": true, "write": true}, "role:Admin": {"write": true}}
	  },
	  {
	    "objectId": "e2",
	    "createdAt": "2024-01-04T00:00:00.000Z",
	    "updatedAt": "2024-01-04T00:00:00.000Z",
	    "str":  "",
	    "num":  0,
	    "flag": false,
	    "obj":  {},
	    "arr":  [],
	    "geo":  {"__type": "GeoPoint", "latitude": -90, "longitude": 180},
	    "poly": {"__type": "Polygon", "coordinates": [[1, 1], [2, 2], [3, 1], [1, 1]]},
	    "ACL":  {}
	  },
	  {
	    "objectId": "e3",
	    "createdAt": "2024-01-05T00:00:00.000Z",
	    "updatedAt": "2024-01-06T00:00:00.000Z",
	    "num": -1e21
	  }
	]`)
	mustCreate(t, s, "Everything", in)
	equalRows(t, "Find(Everything)", all(t, s, "Everything"), `[
	  {
	    "objectId": "e1",
	    "createdAt": "2024-01-02T03:04:05.006Z",
	    "updatedAt": "2024-01-03T00:00:00.000Z",
	    "str":  "héllo, wörld 🌍 'quoted' \"double\"",
	    "num":  42.5,
	    "flag": true,
	    "day":  {"__type": "Date", "iso": "2024-05-06T07:08:09.123Z"},
	    "obj":  {"a": 1, "b": [1, "two", {"c": null}], "d": {"e": false, "f": {"__type": "Pointer", "className": "X", "objectId": "x1"}}},
	    "arr":  [1, "x", true, null, {"k": "v"}, [2, 3]],
	    "ptr":  {"__type": "Pointer", "className": "_User", "objectId": "u1"},
	    "file": {"__type": "File", "name": "tfss-abc_photo.png"},
	    "geo":  {"__type": "GeoPoint", "latitude": 40.7128, "longitude": -74.006},
	    "poly": {"__type": "Polygon", "coordinates": [[0, 0], [0, 1.5], [1.5, 1.5], [1.5, 0], [0, 0]]},
	    "raw":  {"__type": "Bytes", "base64": "aGVsbG8gd29ybGQ="},
	    "rel":  {"__type": "Relation", "className": "_Role"},
	    "ACL":  {"*": {"read": true}, "u1": {"read": true, "write": true}, "role:Admin": {"write": true}}
	  },
	  {
	    "objectId": "e2",
	    "createdAt": "2024-01-04T00:00:00.000Z",
	    "updatedAt": "2024-01-04T00:00:00.000Z",
	    "str":  "",
	    "num":  0,
	    "flag": false,
	    "obj":  {},
	    "arr":  [],
	    "geo":  {"__type": "GeoPoint", "latitude": -90, "longitude": 180},
	    "poly": {"__type": "Polygon", "coordinates": [[1, 1], [2, 2], [3, 1], [1, 1]]},
	    "rel":  {"__type": "Relation", "className": "_Role"},
	    "ACL":  {}
	  },
	  {
	    "objectId": "e3",
	    "createdAt": "2024-01-05T00:00:00.000Z",
	    "updatedAt": "2024-01-06T00:00:00.000Z",
	    "num": -1e21,
	    "rel": {"__type": "Relation", "className": "_Role"}
	  }
	]`)

	// A single row through a where, and a Count.
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Everything", Limit: -1, Where: where(t, s, "Everything", `{"objectId": "e3"}`)})
	equalRows(t, "Find(objectId=e3)", rows, `[{"objectId": "e3", "createdAt": "2024-01-05T00:00:00.000Z", "updatedAt": "2024-01-06T00:00:00.000Z", "num": -1e21,
	  "rel": {"__type": "Relation", "className": "_Role"}}]`)
	if n := count(t, s, "Everything"); n != 3 {
		t.Errorf("Count = %d, want 3", n)
	}
}

// testObjectInputForms: the lenient input forms a store accepts and the
// canonical REST form it returns for them.
func testObjectInputForms(t *testing.T, s store.Store) {
	createEverything(t, s)
	in := decodeObjects(t, `[
	  {"objectId": "f1", "createdAt": "2024-01-01T00:00:00.000Z", "num": 1,
	   "day": "2024-05-06T09:08:09.123+02:00"},
	  {"objectId": "f2", "createdAt": "2024-01-01T00:00:00.000Z", "num": 2,
	   "day": "2024-05-06"},
	  {"objectId": "f3", "createdAt": "2024-01-01T00:00:00.000Z", "num": 3,
	   "day": {"__type": "Date", "iso": "2024-05-06T07:08:09Z"}},
	  {"objectId": "f4", "createdAt": {"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}, "num": 4,
	   "file": {"__type": "File", "name": "doc.pdf", "url": "https://files.example.com/doc.pdf"}},
	  {"objectId": "f5", "createdAt": "2024-01-01T02:00:00+02:00", "num": 5,
	   "str": null, "day": null, "ptr": null, "ACL": null}
	]`)
	mustCreate(t, s, "Everything", in)
	// Dates normalise to UTC with milliseconds; a File keeps its name only
	// (the URL is the server's to compute, as in Parse Server's storage);
	// explicit nulls are absent fields; a null ACL is no ACL.
	equalRows(t, "Find(Everything)", all(t, s, "Everything"), `[
	  {"objectId": "f1", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}, "num": 1,
	   "day": {"__type": "Date", "iso": "2024-05-06T07:08:09.123Z"}},
	  {"objectId": "f2", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}, "num": 2,
	   "day": {"__type": "Date", "iso": "2024-05-06T00:00:00.000Z"}},
	  {"objectId": "f3", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}, "num": 3,
	   "day": {"__type": "Date", "iso": "2024-05-06T07:08:09.000Z"}},
	  {"objectId": "f4", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}, "num": 4,
	   "file": {"__type": "File", "name": "doc.pdf"}},
	  {"objectId": "f5", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}, "num": 5}
	]`)

	// Go callers may pass Go numbers and times.
	mustCreate(t, s, "Everything", []parse.Object{{
		"objectId": "g1", "createdAt": "2024-01-01T00:00:00.000Z", "num": 7,
		"day": time.Date(2024, 5, 6, 9, 8, 9, 123e6, time.FixedZone("CEST", 2*3600)),
	}, {
		"objectId": "g2", "createdAt": "2024-01-01T00:00:00.000Z", "num": int64(8),
		"geo": parse.GeoPoint(1.5, -2.5), "ptr": parse.Pointer("_User", "u9"), "day": parse.Date(time.Date(2020, 2, 29, 0, 0, 0, 0, time.UTC)),
	}})
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Everything", Limit: -1, Order: order(t, s, "Everything", "objectId"),
		Where: where(t, s, "Everything", `{"objectId": {"$in": ["g1", "g2"]}}`)})
	equalRows(t, "Find(g1, g2)", rows, `[
	  {"objectId": "g1", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}, "num": 7,
	   "day": {"__type": "Date", "iso": "2024-05-06T07:08:09.123Z"}},
	  {"objectId": "g2", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}, "num": 8,
	   "geo": {"__type": "GeoPoint", "latitude": 1.5, "longitude": -2.5},
	   "ptr": {"__type": "Pointer", "className": "_User", "objectId": "u9"},
	   "day": {"__type": "Date", "iso": "2020-02-29T00:00:00.000Z"}}
	]`)
}

var objectIDShape = regexp.MustCompile(`^[A-Za-z0-9]{10}$`)

// testAssignedFields: objectId, createdAt and updatedAt are filled in when
// missing, and the objects passed in carry them afterwards.
func testAssignedFields(t *testing.T, s store.Store) {
	createEverything(t, s)
	before := time.Now().UTC().Truncate(time.Millisecond)
	objs := []parse.Object{{"num": 1.0}, {"num": 2.0}}
	mustCreate(t, s, "Everything", objs)
	after := time.Now().UTC()

	seen := map[string]bool{}
	for i, o := range objs {
		id, _ := o["objectId"].(string)
		if !objectIDShape.MatchString(id) {
			t.Errorf("object %d: assigned objectId %#v, want 10 letters/digits", i, o["objectId"])
		}
		if seen[id] {
			t.Errorf("object %d: objectId %q assigned twice", i, id)
		}
		seen[id] = true
		c, ok := o["createdAt"].(string)
		if !ok {
			t.Fatalf("object %d: assigned createdAt %#v, want a bare ISO string", i, o["createdAt"])
		}
		ct, err := time.Parse(parse.DateLayout, c)
		if err != nil {
			t.Errorf("object %d: createdAt %q is not in Parse's layout: %v", i, c, err)
		}
		if ct.Before(before) || ct.After(after) {
			t.Errorf("object %d: createdAt %s not between %s and %s", i, c, before, after)
		}
		if o["updatedAt"] != c {
			t.Errorf("object %d: updatedAt %#v, want createdAt %q", i, o["updatedAt"], c)
		}
	}
	// What was assigned is what is stored.
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Everything", Limit: -1, Order: order(t, s, "Everything", "num")})
	if len(rows) != 2 {
		t.Fatalf("Find returned %d rows, want 2", len(rows))
	}
	for i := range rows {
		want := map[string]any{"rel": map[string]any{"__type": "Relation", "className": "_Role"}}
		for k, v := range objs[i] {
			want[k] = v
		}
		equalJSON(t, "stored object", rows[i], pretty(want))
	}
}

// testExplicitFields: an explicit objectId, createdAt and updatedAt are kept;
// an updatedAt left out equals createdAt.
func testExplicitFields(t *testing.T, s store.Store) {
	createEverything(t, s)
	objs := decodeObjects(t, `[
	  {"objectId": "abcDEF0123", "num": 1, "createdAt": "2019-06-01T10:00:00.000Z", "updatedAt": "2020-06-01T10:00:00.000Z"},
	  {"objectId": "aVeryLongImportedObjectId0123456789", "num": 2, "createdAt": "2019-06-01T10:00:00.000Z"},
	  {"objectId": "Z", "num": 3}
	]`)
	mustCreate(t, s, "Everything", objs)
	rows := mustFind(t, s, &query.Query{ReadACL: query.NoACLFilter, Class: "Everything", Limit: -1, Order: order(t, s, "Everything", "num")})
	equalIDs(t, "ids", ids(rows), []string{"abcDEF0123", "aVeryLongImportedObjectId0123456789", "Z"})
	if len(rows) != 3 {
		t.Fatalf("Find returned %d rows, want 3", len(rows))
	}
	equalJSON(t, "row with both dates", rows[0], `{"objectId": "abcDEF0123", "num": 1, "createdAt": "2019-06-01T10:00:00.000Z", "updatedAt": "2020-06-01T10:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}}`)
	equalJSON(t, "row with createdAt only", rows[1], `{"objectId": "aVeryLongImportedObjectId0123456789", "num": 2, "createdAt": "2019-06-01T10:00:00.000Z", "updatedAt": "2019-06-01T10:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}}`)
	if objs[1]["updatedAt"] != "2019-06-01T10:00:00.000Z" {
		t.Errorf("the object passed in has updatedAt %#v, want its createdAt", objs[1]["updatedAt"])
	}
	if rows[2]["createdAt"] != objs[2]["createdAt"] || rows[2]["createdAt"] == nil {
		t.Errorf("row Z createdAt %#v, object passed in %#v", rows[2]["createdAt"], objs[2]["createdAt"])
	}
}

// testAtomicInvalidBatch: one invalid object in a batch inserts nothing and
// leaves the objects passed in as they were.
func testAtomicInvalidBatch(t *testing.T, s store.Store) {
	createEverything(t, s)
	objs := decodeObjects(t, `[
	  {"num": 1, "str": "first, valid"},
	  {"objectId": "b2", "num": 2},
	  {"objectId": "b3", "num": "three"}
	]`)
	err := s.Create(ctx, "Everything", objs)
	wantErr(t, "Create with an invalid third object", err, store.ErrInvalid)
	if n := count(t, s, "Everything"); n != 0 {
		t.Errorf("a refused batch inserted %d rows", n)
	}
	equalJSON(t, "objects passed in after a refused batch", objs, `[
	  {"num": 1, "str": "first, valid"},
	  {"objectId": "b2", "num": 2},
	  {"objectId": "b3", "num": "three"}
	]`)
	// The same objects, corrected, go in.
	objs[2]["num"] = 3.0
	mustCreate(t, s, "Everything", objs)
	if n := count(t, s, "Everything"); n != 3 {
		t.Errorf("Count = %d after the corrected batch, want 3", n)
	}
}

// testAtomicDuplicateID: a batch colliding with a stored objectId, or with
// itself, inserts nothing.
func testAtomicDuplicateID(t *testing.T, s store.Store) {
	createEverything(t, s)
	mustCreate(t, s, "Everything", decodeObjects(t, `[{"objectId": "dup", "num": 1, "createdAt": "2024-01-01T00:00:00.000Z"}]`))

	objs := decodeObjects(t, `[{"objectId": "new1", "num": 2}, {"objectId": "dup", "num": 3}]`)
	err := s.Create(ctx, "Everything", objs)
	wantErr(t, "Create with a stored objectId", err, store.ErrInvalid)
	equalJSON(t, "objects passed in after a refused batch", objs, `[{"objectId": "new1", "num": 2}, {"objectId": "dup", "num": 3}]`)

	err = s.Create(ctx, "Everything", decodeObjects(t, `[{"objectId": "twin", "num": 4}, {"objectId": "other", "num": 5}, {"objectId": "twin", "num": 6}]`))
	wantErr(t, "Create with the same objectId twice", err, store.ErrInvalid)

	equalRows(t, "rows after refused batches", all(t, s, "Everything"),
		`[{"objectId": "dup", "num": 1, "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "rel": {"__type": "Relation", "className": "_Role"}}]`)
}

// testObjectRejected: every kind of invalid object is refused with
// ErrInvalid and inserts nothing.
func testObjectRejected(t *testing.T, s store.Store) {
	createEverything(t, s)
	cases := []struct{ name, obj string }{
		{"unknown field", `{"num": 1, "nope": "x"}`},
		{"storage column as a field", `{"num": 1, "_rperm": ["*"]}`},
		{"relation field by value", `{"num": 1, "rel": {"__type": "Relation", "className": "_Role"}}`},
		{"missing required field", `{"str": "no num"}`},
		{"required field null", `{"num": null}`},
		{"string into Number", `{"num": "1"}`},
		{"number into String", `{"num": 1, "str": 5}`},
		{"string into Boolean", `{"num": 1, "flag": "true"}`},
		{"number into Boolean", `{"num": 1, "flag": 1}`},
		{"unparseable Date", `{"num": 1, "day": "yesterday"}`},
		{"Date object without iso", `{"num": 1, "day": {"__type": "Date"}}`},
		{"number into Date", `{"num": 1, "day": 1700000000}`},
		{"array into Object", `{"num": 1, "obj": [1, 2]}`},
		{"string into Object", `{"num": 1, "obj": "{}"}`},
		{"object into Array", `{"num": 1, "arr": {"0": "a"}}`},
		{"Pointer to the wrong class", `{"num": 1, "ptr": {"__type": "Pointer", "className": "_Role", "objectId": "r1"}}`},
		{"Pointer as a bare id", `{"num": 1, "ptr": "u1"}`},
		{"Pointer with a bad objectId", `{"num": 1, "ptr": {"__type": "Pointer", "className": "_User", "objectId": "not valid!"}}`},
		{"Pointer without objectId", `{"num": 1, "ptr": {"__type": "Pointer", "className": "_User"}}`},
		{"File without name", `{"num": 1, "file": {"__type": "File", "url": "https://x/y"}}`},
		{"File as a string", `{"num": 1, "file": "a.png"}`},
		{"GeoPoint latitude out of range", `{"num": 1, "geo": {"__type": "GeoPoint", "latitude": 91, "longitude": 0}}`},
		{"GeoPoint longitude out of range", `{"num": 1, "geo": {"__type": "GeoPoint", "latitude": 0, "longitude": -180.5}}`},
		{"GeoPoint as an array", `{"num": 1, "geo": [1, 2]}`},
		{"Polygon of two points", `{"num": 1, "poly": {"__type": "Polygon", "coordinates": [[0, 0], [1, 1]]}}`},
		{"Polygon with a bad point", `{"num": 1, "poly": {"__type": "Polygon", "coordinates": [[0, 0], [1, 1], [1]]}}`},
		{"Bytes not base64", `{"num": 1, "raw": {"__type": "Bytes", "base64": "not base64!"}}`},
		{"Bytes as a string", `{"num": 1, "raw": "aGk="}`},
		{"invalid objectId", `{"objectId": "bad id!", "num": 1}`},
		{"objectId not a string", `{"objectId": 12345, "num": 1}`},
		{"unparseable createdAt", `{"num": 1, "createdAt": "soon"}`},
		{"unparseable updatedAt", `{"num": 1, "updatedAt": 5}`},
		{"ACL not an object", `{"num": 1, "ACL": "public"}`},
		{"ACL entry not an object", `{"num": 1, "ACL": {"*": true}}`},
		{"ACL permission not a boolean", `{"num": 1, "ACL": {"*": {"read": "yes"}}}`},
		{"ACL unknown permission", `{"num": 1, "ACL": {"*": {"delete": true}}}`},
		{"ACL empty entry name", `{"num": 1, "ACL": {"": {"read": true}}}`},
	}
	for _, c := range cases {
		obj := decodeObject(t, c.obj)
		err := s.Create(ctx, "Everything", []parse.Object{obj})
		wantErr(t, "Create with "+c.name, err, store.ErrInvalid)
	}
	wantErr(t, "Create with a nil object", s.Create(ctx, "Everything", []parse.Object{nil}), store.ErrInvalid)
	if n := count(t, s, "Everything"); n != 0 {
		t.Errorf("refused objects inserted %d rows: %s", n, pretty(all(t, s, "Everything")))
	}
}

// testSystemClassRows: the system classes take rows like any other.
func testSystemClassRows(t *testing.T, s store.Store) {
	mustCreate(t, s, "_User", decodeObjects(t, `[
	  {"objectId": "u1", "createdAt": "2024-01-01T00:00:00.000Z", "username": "ada", "email": "ada@example.com", "emailVerified": true,
	   "authData": {"github": {"id": "42"}}, "ACL": {"*": {"read": true}, "u1": {"read": true, "write": true}}}
	]`))
	mustCreate(t, s, "_Session", decodeObjects(t, `[
	  {"objectId": "s1", "createdAt": "2024-01-01T00:00:00.000Z", "user": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
	   "sessionToken": "r:abc", "expiresAt": {"__type": "Date", "iso": "2025-01-01T00:00:00.000Z"}, "restricted": false}
	]`))
	equalRows(t, "_User rows", all(t, s, "_User"), `[
	  {"objectId": "u1", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z", "username": "ada",
	   "email": "ada@example.com", "emailVerified": true, "authData": {"github": {"id": "42"}},
	   "ACL": {"*": {"read": true}, "u1": {"read": true, "write": true}}}
	]`)
	equalRows(t, "_Session rows", all(t, s, "_Session"), `[
	  {"objectId": "s1", "createdAt": "2024-01-01T00:00:00.000Z", "updatedAt": "2024-01-01T00:00:00.000Z",
	   "user": {"__type": "Pointer", "className": "_User", "objectId": "u1"}, "sessionToken": "r:abc",
	   "expiresAt": {"__type": "Date", "iso": "2025-01-01T00:00:00.000Z"}, "restricted": false}
	]`)
}
