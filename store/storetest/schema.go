package storetest

import (
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var schemaTests = []subtest{
	{"SystemClasses", testSystemClasses},
	{"EveryFieldTypeRoundTrip", testSchemaRoundTrip},
	{"DefaultFieldsAdded", testSchemaDefaultFields},
	{"ClassExists", testClassExists},
	{"Invalid", testSchemaInvalid},
	{"ClassNotFound", testClassNotFound},
	{"NoAliasing", testSchemaNoAliasing},
	{"IndexNamesPerClass", testIndexNamesPerClass},
}

func testSystemClasses(t *testing.T, s store.Store) {
	all, err := s.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sch := range all {
		names = append(names, sch.ClassName)
	}
	equalIDs(t, "classes of a fresh store", names, []string{"_Role", "_Session", "_User"})

	// Every field a system class must have, with its type (a backend may
	// carry more, as Parse Server's own _User does).
	want := map[string]map[string]parse.Field{
		"_User": {
			"objectId": {Type: "String"}, "createdAt": {Type: "Date"}, "updatedAt": {Type: "Date"}, "ACL": {Type: "ACL"},
			"username": {Type: "String"}, "email": {Type: "String"}, "emailVerified": {Type: "Boolean"}, "authData": {Type: "Object"},
		},
		"_Role": {
			"objectId": {Type: "String"}, "createdAt": {Type: "Date"}, "updatedAt": {Type: "Date"}, "ACL": {Type: "ACL"},
			"name":  {Type: "String"},
			"users": {Type: "Relation", TargetClass: "_User"},
			"roles": {Type: "Relation", TargetClass: "_Role"},
		},
		"_Session": {
			"objectId": {Type: "String"}, "createdAt": {Type: "Date"}, "updatedAt": {Type: "Date"}, "ACL": {Type: "ACL"},
			"user":         {Type: "Pointer", TargetClass: "_User"},
			"sessionToken": {Type: "String"}, "expiresAt": {Type: "Date"}, "createdWith": {Type: "Object"},
			"installationId": {Type: "String"}, "restricted": {Type: "Boolean"},
		},
	}
	for class, fields := range want {
		sch := mustSchema(t, s, class)
		if sch.ClassName != class {
			t.Errorf("Schema(%s).ClassName = %q", class, sch.ClassName)
		}
		for name, f := range fields {
			got, ok := sch.Fields[name]
			if !ok {
				t.Errorf("%s has no field %q", class, name)
				continue
			}
			if got.Type != f.Type || got.TargetClass != f.TargetClass {
				t.Errorf("%s.%s = %s→%q, want %s→%q", class, name, got.Type, got.TargetClass, f.Type, f.TargetClass)
			}
		}
	}
	// Sessions are master-key only: every CLP operation admits nobody.
	sess := mustSchema(t, s, "_Session")
	if p := sess.CLP.Find; p == nil || len(p.Entries) != 0 || p.RequiresAuthentication {
		t.Errorf("_Session find CLP = %s, want {}", pretty(p))
	}
}

// everythingSchema is a class with one field of every type, a CLP using
// every form and two indexes, in Parse's `_SCHEMA` JSON form.
const everythingSchema = `{
  "className": "Everything",
  "fields": {
    "str":  {"type": "String", "defaultValue": "hello"},
    "num":  {"type": "Number", "required": true},
    "flag": {"type": "Boolean"},
    "day":  {"type": "Date"},
    "obj":  {"type": "Object"},
    "arr":  {"type": "Array"},
    "ptr":  {"type": "Pointer", "targetClass": "_User"},
    "rel":  {"type": "Relation", "targetClass": "_Role"},
    "file": {"type": "File"},
    "geo":  {"type": "GeoPoint"},
    "poly": {"type": "Polygon"},
    "raw":  {"type": "Bytes"}
  },
  "classLevelPermissions": {
    "find":     {"*": true},
    "get":      {"requiresAuthentication": true},
    "create":   {"role:Admin": true, "u1": true},
    "update":   {"pointerFields": ["ptr"]},
    "delete":   {},
    "addField": {"role:Admin": true, "requiresAuthentication": true},
    "protectedFields": {"*": ["str", "raw"], "role:Admin": []},
    "readUserFields":  ["ptr"],
    "writeUserFields": ["ptr"]
  },
  "indexes": {
    "num_1":       {"num": 1},
    "num_-1_day_1": {"num": -1, "day": 1}
  }
}`

// everythingSchemaStored is everythingSchema as Schema reports it: the same,
// plus the four fields every class has.
const everythingSchemaStored = `{
  "className": "Everything",
  "fields": {
    "objectId":  {"type": "String"},
    "createdAt": {"type": "Date"},
    "updatedAt": {"type": "Date"},
    "ACL":       {"type": "ACL"},
    "str":  {"type": "String", "defaultValue": "hello"},
    "num":  {"type": "Number", "required": true},
    "flag": {"type": "Boolean"},
    "day":  {"type": "Date"},
    "obj":  {"type": "Object"},
    "arr":  {"type": "Array"},
    "ptr":  {"type": "Pointer", "targetClass": "_User"},
    "rel":  {"type": "Relation", "targetClass": "_Role"},
    "file": {"type": "File"},
    "geo":  {"type": "GeoPoint"},
    "poly": {"type": "Polygon"},
    "raw":  {"type": "Bytes"}
  },
  "classLevelPermissions": {
    "find":     {"*": true},
    "get":      {"requiresAuthentication": true},
    "create":   {"role:Admin": true, "u1": true},
    "update":   {"pointerFields": ["ptr"]},
    "delete":   {},
    "addField": {"role:Admin": true, "requiresAuthentication": true},
    "protectedFields": {"*": ["str", "raw"], "role:Admin": []},
    "readUserFields":  ["ptr"],
    "writeUserFields": ["ptr"]
  },
  "indexes": {
    "num_1":       {"num": 1},
    "num_-1_day_1": {"num": -1, "day": 1}
  }
}`

func testSchemaRoundTrip(t *testing.T, s store.Store) {
	in := classFromJSON(t, everythingSchema)
	mustCreateClass(t, s, in)

	got := mustSchema(t, s, "Everything")
	equalJSON(t, "Schema(Everything)", got, everythingSchemaStored)
	if got.Fields["num"].Required != true {
		t.Errorf("num.Required = false after round trip")
	}
	if p := got.CLP.Delete; p == nil || len(p.Entries) != 0 {
		t.Errorf("an empty CLP entry ({}: nobody) must stay non-nil and empty, got %s", pretty(p))
	}
	if got.CLP.Count != nil {
		t.Errorf("an absent CLP entry must stay absent (Parse Server reads it as master-key only), got %s", pretty(got.CLP.Count))
	}

	all, err := s.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, sch := range all {
		names = append(names, sch.ClassName)
		if sch.ClassName == "Everything" {
			equalJSON(t, "Schemas()[Everything]", sch, everythingSchemaStored)
		}
	}
	// Sorted by class name, byte order: upper case before '_'.
	equalIDs(t, "Schemas() order", names, []string{"Everything", "_Role", "_Session", "_User"})

	mustCreateClass(t, s, parse.Schema{ClassName: "aLower"})
	mustCreateClass(t, s, parse.Schema{ClassName: "Zed"})
	all, err = s.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names = names[:0]
	for _, sch := range all {
		names = append(names, sch.ClassName)
	}
	equalIDs(t, "Schemas() order", names, []string{"Everything", "Zed", "_Role", "_Session", "_User", "aLower"})

	// The class is usable at once: an empty class finds nothing.
	if n := count(t, s, "Everything"); n != 0 {
		t.Errorf("new class has %d rows", n)
	}
}

func testSchemaDefaultFields(t *testing.T, s store.Store) {
	// A schema with no fields at all, and one declaring a system field with
	// another type: the system fields are always the default ones.
	mustCreateClass(t, s, parse.Schema{ClassName: "Bare"})
	equalJSON(t, "Schema(Bare)", mustSchema(t, s, "Bare"), `{
	  "className": "Bare",
	  "fields": {"objectId": {"type": "String"}, "createdAt": {"type": "Date"}, "updatedAt": {"type": "Date"}, "ACL": {"type": "ACL"}},
	  "classLevelPermissions": {}
	}`)
	mustCreateClass(t, s, parse.Schema{ClassName: "Over", Fields: map[string]parse.Field{
		"objectId": {Type: parse.TypeNumber}, "title": {Type: parse.TypeString},
	}})
	equalJSON(t, "Schema(Over)", mustSchema(t, s, "Over"), `{
	  "className": "Over",
	  "fields": {"objectId": {"type": "String"}, "createdAt": {"type": "Date"}, "updatedAt": {"type": "Date"}, "ACL": {"type": "ACL"},
	             "title": {"type": "String"}},
	  "classLevelPermissions": {}
	}`)
}

func testClassExists(t *testing.T, s store.Store) {
	mustCreateClass(t, s, parse.Schema{ClassName: "Game", Fields: map[string]parse.Field{"title": {Type: parse.TypeString}}})
	err := s.CreateClass(ctx, parse.Schema{ClassName: "Game", Fields: map[string]parse.Field{"other": {Type: parse.TypeNumber}}})
	wantErr(t, "CreateClass(Game) twice", err, store.ErrClassExists)
	for _, sys := range []string{"_User", "_Role", "_Session"} {
		wantErr(t, "CreateClass("+sys+")", s.CreateClass(ctx, parse.NewSchema(sys)), store.ErrClassExists)
	}
	// The first definition is untouched.
	sch := mustSchema(t, s, "Game")
	if _, ok := sch.Fields["other"]; ok {
		t.Errorf("a refused CreateClass changed the schema: %s", pretty(sch.Fields))
	}
	if _, ok := sch.Fields["title"]; !ok {
		t.Errorf("a refused CreateClass lost field title")
	}
}

func testSchemaInvalid(t *testing.T, s store.Store) {
	cases := []struct {
		name string
		sch  parse.Schema
	}{
		{"empty class name", parse.Schema{ClassName: ""}},
		{"class name starting with a digit", parse.Schema{ClassName: "1Game"}},
		{"class name with a space", parse.Schema{ClassName: "My Game"}},
		{"class name with a dash", parse.Schema{ClassName: "My-Game"}},
		{"class name with a quote", parse.Schema{ClassName: `Game"; DROP TABLE "_User`}},
		{"unknown system class", parse.Schema{ClassName: "_Installation2"}},
		{"class name of 121 characters", parse.Schema{ClassName: "A" + strings.Repeat("b", 120)}},
		{"field name starting with a digit", parse.Schema{ClassName: "Bad1", Fields: map[string]parse.Field{"1st": {Type: parse.TypeString}}}},
		{"field name with a dash", parse.Schema{ClassName: "Bad2", Fields: map[string]parse.Field{"first-name": {Type: parse.TypeString}}}},
		{"field name starting with _", parse.Schema{ClassName: "Bad3", Fields: map[string]parse.Field{"_rperm": {Type: parse.TypeString}}}},
		{"empty field name", parse.Schema{ClassName: "Bad4", Fields: map[string]parse.Field{"": {Type: parse.TypeString}}}},
		{"field name with a dot", parse.Schema{ClassName: "Bad5", Fields: map[string]parse.Field{"a.b": {Type: parse.TypeString}}}},
		{"unknown type", parse.Schema{ClassName: "Bad6", Fields: map[string]parse.Field{"x": {Type: "Strin"}}}},
		{"lower-case type", parse.Schema{ClassName: "Bad7", Fields: map[string]parse.Field{"x": {Type: "string"}}}},
		{"empty type", parse.Schema{ClassName: "Bad8", Fields: map[string]parse.Field{"x": {}}}},
		{"user field of type ACL", parse.Schema{ClassName: "Bad9", Fields: map[string]parse.Field{"x": {Type: parse.TypeACL}}}},
		{"Pointer without targetClass", parse.Schema{ClassName: "Bad10", Fields: map[string]parse.Field{"x": {Type: parse.TypePointer}}}},
		{"Relation with a bad targetClass", parse.Schema{ClassName: "Bad11", Fields: map[string]parse.Field{"x": {Type: parse.TypeRelation, TargetClass: "no such"}}}},
		{"index on an unknown field", parse.Schema{ClassName: "Bad12", Fields: map[string]parse.Field{"x": {Type: parse.TypeString}},
			Indexes: map[string]map[string]int{"y_1": {"y": 1}}}},
	}
	for _, c := range cases {
		err := s.CreateClass(ctx, c.sch)
		wantErr(t, "CreateClass with "+c.name, err, store.ErrInvalid)
		if c.sch.ClassName != "" {
			if _, err := s.Schema(ctx, c.sch.ClassName); err == nil {
				t.Errorf("CreateClass with %s was refused but class %q exists", c.name, c.sch.ClassName)
			}
		}
	}
	all, err := s.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 3 {
		var names []string
		for _, sch := range all {
			names = append(names, sch.ClassName)
		}
		t.Errorf("refused classes left schemas behind: %q", names)
	}
}

func testClassNotFound(t *testing.T, s store.Store) {
	mustCreateClass(t, s, parse.Schema{ClassName: "Game"})
	_, err := s.Schema(ctx, "Nope")
	wantErr(t, "Schema(Nope)", err, store.ErrClassNotFound)
	_, err = s.Schema(ctx, "game") // class names are case-sensitive
	wantErr(t, "Schema(game)", err, store.ErrClassNotFound)
	_, err = s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Nope", Limit: -1})
	wantErr(t, "Find(Nope)", err, store.ErrClassNotFound)
	_, err = s.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Nope", Limit: -1})
	wantErr(t, "Count(Nope)", err, store.ErrClassNotFound)
	err = s.Create(ctx, "Nope", []parse.Object{{"a": "b"}})
	wantErr(t, "Create(Nope)", err, store.ErrClassNotFound)
	err = s.AddRelation(ctx, "Nope", "users", "r1", []string{"u1"})
	wantErr(t, "AddRelation(Nope)", err, store.ErrClassNotFound)
	_, err = s.RelatedIDs(ctx, "Nope", "users", "r1")
	wantErr(t, "RelatedIDs(Nope)", err, store.ErrClassNotFound)
}

// testSchemaNoAliasing: neither the schema passed to CreateClass nor the
// ones Schema/Schemas return share state with the store.
func testSchemaNoAliasing(t *testing.T, s store.Store) {
	in := classFromJSON(t, everythingSchema)
	mustCreateClass(t, s, in)
	equalJSON(t, "the schema passed to CreateClass", in, everythingSchema)

	got := mustSchema(t, s, "Everything")
	delete(got.Fields, "str")
	got.Fields["hacked"] = parse.Field{Type: parse.TypeString}
	got.CLP.Find.Entries["evil"] = true
	got.CLP.ProtectedFields["*"][0] = "nothing"
	got.Indexes["num_1"]["num"] = -1
	equalJSON(t, "Schema(Everything) after the caller changed an earlier result", mustSchema(t, s, "Everything"), everythingSchemaStored)

	list, err := s.Schemas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, sch := range list {
		for name := range sch.Fields {
			delete(sch.Fields, name)
		}
	}
	equalJSON(t, "Schema(Everything) after the caller changed Schemas()", mustSchema(t, s, "Everything"), everythingSchemaStored)
	if f := mustSchema(t, s, "_User").Fields; len(f) < 8 {
		t.Errorf("_User lost its fields after the caller changed Schemas(): %s", pretty(f))
	}
}

// testIndexNamesPerClass: index names belong to their class, as in Parse
// (MongoDB names them per collection: "name_1" is common to many classes).
func testIndexNamesPerClass(t *testing.T, s store.Store) {
	for _, class := range []string{"Movie", "Book", "Movie_x"} {
		mustCreateClass(t, s, classFromJSON(t, `{"className": "`+class+`", "fields": {"name": {"type": "String"}, "x_name": {"type": "String"}},
		  "classLevelPermissions": {}, "indexes": {"name_1": {"name": 1}, "x_name_1": {"x_name": 1}, "createdAt": {"createdAt": -1}}}`))
	}
	for _, class := range []string{"Movie", "Book", "Movie_x"} {
		equalJSON(t, class+" indexes", mustSchema(t, s, class).Indexes,
			`{"name_1": {"name": 1}, "x_name_1": {"x_name": 1}, "createdAt": {"createdAt": -1}}`)
	}
}
