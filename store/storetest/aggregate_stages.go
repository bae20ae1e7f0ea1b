package storetest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// The stages that reshape rows wholesale or read sub-pipelines: $facet,
// $bucket, $bucketAuto, $replaceRoot/$replaceWith, $unionWith and
// $graphLookup. Expected rows are worked out by hand from MongoDB's
// documented behaviour (Parse Server's PostgreSQL adapter has none of
// these stages, so there is no Parse Server oracle for them), with this
// server's conventions (_id → objectId, nulls left out).

// The $graphLookup fixture, Emp (boss is a Pointer to Emp):
//
//	e1 ann  —        e2 ben  boss e1   e3 cat  boss e2   e4 dan  boss e3
//	e5 eve  boss e1 (ACL: u1 only)     e6 fay  boss e7   e7 gus  boss e6 (a cycle)
const aggEmpSchema = `{"className": "Emp", "fields": {
  "name": {"type": "String"}, "boss": {"type": "Pointer", "targetClass": "Emp"}, "n": {"type": "Number"}},
  "classLevelPermissions": {}}`

func loadEmpFixture(t *testing.T, s store.Store) {
	t.Helper()
	mustCreateClass(t, s, classFromJSON(t, aggEmpSchema))
	boss := func(id string) string { return `, "boss": ` + aggPtr("Emp", id) }
	mustCreate(t, s, "Emp", decodeObjects(t, `[
	  {"objectId": "e1", "createdAt": "2024-06-01T00:00:00.000Z", "name": "ann", "n": 1},
	  {"objectId": "e2", "createdAt": "2024-06-02T00:00:00.000Z", "name": "ben", "n": 2`+boss("e1")+`},
	  {"objectId": "e3", "createdAt": "2024-06-03T00:00:00.000Z", "name": "cat", "n": 3`+boss("e2")+`},
	  {"objectId": "e4", "createdAt": "2024-06-04T00:00:00.000Z", "name": "dan", "n": 4`+boss("e3")+`},
	  {"objectId": "e5", "createdAt": "2024-06-05T00:00:00.000Z", "name": "eve", "n": 5`+boss("e1")+`, "ACL": {"u1": {"read": true}}},
	  {"objectId": "e6", "createdAt": "2024-06-06T00:00:00.000Z", "name": "fay", "n": 6`+boss("e7")+`},
	  {"objectId": "e7", "createdAt": "2024-06-07T00:00:00.000Z", "name": "gus", "n": 7`+boss("e6")+`}
	]`))
}

// runPipeline parses pipeline on class (against the store's schemas) and
// runs it with the read ACL acl (nil: the master key).
func runPipeline(t *testing.T, s store.Store, class, pipeline string, acl []string) ([]parse.Object, error) {
	t.Helper()
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	p, err := query.ParsePipelineJSON(mustSchema(t, s, class), resolve, []byte(pipeline))
	if err != nil {
		return nil, fmt.Errorf("ParsePipelineJSON: %w", err)
	}
	return aggregateRows(s, p, acl)
}

func aggregateRows(s store.Store, p *query.Pipeline, acl []string) ([]parse.Object, error) {
	rows, err := s.Aggregate(ctx, p.Class, p, aclOf(acl))
	if err != nil {
		return nil, err
	}
	got := make([]parse.Object, len(rows))
	for i, r := range rows {
		got[i] = r
	}
	return got, nil
}

var stageCases = []struct {
	name     string
	class    string // "" = Task
	acl      []string
	pipeline string
	want     string
}{
	{"replaceRoot with a composite group key", "", nil,
		`[{"$match": {"status": {"$exists": true}}}, {"$group": {"_id": {"s": "$status", "d": "$done"}, "n": {"$sum": 1}}}, {"$replaceRoot": {"newRoot": "$_id"}}]`,
		`[{"s": "closed", "d": true}, {"s": "open", "d": false}, {"s": "review", "d": false}]`},
	{"replaceWith a looked-up object", "", nil,
		`[{"$match": {"objectId": "t1"}}, {"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "p"}},
		  {"$unwind": "$p"}, {"$replaceWith": "$p"}]`,
		`[` + aggP1 + `]`},
	{"replaceRoot drops rows without the object", "", nil,
		`[{"$match": {"objectId": {"$in": ["t1", "t7"]}}}, {"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "p"}},
		  {"$unwind": {"path": "$p", "preserveNullAndEmptyArrays": true}}, {"$replaceRoot": {"newRoot": "$p"}}, {"$project": {"name": 1}}]`,
		`[{"objectId": "p1", "name": "Apollo"}]`},
	{"replaceRoot with an object of expressions", "", nil,
		`[{"$match": {"priority": 3}}, {"$replaceRoot": {"newRoot": {"t": "$title", "y": {"$year": "$createdAt"}}}}]`,
		`[{"t": "delta", "y": 2024}, {"t": "golf", "y": 2024}]`},
	{"bucket with a default of another type", "", nil,
		`[{"$bucket": {"groupBy": "$points", "boundaries": [0, 5, 10], "default": "other",
		   "output": {"n": {"$sum": 1}, "titles": {"$push": "$title"}}}}]`,
		`[{"objectId": 0, "n": 3, "titles": ["alpha", "delta", "foxtrot"]}, {"objectId": 5, "n": 3, "titles": ["bravo", "charlie", "hotel"]},
		  {"objectId": "other", "n": 2, "titles": ["echo", "golf"]}]`},
	{"bucket by dates, default below the boundaries", "", nil,
		`[{"$bucket": {"groupBy": "$createdAt", "boundaries": [` + aggDate("2024-01-01T00:00:00.000Z") + `, ` + aggDate("2024-02-01T00:00:00.000Z") + `, ` +
			aggDate("2024-03-01T00:00:00.000Z") + `], "default": ` + aggDate("2023-01-01T00:00:00.000Z") + `}}]`,
		`[{"objectId": ` + aggDate("2023-01-01T00:00:00.000Z") + `, "count": 3}, {"objectId": ` + aggDate("2024-01-01T00:00:00.000Z") + `, "count": 3},
		  {"objectId": ` + aggDate("2024-02-01T00:00:00.000Z") + `, "count": 2}]`},
	{"bucket by strings inside an Object", "", nil,
		`[{"$bucket": {"groupBy": "$meta.area", "boundaries": ["a", "n", "z"], "default": null}}]`,
		`[{"objectId": null, "count": 1}, {"objectId": "a", "count": 2}, {"objectId": "n", "count": 5}]`},
	{"bucketAuto with nulls and equal values", "", nil,
		`[{"$bucketAuto": {"groupBy": "$points", "buckets": 3}}]`,
		`[{"objectId": {"min": null, "max": 3}, "count": 3}, {"objectId": {"min": 3, "max": 8}, "count": 3}, {"objectId": {"min": 8, "max": 13}, "count": 2}]`},
	{"bucketAuto accumulates in value order", "", nil,
		`[{"$bucketAuto": {"groupBy": "$title", "buckets": 2, "output": {"first": {"$first": "$title"}, "n": {"$sum": 1}}}}]`,
		`[{"objectId": {"min": "alpha", "max": "echo"}, "first": "alpha", "n": 4}, {"objectId": {"min": "echo", "max": "hotel"}, "first": "echo", "n": 4}]`},
	{"bucketAuto keeps equal values together", "", nil,
		`[{"$sort": {"priority": -1}}, {"$bucketAuto": {"groupBy": "$priority", "buckets": 2, "output": {"titles": {"$push": "$title"}}}}]`,
		`[{"objectId": {"min": 1, "max": 3}, "titles": ["alpha", "charlie", "foxtrot", "bravo", "echo", "hotel"]},
		  {"objectId": {"min": 3, "max": 3}, "titles": ["delta", "golf"]}]`},
	{"bucketAuto with more buckets than rows", "", nil,
		`[{"$match": {"priority": 3}}, {"$bucketAuto": {"groupBy": "$createdAt", "buckets": 5}}]`,
		`[{"objectId": {"min": ` + aggDate("2024-02-29T23:59:59.999Z") + `, "max": ` + aggDate("2024-03-10T18:45:00.000Z") + `}, "count": 1},
		  {"objectId": {"min": ` + aggDate("2024-03-10T18:45:00.000Z") + `, "max": ` + aggDate("2024-03-10T18:45:00.000Z") + `}, "count": 1}]`},
	{"bucketAuto on no rows", "", nil,
		`[{"$match": {"title": "none"}}, {"$bucketAuto": {"groupBy": "$points", "buckets": 2}}]`,
		`[]`},
	{"facet", "", nil,
		`[{"$match": {"done": true}}, {"$facet": {"byStatus": [{"$sortByCount": "$status"}], "total": [{"$count": "n"}],
		   "top": [{"$sort": {"points": -1}}, {"$limit": 1}, {"$project": {"title": 1, "createdAt": 1}}]}}]`,
		`[{"byStatus": [{"objectId": "closed", "count": 3}], "total": [{"n": 3}],
		   "top": [{"objectId": "t3", "title": "charlie", "createdAt": "2024-02-03T08:15:00.000Z"}]}]`},
	{"facet on no rows", "", nil,
		`[{"$match": {"title": "none"}}, {"$facet": {"c": [{"$count": "n"}], "rows": [{"$project": {"title": 1}}]}}]`,
		`[{"c": [], "rows": []}]`},
	{"facet, unwind, replaceRoot", "", nil,
		`[{"$facet": {"s": [{"$group": {"_id": "$priority", "n": {"$sum": 1}}}], "d": [{"$match": {"done": true}}, {"$project": {"due": 1}}]}},
		  {"$unwind": "$s"}, {"$replaceRoot": {"newRoot": "$s"}}]`,
		`[{"objectId": 1, "n": 3}, {"objectId": 2, "n": 3}, {"objectId": 3, "n": 2}]`},
	{"facet keeps dates and pointers", "", nil,
		`[{"$match": {"objectId": "t2"}}, {"$facet": {"x": [{"$project": {"due": 1, "owner": 1}}]}}]`,
		`[{"x": [{"objectId": "t2", "due": ` + aggDate("2024-03-05T00:00:00.000Z") + `, "owner": ` + aggPtr("_User", "u2") + `}]}]`},
	{"facet with the read ACL", "", aclPublic,
		`[{"$facet": {"n": [{"$count": "n"}]}}]`,
		`[{"n": [{"n": 6}]}]`},
	{"unionWith a pipeline", "", nil,
		`[{"$match": {"priority": 3}}, {"$project": {"title": 1}},
		  {"$unionWith": {"coll": "Project", "pipeline": [{"$match": {"budget": {"$gte": 100}}}, {"$project": {"title": "$name"}}]}}]`,
		`[{"objectId": "t4", "title": "delta"}, {"objectId": "t7", "title": "golf"}, {"objectId": "p1", "title": "Apollo"}, {"objectId": "p2", "title": "Borealis"}]`},
	{"unionWith a whole class, then sort", "", nil,
		`[{"$match": {"objectId": "t1"}}, {"$project": {"_id": 1}}, {"$unionWith": "_User"}, {"$sort": {"objectId": -1}}, {"$limit": 2}]`,
		`[{"objectId": "u3", "createdAt": "2023-06-03T00:00:00.000Z", "updatedAt": "2023-06-03T00:00:00.000Z", "username": "cy"},
		  {"objectId": "u2", "createdAt": "2023-06-02T00:00:00.000Z", "updatedAt": "2023-06-02T00:00:00.000Z", "username": "bob"}]`},
	{"unionWith under the read ACL", "", aclPublic,
		`[{"$match": {"objectId": "t1"}}, {"$project": {"_id": 1}}, {"$unionWith": {"coll": "Project", "pipeline": [{"$project": {"_id": 1}}]}}]`,
		`[{"objectId": "t1"}, {"objectId": "p1"}, {"objectId": "p2"}]`},
	{"unionWith, then group both sides", "", nil,
		`[{"$project": {"_id": 0, "k": "$status"}}, {"$unionWith": {"coll": "Project", "pipeline": [{"$project": {"_id": 0, "k": "$name"}}]}},
		  {"$group": {"_id": null, "n": {"$sum": 1}, "ks": {"$addToSet": "$k"}}}]`,
		`[{"objectId": null, "n": 11, "ks": ["Apollo", "Borealis", "Cobalt", "closed", "open", "review"]}]`},
	{"graphLookup up a chain", "Emp", nil,
		`[{"$match": {"name": "dan"}}, {"$graphLookup": {"from": "Emp", "startWith": "$boss", "connectFromField": "boss", "connectToField": "_id", "as": "chain", "depthField": "d"}},
		  {"$unwind": "$chain"}, {"$project": {"_id": 0, "n": "$chain.name", "d": "$chain.d"}}]`,
		`[{"n": "ann", "d": 2}, {"n": "ben", "d": 1}, {"n": "cat", "d": 0}]`},
	{"graphLookup maxDepth", "Emp", nil,
		`[{"$match": {"name": "dan"}}, {"$graphLookup": {"from": "Emp", "startWith": "$boss", "connectFromField": "boss", "connectToField": "_id", "as": "chain", "maxDepth": 1}},
		  {"$unwind": "$chain"}, {"$project": {"_id": 0, "n": "$chain.name"}}]`,
		`[{"n": "ben"}, {"n": "cat"}]`},
	{"graphLookup through a cycle", "Emp", nil,
		`[{"$match": {"name": "fay"}}, {"$graphLookup": {"from": "Emp", "startWith": "$boss", "connectFromField": "boss", "connectToField": "_id", "as": "c", "depthField": "d"}},
		  {"$unwind": "$c"}, {"$project": {"_id": 0, "n": "$c.name", "d": "$c.d"}}]`,
		`[{"n": "fay", "d": 1}, {"n": "gus", "d": 0}]`},
	{"graphLookup down, restricted", "Emp", nil,
		`[{"$match": {"name": {"$in": ["ann", "cat"]}}}, {"$graphLookup": {"from": "Emp", "startWith": "$_id", "connectFromField": "_id", "connectToField": "boss", "as": "r",
		   "restrictSearchWithMatch": {"name": {"$ne": "cat"}}}}, {"$project": {"name": 1, "r": 1}}, {"$unwind": {"path": "$r", "preserveNullAndEmptyArrays": true}},
		  {"$project": {"_id": 0, "name": 1, "under": "$r.name"}}]`,
		`[{"name": "ann", "under": "ben"}, {"name": "ann", "under": "eve"}, {"name": "cat", "under": "dan"}]`},
	{"graphLookup objects look like find rows", "Emp", nil,
		`[{"$match": {"name": "ben"}}, {"$graphLookup": {"from": "Emp", "startWith": "$boss", "connectFromField": "boss", "connectToField": "_id", "as": "up"}},
		  {"$project": {"_id": 0, "up": 1}}]`,
		`[{"up": [{"objectId": "e1", "createdAt": "2024-06-01T00:00:00.000Z", "updatedAt": "2024-06-01T00:00:00.000Z", "name": "ann", "n": 1}]}]`},
	{"graphLookup under the read ACL", "Emp", aclPublic,
		`[{"$match": {"name": "ann"}}, {"$graphLookup": {"from": "Emp", "startWith": "$_id", "connectFromField": "_id", "connectToField": "boss", "as": "r"}},
		  {"$unwind": "$r"}, {"$project": {"_id": 0, "under": "$r.name"}}]`,
		`[{"under": "ben"}, {"under": "cat"}, {"under": "dan"}]`},
	{"graphLookup by Numbers from a constant", "Emp", nil,
		`[{"$match": {"name": "ann"}}, {"$graphLookup": {"from": "Emp", "startWith": 3, "connectFromField": "n", "connectToField": "n", "as": "same", "maxDepth": 0}},
		  {"$project": {"_id": 0, "k": "$same"}}, {"$unwind": "$k"}, {"$project": {"name": "$k.name"}}]`,
		`[{"name": "cat"}]`},
}

func testAggregateStages(t *testing.T, s store.Store) {
	loadAggFixture(t, s)
	loadEmpFixture(t, s)
	for _, c := range stageCases {
		class := c.class
		if class == "" {
			class = "Task"
		}
		what := fmt.Sprintf("%s (%s, readACL %q)", c.name, class, c.acl)
		got, err := runPipeline(t, s, class, c.pipeline, c.acl)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			continue
		}
		equalRows(t, what, got, c.want)
	}
}

// testAggregateStageErrors: the bounds and the refusals, each naming where
// in the pipeline it is.
func testAggregateStageErrors(t *testing.T, s store.Store) {
	loadAggFixture(t, s)
	loadEmpFixture(t, s)
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	facets := make([]string, query.MaxFacets+1)
	for i := range facets {
		facets[i] = fmt.Sprintf(`"f%d": [{"$count": "n"}]`, i)
	}
	cases := []struct{ class, pipeline, path, msg string }{
		{"Task", `[{"$facet": {}}]`, "pipeline[0].$facet", "takes an object"},
		{"Task", `[{"$facet": {` + strings.Join(facets, ", ") + `}}]`, "pipeline[0].$facet", "at most 10"},
		{"Task", `[{"$facet": {"a": [{"$facet": {"b": [{"$count": "n"}]}}]}}]`, "pipeline[0].$facet.a[0].$facet", "cannot hold another $facet"},
		{"Task", `[{"$facet": {"a": []}}]`, "pipeline[0].$facet.a", "non-empty"},
		{"Task", `[{"$facet": {"a": [{"$group": {"_id": "$nope"}}]}}]`, "pipeline[0].$facet.a[0].$group._id", "is not a field of Task"},
		{"Task", `[{"$bucket": {"groupBy": "$points", "boundaries": [0, 5]}}]`, "pipeline[0].$bucket", "needs default"},
		{"Task", `[{"$bucket": {"groupBy": "$points", "boundaries": [5, 0], "default": -1}}]`, "pipeline[0].$bucket.boundaries[1]", "ascending"},
		{"Task", `[{"$bucket": {"groupBy": "$points", "boundaries": [0, "a"], "default": -1}}]`, "pipeline[0].$bucket.boundaries[1]", "one type"},
		{"Task", `[{"$bucket": {"groupBy": "$points", "boundaries": [0, 5], "default": 3}}]`, "pipeline[0].$bucket.default", "below the lowest"},
		{"Task", `[{"$bucket": {"groupBy": "$title", "boundaries": [0, 5], "default": -1}}]`, "pipeline[0].$bucket.groupBy", "default bucket"},
		{"Task", `[{"$bucketAuto": {"groupBy": "$points", "buckets": 101}}]`, "pipeline[0].$bucketAuto.buckets", "1 to 100"},
		{"Task", `[{"$bucketAuto": {"groupBy": "$points", "buckets": 2, "granularity": "R5"}}]`, "pipeline[0].$bucketAuto.granularity", "not supported"},
		{"Task", `[{"$replaceRoot": {"newRoot": "$meta"}}]`, "pipeline[0].$replaceRoot.newRoot", "not known here"},
		{"Task", `[{"$replaceWith": "$title"}]`, "pipeline[0].$replaceWith", "not known here"},
		{"Task", `[{"$unionWith": "Nope"}]`, "pipeline[0].$unionWith", "not found"},
		{"Task", `[{"$unionWith": {"coll": "Project", "pipeline": [{"$project": {"title": "$budget"}}]}}]`, "pipeline[0].$unionWith", "rename one side"},
		{"Task", `[{"$unionWith": {"coll": "Project", "pipeline": [{"$match": {"nope": 1}}]}}]`, "pipeline[0].$unionWith.pipeline[0].$match.nope", "is not a field of"},
		{"Emp", `[{"$graphLookup": {"from": "Emp", "startWith": "$boss", "connectFromField": "boss", "connectToField": "_id", "as": "c", "maxDepth": 11}}]`,
			"pipeline[0].$graphLookup.maxDepth", "0 to 10"},
		{"Emp", `[{"$graphLookup": {"from": "Emp", "startWith": "$boss", "connectFromField": "n", "connectToField": "_id", "as": "c"}}]`,
			"pipeline[0].$graphLookup.connectFromField", "connect"},
		{"Emp", `[{"$graphLookup": {"from": "Nope", "startWith": "$boss", "connectFromField": "boss", "connectToField": "_id", "as": "c"}}]`,
			"pipeline[0].$graphLookup.from", "not found"},
		{"Emp", `[{"$graphLookup": {"from": "Emp", "startWith": "$boss", "connectFromField": "boss", "connectToField": "_id", "as": "c",
		   "restrictSearchWithMatch": {"nope": 1}}}]`, "pipeline[0].$graphLookup.restrictSearchWithMatch.nope", "is not a field of"},
	}
	for _, c := range cases {
		_, err := query.ParsePipelineJSON(mustSchema(t, s, c.class), resolve, []byte(c.pipeline))
		var qe *query.Error
		if !errors.As(err, &qe) {
			t.Errorf("%s: got %v, want a *query.Error", c.pipeline, err)
			continue
		}
		if qe.Path != c.path || !strings.Contains(qe.Msg, c.msg) {
			t.Errorf("%s: got %q at %q, want %q at %q", c.pipeline, qe.Msg, qe.Path, c.msg, c.path)
		}
	}
	// A class the resolver does not know keeps the resolver's error.
	_, err := query.ParsePipelineJSON(mustSchema(t, s, "Task"), resolve, []byte(`[{"$unionWith": "Nope"}]`))
	wantErr(t, "unionWith of a missing class", err, store.ErrClassNotFound)
}

// testAggregateStageGovernance: the hooks the governed scope uses
// (Sources, Subqueries) reach the rows of every class a pipeline reads:
// a $unionWith's pipeline, a $graphLookup's class, a $lookup inside a
// $facet.
func testAggregateStageGovernance(t *testing.T, s store.Store) {
	loadAggFixture(t, s)
	loadEmpFixture(t, s)
	resolve := func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }
	parse := func(class, pipeline string) *query.Pipeline {
		t.Helper()
		p, err := query.ParsePipelineJSON(mustSchema(t, s, class), resolve, []byte(pipeline))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	run := func(what string, p *query.Pipeline, acl []string, want string) {
		t.Helper()
		got, err := aggregateRows(s, p, acl)
		if err != nil {
			t.Errorf("%s: %v", what, err)
			return
		}
		equalRows(t, what, got, want)
	}
	rules := map[string]string{
		"Task":    `{"priority": {"$gte": 3}}`,
		"Project": `{"budget": {"$lt": 200}}`,
		"_User":   `{"username": {"$ne": "ada"}}`,
		"Emp":     `{"name": {"$ne": "ben"}}`,
	}
	// govern does what the scope does: each source's rule Anded in.
	govern := func(p *query.Pipeline) (*query.Pipeline, []string) {
		p = p.WithFilter(nil)
		var classes []string
		for _, src := range p.Sources() {
			classes = append(classes, src.Class)
			r := where(t, s, src.Class, rules[src.Class])
			*src.Filter = query.AndOf(*src.Filter, r)
		}
		return p, classes
	}

	u, classes := govern(parse("Task", `[{"$project": {"_id": 1}}, {"$unionWith": {"coll": "Project", "pipeline": [{"$project": {"_id": 1}}]}}]`))
	if strings.Join(classes, ",") != "Task,Project" {
		t.Errorf("unionWith sources: %v", classes)
	}
	run("unionWith governed", u, nil, `[{"objectId": "t4"}, {"objectId": "t7"}, {"objectId": "p1"}, {"objectId": "p3"}]`)
	run("unionWith governed, read ACL", u, aclPublic, `[{"objectId": "t4"}, {"objectId": "p1"}]`)

	g, classes := govern(parse("Emp", `[{"$match": {"name": "ann"}}, {"$graphLookup": {"from": "Emp", "startWith": "$_id",
	  "connectFromField": "_id", "connectToField": "boss", "as": "r", "restrictSearchWithMatch": {"n": {"$lt": 5}}}}, {"$unwind": "$r"},
	  {"$project": {"_id": 0, "under": "$r.name"}}]`))
	if strings.Join(classes, ",") != "Emp,Emp" {
		t.Errorf("graphLookup sources: %v", classes)
	}
	// ben is filtered out, so cat and dan are out of reach; eve is n 5.
	run("graphLookup governed", g, nil, `[]`)
	g2, _ := govern(parse("Emp", `[{"$match": {"name": "ann"}}, {"$graphLookup": {"from": "Emp", "startWith": "$_id",
	  "connectFromField": "_id", "connectToField": "boss", "as": "r"}}, {"$unwind": "$r"}, {"$project": {"_id": 0, "under": "$r.name"}}]`))
	run("graphLookup governed (eve)", g2, nil, `[{"under": "eve"}]`)
	run("graphLookup governed, read ACL", g2, aclPublic, `[]`)

	f, classes := govern(parse("Task", `[{"$match": {"owner": {"$exists": true}}}, {"$facet": {"who": [
	  {"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}, {"$project": {"u": 1}}]}}]`))
	if strings.Join(classes, ",") != "Task,_User" {
		t.Errorf("facet sources: %v", classes)
	}
	run("facet lookup governed", f, nil, `[{"who": [{"objectId": "t4", "u": [`+aggU3+`]}, {"objectId": "t7", "u": []}]}]`)

	// Sub-queries inside sub-pipelines are handed out too: unset, their
	// read ACL admits no row.
	sq := parse("Task", `[{"$project": {"_id": 1, "owner": 1}}, {"$unionWith": {"coll": "Project", "pipeline": [
	  {"$match": {"lead": {"$inQuery": {"className": "_User", "where": {"username": "bob"}}}}}, {"$project": {"_id": 1}}]}},
	  {"$facet": {"ids": [{"$project": {"_id": 1}}],
	   "n": [{"$match": {"owner": {"$inQuery": {"className": "_User", "where": {"username": "cy"}}}}}, {"$count": "n"}]}}]`)
	// Unset, a sub-query's read ACL admits no row: first the master key.
	if err := sq.Subqueries(func(q *query.Query) error { q.ReadACL = query.NoACLFilter; return nil }); err != nil {
		t.Fatal(err)
	}
	run("sub-queries as the master key", sq, nil, `[{"ids": [{"objectId": "t1"}, {"objectId": "t2"}, {"objectId": "t3"}, {"objectId": "t4"},
	  {"objectId": "t5"}, {"objectId": "t6"}, {"objectId": "t7"}, {"objectId": "t8"}, {"objectId": "p2"}], "n": [{"n": 2}]}]`)
	n := 0
	if err := sq.Subqueries(func(q *query.Query) error {
		n++
		q.ReadACL = query.ACLEntries("*")
		return nil
	}); err != nil || n != 2 {
		t.Fatalf("Subqueries: %d sub-queries, %v", n, err)
	}
	// cy (u3) is readable by u3 only: the facet's sub-query finds nothing.
	run("sub-queries in sub-pipelines", sq, nil, `[{"ids": [{"objectId": "t1"}, {"objectId": "t2"}, {"objectId": "t3"}, {"objectId": "t4"},
	  {"objectId": "t5"}, {"objectId": "t6"}, {"objectId": "t7"}, {"objectId": "t8"}, {"objectId": "p2"}], "n": []}]`)
}
