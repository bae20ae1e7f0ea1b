package sqlcompile_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// fuzzSchemas are the classes the fuzzed where-constraints run against:
// Item has a field of every type; _User and Tag are reachable through its
// pointers and relations.
func fuzzSchemas() map[string]parse.Schema {
	item := parse.NewSchema("Item")
	for name, f := range map[string]parse.Field{
		"name":   {Type: parse.TypeString},
		"score":  {Type: parse.TypeNumber},
		"active": {Type: parse.TypeBoolean},
		"when":   {Type: parse.TypeDate},
		"meta":   {Type: parse.TypeObject},
		"tags":   {Type: parse.TypeArray},
		"owner":  {Type: parse.TypePointer, TargetClass: parse.ClassUser},
		"parent": {Type: parse.TypePointer, TargetClass: "Item"},
		"peers":  {Type: parse.TypeRelation, TargetClass: parse.ClassUser},
		"labels": {Type: parse.TypeRelation, TargetClass: "Tag"},
		"photo":  {Type: parse.TypeFile},
		"place":  {Type: parse.TypeGeoPoint},
		"area":   {Type: parse.TypePolygon},
		"raw":    {Type: parse.TypeBytes},
	} {
		item.Fields[name] = f
	}
	user := parse.NewSchema(parse.ClassUser)
	user.Fields["username"] = parse.Field{Type: parse.TypeString}
	user.Fields["age"] = parse.Field{Type: parse.TypeNumber}
	user.Fields["best"] = parse.Field{Type: parse.TypePointer, TargetClass: "Item"}
	tag := parse.NewSchema("Tag")
	tag.Fields["label"] = parse.Field{Type: parse.TypeString}
	return map[string]parse.Schema{"Item": item, parse.ClassUser: user, "Tag": tag}
}

// fuzzDialect is a minimal dialect: enough SQL shape to exercise every
// branch of the Builder, with "$n" placeholders the fuzz target counts.
type fuzzDialect struct{}

func (fuzzDialect) Param(n int) string       { return "$" + strconv.Itoa(n) }
func (fuzzDialect) Ident(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
func (fuzzDialect) JSONScalar(col string, sub []string, param func(any) string, _ any) string {
	return "json_extract(" + col + ", " + param("$."+strings.Join(sub, ".")) + ")"
}
func (fuzzDialect) ArrayAny(col string, cond func(elem string) string) string {
	return "EXISTS (SELECT 1 FROM json_each(" + col + ") WHERE " + cond("value") + ")"
}
func (fuzzDialect) ACLOverlap(col string, params []string) string {
	return "EXISTS (SELECT 1 FROM json_each(" + col + ") WHERE value IN (" + strings.Join(params, ", ") + "))"
}
func (fuzzDialect) Regex(expr, pattern string, _ query.RegexFlags, param func(any) string) string {
	return "regexp(" + param(pattern) + ", " + expr + ")"
}
func (fuzzDialect) ArrayElem(v any) (any, string)     { return v, "" }
func (fuzzDialect) NullsOrder(desc bool) string       { return "" }
func (fuzzDialect) Value(v any) any                   { return v }
func (fuzzDialect) GeoLat(col string) string          { return "lat(" + col + ")" }
func (fuzzDialect) GeoLng(col string) string          { return "lng(" + col + ")" }
func (fuzzDialect) Least(a, b string) string          { return "min(" + a + ", " + b + ")" }
func (fuzzDialect) CodePointOrder(expr string) string { return expr }
func (fuzzDialect) TextMatch(expr, lang, term string, param func(any) string) string {
	return "text_match(" + param(lang) + ", " + param(term) + ", " + expr + ")"
}
func (fuzzDialect) TextRank(expr, lang, term string, param func(any) string) string {
	return "text_rank(" + param(lang) + ", " + param(term) + ", " + expr + ")"
}
func (fuzzDialect) InPolygon(lat, lng, polygon string) string {
	return "in_polygon(" + lat + ", " + lng + ", " + polygon + ")"
}
func (fuzzDialect) PolygonArg(points [][2]float64) any { return points }

var _ sqlcompile.Dialect = fuzzDialect{}

var placeholderRE = regexp.MustCompile(`\$(\d+)`)

func fuzzResolve(class string) (parse.Schema, error) {
	if s, ok := fuzzSchemas()[class]; ok {
		return s, nil
	}
	return parse.Schema{}, fmt.Errorf("class %q was not found", class)
}

var whereSeeds = []string{
	// valid
	`{}`,
	`{"name": "a", "score": {"$gte": 1, "$lt": 10}}`,
	`{"active": true, "when": {"$lt": {"__type": "Date", "iso": "2025-01-01T00:00:00.000Z"}}}`,
	`{"when": {"$gte": "2024-01-31"}}`,
	`{"meta.plan": "pro", "meta.seats": {"$gt": 3}}`,
	`{"meta": {"plan": "pro"}}`,
	`{"tags": "red", "name": {"$in": ["a", "b", null]}}`,
	`{"tags": {"$all": ["red", 1, true]}, "score": {"$nin": [1, 2]}}`,
	`{"tags": {"$containedBy": ["a", "b"]}}`,
	`{"tags": ["a", "b"]}`,
	`{"tags": {"$ne": null}}`,
	`{"owner": "u1", "parent": {"__type": "Pointer", "className": "Item", "objectId": "i1"}}`,
	`{"owner": {"$in": ["u1", {"__type": "Pointer", "className": "_User", "objectId": "u2"}]}}`,
	`{"name": {"$regex": "^a.*b$", "$options": "ims"}}`,
	`{"$or": [{"name": "a"}, {"$and": [{"score": 1}, {"$nor": [{"active": false}]}]}]}`,
	`{"$or": [{}, {"name": {"$exists": false}}]}`,
	`{"photo": {"__type": "File", "name": "f.png"}, "raw": {"$exists": true}}`,
	`{"owner": {"$inQuery": {"className": "_User", "where": {"age": {"$gt": 18}}}}}`,
	`{"parent": {"$notInQuery": {"className": "Item", "where": {"owner": {"$inQuery": {"className": "_User", "where": {}}}}}}}`,
	`{"name": {"$select": {"query": {"className": "_User", "where": {"age": 3}}, "key": "username"}}}`,
	`{"name": {"$dontSelect": {"query": {"className": "Tag"}, "key": "label"}}}`,
	`{"$relatedTo": {"object": {"__type": "Pointer", "className": "_User", "objectId": "u1"}, "key": "best"}}`,
	`{"peers": {"__type": "Pointer", "className": "_User", "objectId": "u1"}}`,
	`{"labels": {"$in": [{"__type": "Pointer", "className": "Tag", "objectId": "t1"}]}, "peers": {"$nin": ["u2"]}}`,
	`{"place": {"$nearSphere": {"__type": "GeoPoint", "latitude": 40, "longitude": -74}, "$maxDistanceInKilometers": 10}}`,
	`{"place": {"$within": {"$box": [{"__type": "GeoPoint", "latitude": 0, "longitude": 0}, {"__type": "GeoPoint", "latitude": 1, "longitude": 1}]}}}`,
	`{"place": {"$geoWithin": {"$polygon": [[0, 0], [0, 1], [1, 1]]}}}`,
	`{"place": {"$geoWithin": {"$centerSphere": [[-74, 40], 0.1]}}}`,
	// invalid
	`{"nope": 1}`,
	`{"score": "ten"}`,
	`{"name": {"$bogus": 1}}`,
	`{"name": {"$regex": "("}}`,
	`{"$or": []}`,
	`{"$or": [1]}`,
	`{"$and": {"a": 1}}`,
	`{"tags": {"$gt": "a"}}`,
	`{"owner": {"$inQuery": {"className": "Nope", "where": {}}}}`,
	`{"owner": {"$inQuery": "x"}}`,
	`{"ACL": {"*": {"read": true}}}`,
	`{"peers.x": 1}`,
	`{"place": {"$nearSphere": [1, 2], "$maxDistance": -1}}`,
	`{"place": {"$within": {"$box": [1]}}}`,
	`{"when": {"$lt": {"__type": "Date"}}}`,
	`{"meta.bad key": 1}`,
	`{"score": {"$gt": null}}`,
	`{"$text": {"$search": "x"}}`,
	`{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"$or": [{"name": "x"}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}]}`,
	`[1, 2]`,
	`"{\"name\":\"a\"}"`,
	`{"name": `,
	``,
}

// FuzzParseWhere: parsing never panics, every refusal is a *query.Error
// (so tools report invalid_argument, never internal_error), and an
// accepted constraint compiles to the same SQL every time, with exactly one
// bind argument per placeholder.
func FuzzParseWhere(f *testing.F) {
	for _, s := range whereSeeds {
		f.Add([]byte(s))
	}
	schemas := fuzzSchemas()
	parser := query.Parser{Resolve: fuzzResolve}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		// The string form goes through ParseWhereJSON (no cross-class lookup).
		if _, err := query.ParseWhereJSON(schemas["Item"], string(data)); err != nil {
			var qe *query.Error
			if !errors.As(err, &qe) {
				t.Fatalf("ParseWhereJSON(%q): error %T %v is not a *query.Error", data, err, err)
			}
		}
		var where map[string]any
		if json.Unmarshal(data, &where) != nil {
			return
		}
		for _, class := range []string{"Item", parse.ClassUser} {
			e, err := parser.Where(schemas[class], where)
			if err != nil {
				var qe *query.Error
				if !errors.As(err, &qe) {
					t.Fatalf("%s %s: error %T %v is not a *query.Error", class, data, err, err)
				}
				continue
			}
			q := &query.Query{Class: class, Where: e, Limit: 10, ReadACL: query.ACLEntries("*", "u1", "role:Admin")}
			sql1, args := compile(q)
			sql2, _ := compile(q)
			if sql1 != sql2 {
				t.Fatalf("%s: SQL not deterministic:\n%s\n%s", data, sql1, sql2)
			}
			seen := make([]bool, len(args))
			for _, m := range placeholderRE.FindAllStringSubmatch(sql1, -1) {
				n, _ := strconv.Atoi(m[1])
				if n < 1 || n > len(args) {
					t.Fatalf("%s: placeholder $%d but %d arguments\n%s", data, n, len(args), sql1)
				}
				seen[n-1] = true
			}
			for i, s := range seen {
				if !s {
					t.Fatalf("%s: argument %d (%v) has no placeholder\n%s", data, i+1, args[i], sql1)
				}
			}
			_ = query.Subqueries(e, func(sq *query.Query) error {
				if _, ok := schemas[sq.Class]; !ok {
					t.Fatalf("%s: sub-query on unknown class %q", data, sq.Class)
				}
				return nil
			})
			_ = query.Near(e)
		}
	})
}

// compile renders q's predicate and order through the fuzz dialect.
func compile(q *query.Query) (string, []any) {
	b := &sqlcompile.Builder{D: fuzzDialect{}}
	w := b.Where(q)
	o := b.Order(q)
	return "WHERE " + w + " ORDER BY " + o, b.Args
}
