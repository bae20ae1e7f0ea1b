package query_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

func plSchema() parse.Schema {
	s := parse.NewSchema("Item")
	for name, f := range map[string]parse.Field{
		"name":   {Type: parse.TypeString},
		"score":  {Type: parse.TypeNumber},
		"active": {Type: parse.TypeBoolean},
		"when":   {Type: parse.TypeDate},
		"tags":   {Type: parse.TypeArray},
		"meta":   {Type: parse.TypeObject},
		"owner":  {Type: parse.TypePointer, TargetClass: parse.ClassUser},
		"team":   {Type: parse.TypePointer, TargetClass: "Team"},
		"peers":  {Type: parse.TypeRelation, TargetClass: parse.ClassUser},
		"where":  {Type: parse.TypeGeoPoint},
		"photo":  {Type: parse.TypeFile},
		"raw":    {Type: parse.TypeBytes},
	} {
		s.Fields[name] = f
	}
	return s
}

var errNoClass = errors.New("no such class")

func plResolve(class string) (parse.Schema, error) {
	switch class {
	case parse.ClassUser:
		u := parse.NewSchema(parse.ClassUser)
		u.Fields["username"] = parse.Field{Type: parse.TypeString}
		return u, nil
	case "Team":
		t := parse.NewSchema("Team")
		t.Fields["name"] = parse.Field{Type: parse.TypeString}
		t.Fields["lead"] = parse.Field{Type: parse.TypePointer, TargetClass: parse.ClassUser}
		t.Fields["item"] = parse.Field{Type: parse.TypePointer, TargetClass: "Item"}
		t.Fields["items"] = parse.Field{Type: parse.TypeRelation, TargetClass: "Item"}
		return t, nil
	case "Item":
		return plSchema(), nil
	}
	return parse.Schema{}, fmt.Errorf("%w: %s", errNoClass, class)
}

func parsePL(t *testing.T, js string) (*query.Pipeline, error) {
	t.Helper()
	return query.ParsePipelineJSON(plSchema(), plResolve, []byte(js))
}

// TestParsePipelineRefusals: every refusal is a *query.Error naming the
// offending location exactly.
func TestParsePipelineRefusals(t *testing.T) {
	many := make([]string, 21)
	for i := range many {
		many[i] = `{"$limit": 1}`
	}
	cases := []struct{ pipeline, path, msg string }{
		// the pipeline and its stages
		{`{"$match": {}}`, "pipeline", "array of stages"},
		{`[{"$match": {}}`, "pipeline", "not valid JSON"},
		{`[` + strings.Join(many, ",") + `]`, "pipeline", "at most 20"},
		{`["$match"]`, "pipeline[0]", "exactly one stage operator"},
		{`[{"$match": {}, "$limit": 1}]`, "pipeline[0]", "exactly one"},
		{`[{}]`, "pipeline[0]", "exactly one"},
		{`[{"$out": "Copy"}]`, "pipeline[0].$out", "not supported"},
		{`[{"$merge": {"into": "Copy"}}]`, "pipeline[0].$merge", "not supported"},
		{`[{"$sample": {"size": 1}}]`, "pipeline[0].$sample", "not supported"},
		// $facet, $bucket, $bucketAuto, $replaceRoot, $unionWith, $graphLookup
		{`[{"$facet": {}}]`, "pipeline[0].$facet", "takes an object"},
		{`[{"$facet": {"a": [{"$out": "Copy"}]}}]`, "pipeline[0].$facet.a[0].$out", "not supported"},
		{`[{"$bucket": {}}]`, "pipeline[0].$bucket", "needs groupBy"},
		{`[{"$bucket": {"groupBy": "$score", "boundaries": [1], "default": 0}}]`, "pipeline[0].$bucket.boundaries", "at least 2"},
		{`[{"$bucketAuto": {"groupBy": "$meta", "buckets": 2}}]`, "pipeline[0].$bucketAuto.groupBy", "orders"},
		{`[{"$bucketAuto": {"groupBy": "$score", "buckets": 0}}]`, "pipeline[0].$bucketAuto.buckets", "1 to 100"},
		{`[{"$graphLookup": {}}]`, "pipeline[0].$graphLookup.from", "from"},
		{`[{"$graphLookup": {"from": "_User", "startWith": "$tags", "connectFromField": "_id", "connectToField": "_id", "as": "x"}}]`, "pipeline[0].$graphLookup.startWith", "$unwind it first"},
		{`[{"$unionWith": "Nope"}]`, "pipeline[0].$unionWith", "no such class"},
		{`[{"$unionWith": {"coll": "Team", "pipeline": {}}}]`, "pipeline[0].$unionWith.pipeline", "array of stages"},
		{`[{"$replaceRoot": {"newRoot": "$meta"}}]`, "pipeline[0].$replaceRoot.newRoot", "not known here"},
		{`[{"$replaceRoot": {"root": "$meta"}}]`, "pipeline[0].$replaceRoot", "newRoot"},
		{`[{"$limit": 1}, {"$frobnicate": 1}]`, "pipeline[1].$frobnicate", "unknown stage"},
		// $match
		{`[{"$match": "x"}]`, "pipeline[0].$match", "where-constraint"},
		{`[{"$match": {"nope": 1}}]`, "pipeline[0].$match.nope", "unknown field"},
		{`[{"$match": {"score": {"$gt": "x"}}}]`, "pipeline[0].$match.score.$gt", ""},
		{`[{"$match": {"$expr": {"$gt": ["$score", 1]}}}]`, "pipeline[0].$match.$expr", "unknown operator"},
		{`[{"$match": {"peers.x": "u1"}}]`, "pipeline[0].$match.peers.x", "Relation"},
		{`[{"$match": {"owner": {"$inQuery": {"className": "Nope", "where": {}}}}}]`, "pipeline[0].$match.owner.$inQuery.className", "no such class"},
		{`[{"$project": {"name": 1}}, {"$match": {"$relatedTo": {"object": {"__type": "Pointer", "className": "Team", "objectId": "m1"}, "key": "items"}}}]`,
			"pipeline[1].$match.$relatedTo", "reshapes"},
		{`[{"$group": {"_id": "$name"}}, {"$match": {"score": 1}}]`, "pipeline[1].$match.score", "unknown field"},
		{`[{"$unwind": "$tags"}, {"$match": {"tags": {"$gt": "a"}}}]`, "pipeline[1].$match.tags", "ordering"},
		// $group
		{`[{"$group": "x"}]`, "pipeline[0].$group", ""},
		{`[{"$group": {"n": {"$sum": 1}}}]`, "pipeline[0].$group", "_id"},
		{`[{"$group": {"_id": "$nope"}}]`, "pipeline[0].$group._id", "unknown field"},
		{`[{"$group": {"_id": "$peers"}}]`, "pipeline[0].$group._id", "Relation"},
		{`[{"$group": {"_id": "$owner.username"}}]`, "pipeline[0].$group._id", "$lookup"},
		{`[{"$group": {"_id": "$_p_name"}}]`, "pipeline[0].$group._id", "not a Pointer"},
		{`[{"$group": {"_id": "$$ROOT"}}]`, "pipeline[0].$group._id", "variables"},
		{`[{"$group": {"_id": {}}}]`, "pipeline[0].$group._id", "null"},
		{`[{"$group": {"_id": {"$year": "$when", "$month": "$when"}}}]`, "pipeline[0].$group._id", "exactly one operator"},
		{`[{"$group": {"_id": {"$concat": ["$name", "x"]}}}]`, "pipeline[0].$group._id.$concat", "not supported"},
		{`[{"$group": {"_id": {"$nope": "$name"}}}]`, "pipeline[0].$group._id.$nope", "unknown expression operator"},
		{`[{"$group": {"_id": {"y": {"$year": "$name"}}}}]`, "pipeline[0].$group._id.y.$year", "takes a Date"},
		{`[{"$group": {"_id": {"y": {"$year": {"date": "$when", "timezone": "Mars/Olympus"}}}}}]`, "pipeline[0].$group._id.y.$year.timezone", "unknown time zone"},
		{`[{"$group": {"_id": {"y": {"$year": {"date": "$when", "timezone": "+25:00"}}}}}]`, "pipeline[0].$group._id.y.$year.timezone", "unknown time zone"},
		{`[{"$group": {"_id": {"y": "$when", "$m": 1}}}]`, "pipeline[0].$group._id.$m", "mixed"},
		{`[{"$group": {"_id": null, "t": 1}}]`, "pipeline[0].$group.t", "accumulator"},
		{`[{"$group": {"_id": null, "t": {"$sum": "$name"}}}]`, "pipeline[0].$group.t.$sum", "Number"},
		{`[{"$group": {"_id": null, "t": {"$sum": "name"}}}]`, "pipeline[0].$group.t.$sum", "field reference"},
		{`[{"$group": {"_id": null, "t": {"$avg": 1}}}]`, "pipeline[0].$group.t.$avg", "field reference"},
		{`[{"$group": {"_id": null, "t": {"$min": "$tags"}}}]`, "pipeline[0].$group.t.$min", "String, Number"},
		{`[{"$group": {"_id": null, "t": {"$count": 1}}}]`, "pipeline[0].$group.t.$count", "empty object"},
		{`[{"$group": {"_id": null, "t": {"$stdDevPop": "$score"}}}]`, "pipeline[0].$group.t.$stdDevPop", "not supported"},
		{`[{"$group": {"_id": null, "t": {"$bogus": "$score"}}}]`, "pipeline[0].$group.t.$bogus", "unknown accumulator"},
		{`[{"$group": {"_id": null, "t": {"$sum": 1, "$avg": "$score"}}}]`, "pipeline[0].$group.t", "accumulator"},
		{`[{"$group": {"_id": null, "objectId": {"$sum": 1}}}]`, "pipeline[0].$group.objectId", "group key"},
		{`[{"$group": {"_id": null, "a.b": {"$sum": 1}}}]`, "pipeline[0].$group.a.b", "dotted"},
		{`[{"$group": {"_id": null, "Total": {"$sum": 1}, "total": {"$sum": 1}}}]`, "pipeline[0].$group", "case"},
		{`[{"$project": {"name": 1}}, {"$group": {"_id": "$score"}}]`, "pipeline[1].$group._id", "unknown field"},
		// $sort, $limit, $skip
		{`[{"$sort": {}}]`, "pipeline[0].$sort", ""},
		{`[{"$sort": {"score": 2}}]`, "pipeline[0].$sort.score", "1 or -1"},
		{`[{"$sort": {"score": {"$meta": "textScore"}}}]`, "pipeline[0].$sort.score", "1 or -1"},
		{`[{"$sort": {"tags": 1}}]`, "pipeline[0].$sort.tags", "cannot sort"},
		{`[{"$sort": {"nope": 1}}]`, "pipeline[0].$sort.nope", "unknown field"},
		{`[{"$group": {"_id": "$name"}}, {"$sort": {"score": 1}}]`, "pipeline[1].$sort.score", "unknown field"},
		{`[{"$limit": 0}]`, "pipeline[0].$limit", "integer"},
		{`[{"$limit": 1.5}]`, "pipeline[0].$limit", "integer"},
		{`[{"$limit": "10"}]`, "pipeline[0].$limit", "integer"},
		{`[{"$skip": -1}]`, "pipeline[0].$skip", "integer"},
		// $project, $addFields, $unset
		{`[{"$project": {}}]`, "pipeline[0].$project", "non-empty"},
		{`[{"$project": {"name": 1, "score": 0}}]`, "pipeline[0].$project.score", "mix"},
		{`[{"$project": {"nope": 1}}]`, "pipeline[0].$project.nope", "unknown field"},
		{`[{"$project": {"meta.plan": 1}}]`, "pipeline[0].$project.meta.plan", "dotted"},
		{`[{"$project": {"x": "name"}}]`, "pipeline[0].$project.x", "\"$name\""},
		{`[{"$project": {"x": 5}}]`, "pipeline[0].$project.x", "$literal"},
		{`[{"$project": {"_id": 1, "objectId": 1}}]`, "pipeline[0].$project.objectId", "twice"},
		{`[{"$project": {"x": "$meta.a b"}}]`, "pipeline[0].$project.x", "path segment"},
		{`[{"$addFields": {"x": "$$NOW"}}]`, "pipeline[0].$addFields.x", "variables"},
		{`[{"$addFields": {"x": {"a": 1}}}]`, "pipeline[0].$addFields.x", "$literal"},
		{`[{"$addFields": {"$x": 1}}]`, "pipeline[0].$addFields.$x", "cannot start with $"},
		{`[{"$addFields": {"x": {"$literal": {"__type": "Pointer", "className": "_User", "objectId": "u1"}}}}]`, "pipeline[0].$addFields.x.$literal", "Pointer constants"},
		{`[{"$unset": []}]`, "pipeline[0].$unset", "field name"},
		{`[{"$unset": ["name", "nope"]}]`, "pipeline[0].$unset[1]", "unknown field"},
		// $count, $unwind, $lookup, $sortByCount
		{`[{"$count": ""}]`, "pipeline[0].$count", "invalid field name"},
		{`[{"$count": "_id"}]`, "pipeline[0].$count", "cannot be named"},
		{`[{"$count": 1}]`, "pipeline[0].$count", "name"},
		{`[{"$unwind": "$name"}]`, "pipeline[0].$unwind", "Array"},
		{`[{"$unwind": "tags"}]`, "pipeline[0].$unwind", "field reference"},
		{`[{"$unwind": {"path": "$tags", "bogus": true}}]`, "pipeline[0].$unwind.bogus", "unknown option"},
		{`[{"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": "yes"}}]`, "pipeline[0].$unwind.preserveNullAndEmptyArrays", "true or false"},
		{`[{"$unwind": {"path": "$meta.list"}}]`, "pipeline[0].$unwind.path", "not supported"},
		{`[{"$lookup": {"from": "Nope", "localField": "owner", "foreignField": "_id", "as": "x"}}]`, "pipeline[0].$lookup.from", "no such class"},
		{`[{"$lookup": {"from": "bad name", "localField": "owner", "foreignField": "_id", "as": "x"}}]`, "pipeline[0].$lookup.from", "no such class"},
		{`[{"$lookup": {"from": "Team", "localField": "owner", "foreignField": "_id", "as": "x"}}]`, "pipeline[0].$lookup.localField", "points to _User"},
		{`[{"$lookup": {"from": "_User", "localField": "score", "foreignField": "_id", "as": "x"}}]`, "pipeline[0].$lookup.localField", "Pointer or an objectId"},
		{`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "username2", "as": "x"}}]`, "pipeline[0].$lookup.foreignField", "foreignField"},
		{`[{"$lookup": {"from": "Team", "localField": "owner", "foreignField": "item", "as": "x"}}]`, "pipeline[0].$lookup.foreignField", "points to Item"},
		{`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id"}}]`, "pipeline[0].$lookup.as", "as"},
		{`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "_id"}}]`, "pipeline[0].$lookup.as", "objectId"},
		{`[{"$lookup": {"from": "_User", "let": {}, "pipeline": [], "as": "x"}}]`, "pipeline[0].$lookup.let", "pipeline form"},
		{`[{"$sortByCount": "status"}]`, "pipeline[0].$sortByCount", "field reference"},
	}
	if len(cases) < 25 {
		t.Fatalf("only %d refusal cases", len(cases))
	}
	for _, c := range cases {
		p, err := parsePL(t, c.pipeline)
		if err == nil {
			t.Errorf("%s: accepted (%d stages)", c.pipeline, len(p.Stages))
			continue
		}
		var qe *query.Error
		if !errors.As(err, &qe) {
			t.Errorf("%s: error %T %v, want *query.Error", c.pipeline, err, err)
			continue
		}
		if qe.Path != c.path {
			t.Errorf("%s:\n Path %q\nwant %q (%v)", c.pipeline, qe.Path, c.path, err)
		}
		if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: message %q lacks %q", c.pipeline, err, c.msg)
		}
	}
}

// TestParsePipelineMaps: ParsePipeline takes stages as encoding/json
// decodes them; only a multi-key $sort needs the ordered form.
func TestParsePipelineMaps(t *testing.T) {
	var stages []any
	if err := json.Unmarshal([]byte(`[{"$match": {"active": true}}, {"$group": {"_id": "$owner", "n": {"$sum": 1}}}, {"$sort": {"n": -1}}]`), &stages); err != nil {
		t.Fatal(err)
	}
	p, err := query.ParsePipeline(plSchema(), plResolve, stages)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Stages) != 3 || p.Class != "Item" {
		t.Errorf("stages %d class %s", len(p.Stages), p.Class)
	}
	if err := json.Unmarshal([]byte(`[{"$sort": {"score": -1, "name": 1}}]`), &stages); err != nil {
		t.Fatal(err)
	}
	_, err = query.ParsePipeline(plSchema(), plResolve, stages)
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Path != "pipeline[0].$sort" || !strings.Contains(qe.Msg, "JSON text") {
		t.Errorf("multi-key $sort from a map: %v", err)
	}
	// The same from JSON text keeps the order.
	p, err = parsePL(t, `[{"$sort": {"score": -1, "name": 1}}]`)
	if err != nil {
		t.Fatal(err)
	}
	keys := p.Stages[0].(*query.SortStage).Keys
	if len(keys) != 2 || keys[0].Field != "score" || !keys[0].Desc || keys[1].Field != "name" || keys[1].Desc {
		t.Errorf("sort keys %+v", keys)
	}
	// An empty pipeline returns the class rows.
	if p, err := query.ParsePipeline(plSchema(), plResolve, nil); err != nil || len(p.Output) != len(p.Input) {
		t.Errorf("empty pipeline: %v", err)
	}
}

// TestPipelineOutput: the fields and types each stage leaves.
func TestPipelineOutput(t *testing.T) {
	cases := []struct {
		pipeline string
		want     string // name:Kind, in order
		limited  bool
	}{
		{`[{"$group": {"_id": "$owner", "n": {"$sum": 1}, "avg": {"$avg": "$score"}, "last": {"$last": "$owner"}, "names": {"$push": "$name"}}}]`,
			"objectId:String n:Number avg:Number last:String names:Array", false},
		{`[{"$group": {"_id": {"y": {"$year": "$when"}, "o": "$_p_owner"}, "first": {"$first": "$when"}}}]`,
			"objectId:Object first:Date", false},
		{`[{"$project": {"_id": 0, "name": 1, "o": "$owner", "y": {"$year": "$createdAt"}}}, {"$limit": 5}]`,
			"name:String o:Pointer y:Number", true},
		{`[{"$unwind": {"path": "$tags", "includeArrayIndex": "i"}}, {"$project": {"tags": 1, "i": 1}}]`,
			"objectId:String tags:JSON i:Number", false},
		{`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}, {"$unwind": "$u"},
		   {"$project": {"who": "$u.username", "at": "$u.createdAt"}}, {"$count": "n"}]`,
			"n:Number", true},
		{`[{"$addFields": {"name": 3, "extra": "$meta.plan"}}, {"$unset": ["where", "photo", "raw", "tags", "meta", "owner", "team", "createdAt", "updatedAt", "when", "active", "score"]}]`,
			"objectId:String name:Number extra:JSON", false},
		{`[{"$sortByCount": "$team"}]`, "objectId:String count:Number", false},
	}
	for _, c := range cases {
		p, err := parsePL(t, c.pipeline)
		if err != nil {
			t.Errorf("%s: %v", c.pipeline, err)
			continue
		}
		var got []string
		for _, f := range p.Output {
			got = append(got, f.Name+":"+string(f.Type.Kind))
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.pipeline, strings.Join(got, " "), c.want)
		}
		if p.HasLimit != c.limited {
			t.Errorf("%s: HasLimit %v", c.pipeline, p.HasLimit)
		}
	}
}

// TestLookupClassError: a $lookup.from the resolver refuses is a
// *query.Error that still wraps the resolver's error.
func TestLookupClassError(t *testing.T) {
	_, err := parsePL(t, `[{"$lookup": {"from": "Nope", "localField": "owner", "foreignField": "_id", "as": "x"}}]`)
	var qe *query.Error
	if !errors.As(err, &qe) || qe.Path != "pipeline[0].$lookup.from" {
		t.Errorf("got %v", err)
	}
	if !errors.Is(err, errNoClass) {
		t.Errorf("errors.Is(%v, errNoClass) = false", err)
	}
}

// TestCompilePipelineBindsValues: values never reach the SQL text.
func TestCompilePipelineBindsValues(t *testing.T) {
	p, err := parsePL(t, `[{"$match": {"name": "Robert'); DROP TABLE x;--"}},
	  {"$addFields": {"k": "it's"}}, {"$group": {"_id": {"kk": "$k"}, "s": {"$sum": 7.5}}}, {"$limit": 3}]`)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []query.PipelineDialect{sqlite.PipelineDialect(), postgres.PipelineDialect()} {
		sqlText, args := query.CompilePipeline(d, p, query.ACLEntries("*", "role:x'y"))
		for _, bad := range []string{"Robert", "it's", "x'y", "7.5", "kk"} {
			if strings.Contains(sqlText, bad) {
				t.Errorf("SQL contains %q: %s", bad, sqlText)
			}
		}
		if len(args) == 0 {
			t.Errorf("no bind arguments")
		}
	}
	// WithFilter adds a constraint on the class rows.
	e, err := query.ParseWhere(plSchema(), map[string]any{"score": 1.0})
	if err != nil {
		t.Fatal(err)
	}
	f := p.WithFilter(e)
	if f.Filter == nil || p.Filter != nil {
		t.Errorf("WithFilter: %v %v", f.Filter, p.Filter)
	}
	if g := f.WithFilter(e); g.Filter == nil {
		t.Errorf("WithFilter twice")
	}
}

// pipelineSeeds are valid and invalid pipelines for the fuzz target.
var pipelineSeeds = []string{
	`[]`,
	`[{"$match": {"name": "a", "score": {"$gte": 1}}}, {"$project": {"name": 1}}]`,
	`[{"$group": {"_id": "$name", "n": {"$sum": 1}, "a": {"$avg": "$score"}, "lo": {"$min": "$when"}, "hi": {"$max": "$active"}}}]`,
	`[{"$group": {"_id": {"y": {"$year": "$createdAt"}, "m": {"$month": "$createdAt"}, "w": {"$week": "$when"}}, "c": {"$count": {}}}}, {"$sort": {"_id.y": 1, "_id.m": -1}}]`,
	`[{"$group": {"_id": "$_p_owner", "f": {"$first": "$meta"}, "l": {"$last": "$tags"}, "p": {"$push": "$where"}, "s": {"$addToSet": "$photo"}}}, {"$match": {"_id": "u1"}}]`,
	`[{"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": true, "includeArrayIndex": "i"}}, {"$group": {"_id": "$tags", "n": {"$sum": "$i"}}}, {"$sort": {"_id": -1}}]`,
	`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}, {"$unwind": "$u"}, {"$match": {"u.username": {"$regex": "^a"}}}, {"$sort": {"u.createdAt": -1}}]`,
	`[{"$lookup": {"from": "Team", "localField": "_id", "foreignField": "item", "as": "t"}}, {"$unwind": "$t"}, {"$lookup": {"from": "_User", "localField": "t.lead", "foreignField": "_id", "as": "lead"}}]`,
	`[{"$addFields": {"k": "x", "n": 2, "b": false, "d": {"$literal": {"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}}, "o": {"$literal": {"a": [1]}}, "z": null}}, {"$sort": {"n": 1}}, {"$skip": 1}, {"$limit": 2}]`,
	`[{"$project": {"_id": 0, "x": "$meta.a.b", "ms": {"$millisecond": "$when"}, "iso": {"$isoWeek": {"date": "$when", "timezone": "UTC"}}}}, {"$match": {"x": "q"}}]`,
	`[{"$unset": "meta"}, {"$count": "n"}]`,
	`[{"$sortByCount": {"$dayOfWeek": "$when"}}]`,
	`[{"$group": {"_id": null, "s": {"$sum": 2.5}}}, {"$project": {"s": 1, "_id": 0}}]`,
	`[{"$facet": {}}]`,
	`[{"$facet": {"a": [{"$sortByCount": "$team"}], "b": [{"$match": {"score": {"$gt": 1}}}, {"$count": "n"}]}}, {"$unwind": "$a"}, {"$replaceRoot": {"newRoot": "$a"}}]`,
	`[{"$bucket": {"groupBy": "$score", "boundaries": [0, 10, 100], "default": "other", "output": {"n": {"$sum": 1}, "names": {"$push": "$name"}}}}]`,
	`[{"$bucketAuto": {"groupBy": "$name", "buckets": 3, "output": {"lo": {"$min": "$score"}}}}, {"$sort": {"lo": -1}}]`,
	`[{"$project": {"name": 1}}, {"$unionWith": {"coll": "Team", "pipeline": [{"$project": {"name": 1}}]}}, {"$sort": {"name": 1}}]`,
	`[{"$graphLookup": {"from": "_User", "startWith": "$owner", "connectFromField": "_id", "connectToField": "_id", "as": "u", "maxDepth": 2, "depthField": "d"}}, {"$unwind": "$u"}, {"$replaceWith": "$u"}]`,
	`[{"$replaceWith": {"n": "$name", "y": {"$year": "$when"}}}, {"$match": {"y": {"$gte": 2024}}}]`,
	`[{"$match": {"$or": [{"name": "a"}, {"_id": "x"}]}}, {"$group": {"_id": "$team", "t": {"$push": "$raw"}}}, {"$unwind": "$t"}]`,
	`[{"$group": {"_id": {"$year": "$name"}}}]`,
	`[{"$sort": {"score": 1, "name": -1}}, {"$match": {"score": {"$in": [1, 2]}}}]`,
	`{"not": "an array"}`,
	`[{"$group":{"_id":""}}]`,
	`[{"$group":{"_id":null}}, {"$match": {"_id": null}}, {"$limit": 1}]`,
	`[{"$match": {"$relatedTo": {"object": {"__type": "Pointer", "className": "Team", "objectId": "m1"}, "key": "items"}}}, {"$sort": {"score": -1}}, {"$match": {"team": {"$inQuery": {"className": "Team", "where": {"name": "core"}}}}}]`,
	`[{"$match": {"owner": {"$select": {"query": {"className": "Team", "where": {}}, "key": "lead"}}}}, {"$project": {"o": "$owner"}}, {"$match": {"o": {"$inQuery": {"className": "_User", "where": {"username": "ann"}}}}}]`,
	`[{"$lookup": {"from": "Team", "localField": "team", "foreignField": "objectId", "as": "team"}}, {"$unwind": "$team"}, {"$group": {"_id": "$team.name", "leads": {"$addToSet": "$team.lead"}}}]`,
}

// execStore is a SQLite store with the fuzz schema and a few rows, so
// the target also runs every pipeline it accepts.
func execStore(tb testing.TB) store.Store {
	ctx := context.Background()
	s, err := sqlite.Create(ctx, filepath.Join(tb.TempDir(), "fuzz.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	team, _ := plResolve("Team")
	for _, sch := range []parse.Schema{plSchema(), team} {
		if err := s.CreateClass(ctx, sch); err != nil {
			tb.Fatal(err)
		}
	}
	u, _ := plResolve(parse.ClassUser)
	_ = u
	var rows []parse.Object
	if err := json.Unmarshal([]byte(`[
	  {"objectId": "i1", "name": "a", "score": 1, "active": true, "when": {"__type": "Date", "iso": "2024-01-02T03:04:05.006Z"},
	   "tags": ["x", 1, true, null, {"k": "v"}, [2]], "meta": {"a": {"b": "q"}, "plan": "pro"},
	   "owner": {"__type": "Pointer", "className": "_User", "objectId": "u1"},
	   "team": {"__type": "Pointer", "className": "Team", "objectId": "m1"},
	   "where": {"__type": "GeoPoint", "latitude": 1, "longitude": 2}, "photo": {"__type": "File", "name": "p.png"},
	   "raw": {"__type": "Bytes", "base64": "aGk="}},
	  {"objectId": "i2", "name": "b", "score": 2.5, "tags": [], "meta": {"a": 1}, "ACL": {"u1": {"read": true}}},
	  {"objectId": "i3"}
	]`), &rows); err != nil {
		tb.Fatal(err)
	}
	if err := s.Create(ctx, "Item", rows); err != nil {
		tb.Fatal(err)
	}
	if err := s.Create(ctx, "Team", []parse.Object{{"objectId": "m1", "name": "core",
		"lead": map[string]any{"__type": "Pointer", "className": "_User", "objectId": "u1"},
		"item": map[string]any{"__type": "Pointer", "className": "Item", "objectId": "i1"}}}); err != nil {
		tb.Fatal(err)
	}
	if err := s.Create(ctx, parse.ClassUser, []parse.Object{{"objectId": "u1", "username": "ann"}}); err != nil {
		tb.Fatal(err)
	}
	return s
}

// checkPipeline parses raw; an accepted pipeline must compile for both
// dialects and run on SQLite.
func checkPipeline(t *testing.T, s store.Store, raw []byte) {
	p, err := query.ParsePipelineJSON(plSchema(), plResolve, raw)
	if err != nil {
		var qe *query.Error
		if !errors.As(err, &qe) {
			t.Fatalf("%s: error %T %v is not a *query.Error", raw, err, err)
		}
		if qe.Path == "" || !strings.HasPrefix(qe.Path, "pipeline") {
			t.Fatalf("%s: error path %q", raw, qe.Path)
		}
		return
	}
	query.CompilePipeline(postgres.PipelineDialect(), p, query.ACLEntries("*"))
	for _, acl := range []query.ACLFilter{query.NoACLFilter, query.ACLEntries("*", "u1")} {
		if _, err := s.Aggregate(context.Background(), "Item", p, acl); err != nil {
			t.Fatalf("%s: accepted, but running it failed: %v", raw, err)
		}
	}
}

func TestPipelineSeedsRun(t *testing.T) {
	s := execStore(t)
	for _, seed := range pipelineSeeds {
		checkPipeline(t, s, []byte(seed))
	}
}

func FuzzParsePipeline(f *testing.F) {
	for _, seed := range pipelineSeeds {
		f.Add([]byte(seed))
	}
	s := execStore(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 4096 {
			return
		}
		checkPipeline(t, s, raw)
	})
}
