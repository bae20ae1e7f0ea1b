package query_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

func testSchema() parse.Schema {
	s := parse.NewSchema("Item")
	for name, f := range map[string]parse.Field{
		"name":   {Type: parse.TypeString},
		"score":  {Type: parse.TypeNumber},
		"active": {Type: parse.TypeBoolean},
		"when":   {Type: parse.TypeDate},
		"tags":   {Type: parse.TypeArray},
		"meta":   {Type: parse.TypeObject},
		"owner":  {Type: parse.TypePointer, TargetClass: parse.ClassUser},
		"peers":  {Type: parse.TypeRelation, TargetClass: parse.ClassUser},
		"where":  {Type: parse.TypeGeoPoint},
		"photo":  {Type: parse.TypeFile},
		"raw":    {Type: parse.TypeBytes},
	} {
		s.Fields[name] = f
	}
	return s
}

func parseJSON(t *testing.T, js string) (query.Expr, error) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("bad test JSON %s: %v", js, err)
	}
	return query.ParseWhere(testSchema(), m)
}

// TestParseWhereRefusals: each refusal is a *query.Error whose Path names the
// offending location in the caller's where.
func TestParseWhereRefusals(t *testing.T) {
	deep := `{"name": "x"}`
	for i := 0; i <= query.MaxDepth+1; i++ {
		deep = `{"$or": [` + deep + `]}`
	}
	cases := []struct {
		where, path, msg string // msg: a substring of the message
	}{
		// unknown fields
		{`{"nope": 1}`, "where.nope", `unknown field "nope" on class Item`},
		{`{"nope.x": 1}`, "where.nope.x", `unknown field "nope"`},
		{`{"$or": [{"name": "a"}, {"nope": 1}]}`, "where.$or[1].nope", "unknown field"},
		{`{"$and": [{"$nor": [{"score": 1}, {"Name": "a"}]}]}`, "where.$and[0].$nor[1].Name", "unknown field"},

		// wrong value types
		{`{"score": "ten"}`, "where.score", "Number field"},
		{`{"score": true}`, "where.score", "cannot be compared with a boolean"},
		{`{"name": 5}`, "where.name", "cannot be compared with a number"},
		{`{"active": "yes"}`, "where.active", "Boolean field"},
		{`{"score": {"$gt": "ten"}}`, "where.score.$gt", "Number field"},
		{`{"score": {"$gte": 1, "$lt": "x"}}`, "where.score.$lt", ""},
		{`{"name": {"$in": ["a", "b", 3]}}`, "where.name.$in[2]", "a number"},
		{`{"name": {"$nin": "a"}}`, "where.name.$nin", "array of values"},
		{`{"when": {"$lt": "last tuesday"}}`, "where.when.$lt", "not an ISO-8601 date"},
		{`{"when": {"$lt": {"__type": "Date"}}}`, "where.when.$lt", "invalid Date value"},
		{`{"when": 1700000000}`, "where.when", "Date field"},
		{`{"owner": {"__type": "Pointer", "className": "Team", "objectId": "t1"}}`, "where.owner", "points to _User, not Team"},
		{`{"owner": "not an id!"}`, "where.owner", "not an objectId"},
		{`{"owner": 5}`, "where.owner", "Pointer field"},
		{`{"tags": {"a": 1}}`, "where.tags", "array elements compare as"},
		{`{"tags": {"$all": "red"}}`, "where.tags.$all", "takes an array"},
		{`{"tags": {"$all": ["red", {"x": 1}]}}`, "where.tags.$all[1]", "array elements"},
		{`{"tags": {"$gt": "a"}}`, "where.tags.$gt", "ordering comparisons"},
		{`{"meta.plan": [1]}`, "where.meta.plan", "inside Object fields"},
		{`{"meta.bad key": 1}`, "where.meta.bad key", "invalid path segment"},
		{`{"where": {"$gt": 1}}`, "where.where.$gt", "ordering comparisons do not apply to GeoPoint"},
		{`{"raw": "aGk="}`, "where.raw", "supports only $exists"},
		{`{"active": {"$lt": true}}`, "where.active.$lt", "ordering comparisons do not apply to Boolean"},
		{`{"score": {"$lt": null}}`, "where.score.$lt", "null"},
		{`{"score": {"$exists": "yes"}}`, "where.score.$exists", "true or false"},

		// fields that cannot be queried this way
		{`{"ACL": {"*": {"read": true}}}`, "where.ACL", "ACL field cannot be queried"},
		{`{"peers": "not an id!"}`, "where.peers", "expected a Pointer to _User"},
		{`{"peers": {"$regex": "u"}}`, "where.peers.$regex", "supports only $in, $nin and $all"},
		{`{"peers.name": "x"}`, "where.peers.name", "has no sub-fields"},
		{`{"owner.username": "ada"}`, "where.owner.username", "$inQuery"},
		{`{"score.x": 1}`, "where.score.x", "dotted paths only reach into Object fields"},

		// operators
		{`{"score": {"$foo": 1}}`, "where.score.$foo", "unknown operator $foo"},
		{`{"$foo": [{"name": "a"}]}`, "where.$foo", "unknown operator $foo"},
		{`{"owner": {"$inQuery": {"where": {}, "className": "_User"}}}`, "where.owner.$inQuery.className", "cross-class operators are not available here"},
		{`{"$relatedTo": {"object": {}, "key": "peers"}}`, "where.$relatedTo.object", "expected {\"__type\":\"Pointer\""},
		{`{"score": {"$geoIntersects": {}}}`, "where.score.$geoIntersects", "not supported by this server yet"},
		// $text (Parse Server's on PostgreSQL)
		{`{"score": {"$text": {"$search": {"$term": "x"}}}}`, "where.score.$text", "applies to String fields"},
		{`{"meta.plan": {"$text": {"$search": {"$term": "x"}}}}`, "where.meta.plan.$text", "applies to String fields"},
		{`{"name": {"$text": "x"}}`, "where.name.$text", `takes {"$search"`},
		{`{"name": {"$text": {"$search": "x"}}}`, "where.name.$text.$search", "takes an object"},
		{`{"name": {"$text": {"$search": {}}}}`, "where.name.$text.$search.$term", "is required"},
		{`{"name": {"$text": {"$search": {"$term": ""}}}}`, "where.name.$text.$search.$term", "non-empty string"},
		{`{"name": {"$text": {"$search": {"$term": 5}}}}`, "where.name.$text.$search.$term", "non-empty string"},
		{`{"name": {"$text": {"$search": {"$term": "slow load"}}}}`, "where.name.$text.$search.$term", "syntax error"},
		{`{"name": {"$text": {"$search": {"$term": "slow &"}}}}`, "where.name.$text.$search.$term", "syntax error"},
		{`{"name": {"$text": {"$search": {"$term": "x", "$language": "klingon"}}}}`, "where.name.$text.$search.$language", "unsupported $language"},
		{`{"name": {"$text": {"$search": {"$term": "x", "$language": 1}}}}`, "where.name.$text.$search.$language", "takes a string"},
		{`{"name": {"$text": {"$search": {"$term": "x", "$caseSensitive": true}}}}`, "where.name.$text.$search.$caseSensitive", "not supported"},
		{`{"name": {"$text": {"$search": {"$term": "x", "$caseSensitive": "no"}}}}`, "where.name.$text.$search.$caseSensitive", "true or false"},
		{`{"name": {"$text": {"$search": {"$term": "x", "$diacriticSensitive": false}}}}`, "where.name.$text.$search.$diacriticSensitive", "not supported"},
		{`{"name": {"$text": {"$search": {"$term": "x", "$fuzzy": 1}}}}`, "where.name.$text.$search.$fuzzy", "unknown $search option"},
		{`{"name": {"$text": {"$search": {"$term": "x"}, "$x": 1}}}`, "where.name.$text.$x", "unknown $text option"},
		{`{"name": {"$text": {"$search": {"$term": "` + strings.Repeat("a", 1001) + `"}}}}`, "where.name.$text.$search.$term", "longer than 1000"},
		{`{"tags": {"$containedBy": "a"}}`, "where.tags.$containedBy", "takes an array"},
		{`{"score": {"$containedBy": ["a"]}}`, "where.score.$containedBy", "applies to Array fields"},
		{`{"score": {"$nearSphere": {"__type": "GeoPoint", "latitude": 1, "longitude": 2}}}`, "where.score.$nearSphere", "applies to GeoPoint fields"},
		{`{"score": {"$gt": 1, "$bogus": 2}}`, "where.score.$bogus", "unknown operator"},
		{`{"$or": []}`, "where.$or", "non-empty array"},
		{`{"$or": {"name": "a"}}`, "where.$or", "non-empty array"},
		{`{"$and": [{"name": "a"}, 3]}`, "where.$and[1]", "expected a constraint object, got a number"},
		{deep, "where" + strings.Repeat(".$or[0]", query.MaxDepth+1), "nested deeper"},

		// $regex and $options
		{`{"name": {"$regex": "("}}`, "where.name.$regex", "invalid regular expression"},
		{`{"name": {"$regex": 5}}`, "where.name.$regex", "string pattern"},
		{`{"name": {"$regex": "a", "$options": "g"}}`, "where.name.$options", `unsupported regex option "g"`},
		{`{"name": {"$regex": "a", "$options": 1}}`, "where.name.$options", "string of regex flags"},
		{`{"name": {"$options": "i"}}`, "where.name.$options", "only valid with $regex"},
		{`{"score": {"$regex": "1"}}`, "where.score.$regex", "applies to String fields"},
		{`{"name": {"$regex": "` + strings.Repeat("a", 1001) + `"}}`, "where.name.$regex", "longer than 1000"},
	}
	for _, c := range cases {
		e, err := parseJSON(t, c.where)
		if err == nil {
			t.Errorf("%s: accepted as %#v", short(c.where), e)
			continue
		}
		var qe *query.Error
		if !errors.As(err, &qe) {
			t.Errorf("%s: error %T (%v), want *query.Error", short(c.where), err, err)
			continue
		}
		if qe.Path != c.path {
			t.Errorf("%s: Path %q, want %q (%v)", short(c.where), qe.Path, c.path, err)
		}
		if !strings.Contains(qe.Msg, c.msg) {
			t.Errorf("%s: message %q does not mention %q", short(c.where), qe.Msg, c.msg)
		}
		if got, want := err.Error(), qe.Path+": "+qe.Msg; got != want {
			t.Errorf("%s: Error() = %q, want %q", short(c.where), got, want)
		}
	}
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

func TestParseWhereJSON(t *testing.T) {
	s := testSchema()
	for _, raw := range []string{"", "  ", "{}"} {
		e, err := query.ParseWhereJSON(s, raw)
		if err != nil || e != nil {
			t.Errorf("ParseWhereJSON(%q) = %#v, %v; want nil, nil", raw, e, err)
		}
	}
	_, err := query.ParseWhereJSON(s, `{"name": `)
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Path != "where" {
		t.Errorf("ParseWhereJSON(bad JSON) = %v, want a *query.Error at where", err)
	}
	_, err = query.ParseWhereJSON(s, `["name"]`)
	if !errors.As(err, &qe) || qe.Path != "where" {
		t.Errorf("ParseWhereJSON(array) = %v, want a *query.Error at where", err)
	}
	e, err := query.ParseWhereJSON(s, `{"score": 5}`)
	want := query.Cmp{Path: query.Path{Field: "score", Type: parse.TypeNumber}, Op: query.OpEq, Value: 5.0}
	if err != nil || !reflect.DeepEqual(e, want) {
		t.Errorf("ParseWhereJSON(score 5) = %#v, %v; want %#v", e, err, want)
	}
}

// TestParseWhereValues: values reach the AST in their storage form.
func TestParseWhereValues(t *testing.T) {
	num := query.Path{Field: "score", Type: parse.TypeNumber}
	date := query.Path{Field: "when", Type: parse.TypeDate}
	ptr := query.Path{Field: "owner", Type: parse.TypePointer}
	cases := []struct {
		where string
		want  query.Expr
	}{
		{`{}`, nil},
		{`{"score": null}`, query.Cmp{Path: num, Op: query.OpEq, Value: nil}},
		{`{"when": {"$gte": "2024-01-01T02:00:00+02:00"}}`, query.Cmp{Path: date, Op: query.OpGte, Value: "2024-01-01T00:00:00.000Z"}},
		{`{"when": {"__type": "Date", "iso": "2024-03-20T08:30:00Z"}}`, query.Cmp{Path: date, Op: query.OpEq, Value: "2024-03-20T08:30:00.000Z"}},
		{`{"owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"}}`, query.Cmp{Path: ptr, Op: query.OpEq, Value: "u1"}},
		{`{"owner": {"$in": ["u1", null]}}`, query.In{Path: ptr, Values: []any{"u1", nil}}},
		{`{"score": {"$gt": 1, "$lt": 5}}`, query.And{Exprs: []query.Expr{
			query.Cmp{Path: num, Op: query.OpGt, Value: 1.0}, query.Cmp{Path: num, Op: query.OpLt, Value: 5.0}}}},
		{`{"meta.plan.tier": "pro"}`, query.Cmp{Path: query.Path{Field: "meta", Sub: []string{"plan", "tier"}, Type: parse.TypeObject}, Op: query.OpEq, Value: "pro"}},
		{`{"tags": "red"}`, query.Cmp{Path: query.Path{Field: "tags", Type: parse.TypeArray}, Op: query.OpEq, Value: "red", ArrayElem: true}},
		{`{"$or": [{}, {"score": 1}]}`, query.Or{Exprs: []query.Expr{query.And{}, query.Cmp{Path: num, Op: query.OpEq, Value: 1.0}}}},
	}
	for _, c := range cases {
		e, err := parseJSON(t, c.where)
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		if !reflect.DeepEqual(e, c.want) {
			t.Errorf("%s:\n got %#v\nwant %#v", c.where, e, c.want)
		}
	}
}

// TestParseWhereNullOnArray: {"tags": null} means "tags is missing", as for
// any other field type (MongoDB semantics), not an element comparison.
func TestParseWhereNullOnArray(t *testing.T) {
	e, err := parseJSON(t, `{"tags": null}`)
	want := query.Cmp{Path: query.Path{Field: "tags", Type: parse.TypeArray}, Op: query.OpEq, Value: nil}
	if err != nil || !reflect.DeepEqual(e, want) {
		t.Errorf(`{"tags": null} = %#v, %v; want %#v`, e, err, want)
	}
}

func TestParseOrderAndKeys(t *testing.T) {
	s := testSchema()
	keys, err := query.ParseOrder(s, " -score, name ,,createdAt")
	want := []query.OrderKey{{Field: "score", Desc: true}, {Field: "name"}, {Field: "createdAt"}}
	if err != nil || !reflect.DeepEqual(keys, want) {
		t.Errorf("ParseOrder = %#v, %v; want %#v", keys, err, want)
	}
	for _, bad := range []string{"nope", "-tags", "meta", "ACL", "peers", "where", "$nope", "-_p_owner"} {
		_, err := query.ParseOrder(s, bad)
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Path != "order" {
			t.Errorf("ParseOrder(%q) = %v, want a *query.Error at order", bad, err)
			continue
		}
		// Only a name the schema lacks is a field denial.
		if denied := bad == "nope" || bad == "-_p_owner"; denied != (qe.Denied != nil) {
			t.Errorf("ParseOrder(%q): Denied %+v", bad, qe.Denied)
		}
	}
	k, err := query.ParseKeys(s, []string{"name", " owner.username ", "meta.plan", ""})
	if err != nil || !reflect.DeepEqual(k, []string{"name", "owner.username", "meta.plan"}) {
		t.Errorf("ParseKeys = %q, %v", k, err)
	}
	if k, err := query.ParseKeys(s, nil); err != nil || k != nil {
		t.Errorf("ParseKeys(nil) = %q, %v; want nil (all fields)", k, err)
	}
	for _, bad := range []string{"nope", "name.first", "score.x", "$nope", "_p_owner"} {
		_, err := query.ParseKeys(s, []string{bad})
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Path != "keys" {
			t.Errorf("ParseKeys(%q) = %v, want a *query.Error at keys", bad, err)
			continue
		}
		if denied := bad == "nope" || bad == "_p_owner"; denied != (qe.Denied != nil) {
			t.Errorf("ParseKeys(%q): Denied %+v", bad, qe.Denied)
		}
	}
}

// TestParseWhereGoNumbers: a constraint built in Go code may hold any Go
// integer type, a float32 or a json.Number where JSON gives a float64;
// each becomes the float64 the JSON form parses to, wherever a number is
// taken.
func TestParseWhereGoNumbers(t *testing.T) {
	sch := testSchema()
	for _, n := range []any{
		int(3), int8(3), int16(3), int32(3), int64(3), uint(3), uint8(3), uint16(3), uint32(3), uint64(3), uintptr(3),
		float32(3), float64(3), json.Number("3"), json.Number("3.0"), json.Number("3e0"),
	} {
		for _, c := range []struct{ goWhere, jsWhere string }{
			{"", `{"score": 3}`},
			{"$gt", `{"score": {"$gt": 3}}`},
			{"$in", `{"score": {"$in": [3, 1]}}`},
			{"meta", `{"meta.seats": 3}`},
			{"meta $nin", `{"meta.seats": {"$nin": [3]}}`},
			{"tags", `{"tags": 3}`},
			{"tags $all", `{"tags": {"$all": [3]}}`},
			{"tags $containedBy", `{"tags": {"$containedBy": [3]}}`},
			{"near", `{"where": {"$nearSphere": {"__type": "GeoPoint", "latitude": 3, "longitude": 3}, "$maxDistance": 3}}`},
			{"box", `{"where": {"$within": {"$box": [[3, 3], [3, 3]]}}}`},
		} {
			var w map[string]any
			switch c.goWhere {
			case "":
				w = map[string]any{"score": n}
			case "$gt":
				w = map[string]any{"score": map[string]any{"$gt": n}}
			case "$in":
				w = map[string]any{"score": map[string]any{"$in": []any{n, 1.0}}}
			case "meta":
				w = map[string]any{"meta.seats": n}
			case "meta $nin":
				w = map[string]any{"meta.seats": map[string]any{"$nin": []any{n}}}
			case "tags":
				w = map[string]any{"tags": n}
			case "tags $all":
				w = map[string]any{"tags": map[string]any{"$all": []any{n}}}
			case "tags $containedBy":
				w = map[string]any{"tags": map[string]any{"$containedBy": []any{n}}}
			case "near":
				w = map[string]any{"where": map[string]any{"$nearSphere": map[string]any{"__type": "GeoPoint", "latitude": n, "longitude": n}, "$maxDistance": n}}
			case "box":
				w = map[string]any{"where": map[string]any{"$within": map[string]any{"$box": []any{[]any{n, n}, []any{n, n}}}}}
			}
			got, err := query.ParseWhere(sch, w)
			if err != nil {
				t.Errorf("%T %s: %v", n, c.goWhere, err)
				continue
			}
			want, err := parseJSON(t, c.jsWhere)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%T %s:\n got %#v\nwant %#v", n, c.goWhere, got, want)
			}
		}
	}
	// Negative and large integers that a float64 holds exactly.
	for _, n := range []any{int(-7), int64(-1 << 53), int64(1 << 53), int64(1 << 62), uint64(1 << 63), int8(-128)} {
		e, err := query.ParseWhere(sch, map[string]any{"score": n})
		if err != nil {
			t.Errorf("%T(%v): %v", n, n, err)
			continue
		}
		if v := e.(query.Cmp).Value; reflect.TypeOf(v) != reflect.TypeOf(0.0) {
			t.Errorf("%T(%v) became %T", n, n, v)
		}
	}
	// Numbers a float64 cannot hold as they are, and numbers where no
	// number belongs, are refused with the location.
	for _, c := range []struct {
		where     map[string]any
		path, msg string
	}{
		{map[string]any{"score": int64(1<<53 + 1)}, "where.score", "no exact float64"},
		{map[string]any{"score": uint64(1<<64 - 1)}, "where.score", "no exact float64"},
		{map[string]any{"score": map[string]any{"$in": []any{1, int64(-1<<53 - 1)}}}, "where.score.$in[1]", "no exact float64"},
		{map[string]any{"meta.seats": math.NaN()}, "where.meta.seats", "not a finite number"},
		{map[string]any{"score": math.Inf(1)}, "where.score", "not a finite number"},
		{map[string]any{"score": float32(math.Inf(-1))}, "where.score", "not a finite number"},
		{map[string]any{"tags": math.NaN()}, "where.tags", "not a finite number"},
		{map[string]any{"score": json.Number("x")}, "where.score", "not a number"},
		{map[string]any{"name": 1}, "where.name", "String field \"name\" cannot be compared with a number"},
		{map[string]any{"active": uint8(1)}, "where.active", "cannot be compared with a number"},
		{map[string]any{"where": map[string]any{"$nearSphere": []any{1, 2}, "$maxDistance": -1}}, "where.where.$maxDistance", "non-negative"},
	} {
		_, err := query.ParseWhere(sch, c.where)
		var qe *query.Error
		if !errors.As(err, &qe) || qe.Path != c.path || !strings.Contains(qe.Msg, c.msg) {
			t.Errorf("%#v: got %v, want %s: …%s…", c.where, err, c.path, c.msg)
		}
	}
}

// The x option (extended) drops whitespace and #-comments from the
// pattern, except escaped or in a character class.
func TestRegexExtended(t *testing.T) {
	sch := parse.NewSchema("T")
	sch.Fields["name"] = parse.Field{Type: parse.TypeString}
	for pat, want := range map[string]string{
		"a b  c":              "abc",
		"^Log  in # the page": "^Login",
		"a\\ b[ x]#c\nd":      "a\\ b[ x]d",
	} {
		e, err := query.ParseWhere(sch, map[string]any{"name": map[string]any{"$regex": pat, "$options": "xi"}})
		if err != nil {
			t.Fatalf("%q: %v", pat, err)
		}
		r := e.(query.Regex)
		if r.Pattern != want || !r.Flags.CaseInsensitive {
			t.Errorf("%q with x: pattern %q flags %+v, want %q case-insensitive", pat, r.Pattern, r.Flags, want)
		}
	}
}
