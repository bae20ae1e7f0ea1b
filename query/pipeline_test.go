package query_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
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
		{`[{"$match": {"nope": 1}}]`, "pipeline[0].$match.nope", "is not a field of Item"},
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
		{`[{"$group": {"_id": "$nope"}}]`, "pipeline[0].$group._id", "is not a field of Item"},
		{`[{"$group": {"_id": "$peers"}}]`, "pipeline[0].$group._id", "Relation"},
		{`[{"$group": {"_id": "$owner.username"}}]`, "pipeline[0].$group._id", "$lookup"},
		{`[{"$group": {"_id": "$_p_name"}}]`, "pipeline[0].$group._id", `"$_p_name" is not a field of Item`},
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
		{`[{"$sort": {"nope": 1}}]`, "pipeline[0].$sort.nope", "is not a field of Item"},
		{`[{"$group": {"_id": "$name"}}, {"$sort": {"score": 1}}]`, "pipeline[1].$sort.score", "unknown field"},
		{`[{"$limit": 0}]`, "pipeline[0].$limit", "integer"},
		{`[{"$limit": 1.5}]`, "pipeline[0].$limit", "integer"},
		{`[{"$limit": "10"}]`, "pipeline[0].$limit", "integer"},
		{`[{"$skip": -1}]`, "pipeline[0].$skip", "integer"},
		// $project, $addFields, $unset
		{`[{"$project": {}}]`, "pipeline[0].$project", "non-empty"},
		{`[{"$project": {"name": 1, "score": 0}}]`, "pipeline[0].$project.score", "mix"},
		{`[{"$project": {"nope": 1}}]`, "pipeline[0].$project.nope", "is not a field of Item"},
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
		{`[{"$unset": ["name", "nope"]}]`, "pipeline[0].$unset[1]", "is not a field of Item"},
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
		{`[{"$group": {"_id": {"y": {"$year": "$when"}, "o": "$owner"}, "first": {"$first": "$when"}}}]`,
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

// TestPipelineWithFilter: WithFilter adds a constraint on the class rows
// of a copy.
func TestPipelineWithFilter(t *testing.T) {
	p, err := parsePL(t, `[{"$match": {"name": "a"}}, {"$limit": 3}]`)
	if err != nil {
		t.Fatal(err)
	}
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
	`[{"$group": {"_id": "$owner", "f": {"$first": "$meta"}, "l": {"$last": "$tags"}, "p": {"$push": "$where"}, "s": {"$addToSet": "$photo"}}}, {"$match": {"_id": "u1"}}]`,
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
	sqlcompile.CompilePipeline(postgres.PipelineDialect(), p, query.ACLEntries("*"))
	for _, acl := range []query.ACLFilter{query.NoACLFilter, query.ACLEntries("*", "u1")} {
		if _, err := s.Aggregate(context.Background(), "Item", p, acl); err != nil {
			t.Fatalf("%s: accepted, but running it failed: %v", raw, err)
		}
	}
}

// seedOutcome is what a seed of pipelineSeeds answers on execStore's rows.
type seedOutcome struct {
	// errPath: the seed is refused, with an error at this path.
	errPath string
	// all and public are the rows (JSON; createdAt and updatedAt left
	// out, null fields absent) without an ACL restriction and for the
	// public ("*": i2 is readable by u1 only), the pipeline's sub-queries
	// under the same ACL. YEAR and MONTH stand for the rows' creation
	// date. Compared in order when ordered, else as a multiset.
	all, public string
	ordered     bool
	// When all is "": the number of rows, and fields every row has (the
	// rows themselves depend on the order of ties).
	allN, publicN int
	each          string
}

// pipelineSeedOutcomes are worked out by hand from execStore's rows
// (MongoDB's semantics; dates: 2024-01-02 is a Tuesday in ISO week 1 and
// in week 0 of $week, which starts on the year's first Sunday).
var pipelineSeedOutcomes = map[string]seedOutcome{
	`[]`: {all: `[{"active":true,"meta":{"a":{"b":"q"},"plan":"pro"},"name":"a","objectId":"i1","owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"photo":{"__type":"File","name":"p.png"},"raw":{"__type":"Bytes","base64":"aGk="},"score":1,"tags":["x",1,true,null,{"k":"v"},[2]],"team":{"__type":"Pointer","className":"Team","objectId":"m1"},"when":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"where":{"__type":"GeoPoint","latitude":1,"longitude":2}},{"meta":{"a":1},"name":"b","objectId":"i2","score":2.5,"tags":[]},{"objectId":"i3"}]`,
		public: `[{"active":true,"meta":{"a":{"b":"q"},"plan":"pro"},"name":"a","objectId":"i1","owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"photo":{"__type":"File","name":"p.png"},"raw":{"__type":"Bytes","base64":"aGk="},"score":1,"tags":["x",1,true,null,{"k":"v"},[2]],"team":{"__type":"Pointer","className":"Team","objectId":"m1"},"when":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"where":{"__type":"GeoPoint","latitude":1,"longitude":2}},{"objectId":"i3"}]`},
	`[{"$match": {"name": "a", "score": {"$gte": 1}}}, {"$project": {"name": 1}}]`: {all: `[{"name":"a","objectId":"i1"}]`, public: `[{"name":"a","objectId":"i1"}]`},
	`[{"$group": {"_id": "$name", "n": {"$sum": 1}, "a": {"$avg": "$score"}, "lo": {"$min": "$when"}, "hi": {"$max": "$active"}}}]`: {
		all:    `[{"n":1,"objectId":null},{"a":1,"hi":true,"lo":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"n":1,"objectId":"a"},{"a":2.5,"n":1,"objectId":"b"}]`,
		public: `[{"n":1,"objectId":null},{"a":1,"hi":true,"lo":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"n":1,"objectId":"a"}]`},
	`[{"$group": {"_id": {"y": {"$year": "$createdAt"}, "m": {"$month": "$createdAt"}, "w": {"$week": "$when"}}, "c": {"$count": {}}}}, {"$sort": {"_id.y": 1, "_id.m": -1}}]`: {
		all:    `[{"c":2,"objectId":{"m":MONTH,"y":YEAR}},{"c":1,"objectId":{"m":MONTH,"w":0,"y":YEAR}}]`,
		public: `[{"c":1,"objectId":{"m":MONTH,"y":YEAR}},{"c":1,"objectId":{"m":MONTH,"w":0,"y":YEAR}}]`},
	`[{"$group": {"_id": "$owner", "f": {"$first": "$meta"}, "l": {"$last": "$tags"}, "p": {"$push": "$where"}, "s": {"$addToSet": "$photo"}}}, {"$match": {"_id": "u1"}}]`: {
		all:    `[{"f":{"a":{"b":"q"},"plan":"pro"},"l":["x",1,true,null,{"k":"v"},[2]],"objectId":"u1","p":[{"__type":"GeoPoint","latitude":1,"longitude":2}],"s":[{"__type":"File","name":"p.png"}]}]`,
		public: `[{"f":{"a":{"b":"q"},"plan":"pro"},"l":["x",1,true,null,{"k":"v"},[2]],"objectId":"u1","p":[{"__type":"GeoPoint","latitude":1,"longitude":2}],"s":[{"__type":"File","name":"p.png"}]}]`},
	// The array's null element and the rows without tags (i2's empty
	// array, i3's missing field) form two groups with _id null; MongoDB
	// makes them one ({"n":3}). Pinned as it is, to notice a change.
	`[{"$unwind": {"path": "$tags", "preserveNullAndEmptyArrays": true, "includeArrayIndex": "i"}}, {"$group": {"_id": "$tags", "n": {"$sum": "$i"}}}, {"$sort": {"_id": -1}}]`: {
		all:    `[{"n":2,"objectId":true},{"n":5,"objectId":[2]},{"n":4,"objectId":{"k":"v"}},{"n":0,"objectId":"x"},{"n":1,"objectId":1},{"n":3,"objectId":null},{"n":0,"objectId":null}]`,
		public: `[{"n":2,"objectId":true},{"n":5,"objectId":[2]},{"n":4,"objectId":{"k":"v"}},{"n":0,"objectId":"x"},{"n":1,"objectId":1},{"n":3,"objectId":null},{"n":0,"objectId":null}]`},
	`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}, {"$unwind": "$u"}, {"$match": {"u.username": {"$regex": "^a"}}}, {"$sort": {"u.createdAt": -1}}]`: {
		all:    `[{"active":true,"meta":{"a":{"b":"q"},"plan":"pro"},"name":"a","objectId":"i1","owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"photo":{"__type":"File","name":"p.png"},"raw":{"__type":"Bytes","base64":"aGk="},"score":1,"tags":["x",1,true,null,{"k":"v"},[2]],"team":{"__type":"Pointer","className":"Team","objectId":"m1"},"when":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"where":{"__type":"GeoPoint","latitude":1,"longitude":2},"u":{"objectId":"u1","username":"ann"}}]`,
		public: `[{"active":true,"meta":{"a":{"b":"q"},"plan":"pro"},"name":"a","objectId":"i1","owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"photo":{"__type":"File","name":"p.png"},"raw":{"__type":"Bytes","base64":"aGk="},"score":1,"tags":["x",1,true,null,{"k":"v"},[2]],"team":{"__type":"Pointer","className":"Team","objectId":"m1"},"when":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"where":{"__type":"GeoPoint","latitude":1,"longitude":2},"u":{"objectId":"u1","username":"ann"}}]`},
	`[{"$lookup": {"from": "Team", "localField": "_id", "foreignField": "item", "as": "t"}}, {"$unwind": "$t"}, {"$lookup": {"from": "_User", "localField": "t.lead", "foreignField": "_id", "as": "lead"}}]`: {
		all:    `[{"active":true,"meta":{"a":{"b":"q"},"plan":"pro"},"name":"a","objectId":"i1","owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"photo":{"__type":"File","name":"p.png"},"raw":{"__type":"Bytes","base64":"aGk="},"score":1,"tags":["x",1,true,null,{"k":"v"},[2]],"team":{"__type":"Pointer","className":"Team","objectId":"m1"},"when":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"where":{"__type":"GeoPoint","latitude":1,"longitude":2},"lead":[{"objectId":"u1","username":"ann"}],"t":{"item":{"__type":"Pointer","className":"Item","objectId":"i1"},"lead":{"__type":"Pointer","className":"_User","objectId":"u1"},"name":"core","objectId":"m1"}}]`,
		public: `[{"active":true,"meta":{"a":{"b":"q"},"plan":"pro"},"name":"a","objectId":"i1","owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"photo":{"__type":"File","name":"p.png"},"raw":{"__type":"Bytes","base64":"aGk="},"score":1,"tags":["x",1,true,null,{"k":"v"},[2]],"team":{"__type":"Pointer","className":"Team","objectId":"m1"},"when":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"where":{"__type":"GeoPoint","latitude":1,"longitude":2},"lead":[{"objectId":"u1","username":"ann"}],"t":{"item":{"__type":"Pointer","className":"Item","objectId":"i1"},"lead":{"__type":"Pointer","className":"_User","objectId":"u1"},"name":"core","objectId":"m1"}}]`},
	`[{"$addFields": {"k": "x", "n": 2, "b": false, "d": {"$literal": {"__type": "Date", "iso": "2024-01-01T00:00:00.000Z"}}, "o": {"$literal": {"a": [1]}}, "z": null}}, {"$sort": {"n": 1}}, {"$skip": 1}, {"$limit": 2}]`: {
		allN: 2, publicN: 1, each: `{"b":false,"d":{"__type":"Date","iso":"2024-01-01T00:00:00.000Z"},"k":"x","n":2,"o":{"a":[1]}}`},
	`[{"$project": {"_id": 0, "x": "$meta.a.b", "ms": {"$millisecond": "$when"}, "iso": {"$isoWeek": {"date": "$when", "timezone": "UTC"}}}}, {"$match": {"x": "q"}}]`: {
		all: `[{"iso":1,"ms":6,"x":"q"}]`, public: `[{"iso":1,"ms":6,"x":"q"}]`},
	`[{"$unset": "meta"}, {"$count": "n"}]`:                                             {all: `[{"n":3}]`, public: `[{"n":2}]`},
	`[{"$sortByCount": {"$dayOfWeek": "$when"}}]`:                                       {all: `[{"count":2,"objectId":null},{"count":1,"objectId":3}]`, public: `[{"count":1,"objectId":null},{"count":1,"objectId":3}]`},
	`[{"$group": {"_id": null, "s": {"$sum": 2.5}}}, {"$project": {"s": 1, "_id": 0}}]`: {all: `[{"s":7.5}]`, public: `[{"s":5}]`},
	`[{"$facet": {}}]`: {errPath: "pipeline[0].$facet"},
	`[{"$match": {"$or": [{"name": "a"}, {"_id": "x"}]}}, {"$group": {"_id": "$team", "t": {"$push": "$raw"}}}, {"$unwind": "$t"}]`: {
		all: `[{"objectId":"m1","t":{"__type":"Bytes","base64":"aGk="}}]`, public: `[{"objectId":"m1","t":{"__type":"Bytes","base64":"aGk="}}]`},
	`[{"$group": {"_id": {"$year": "$name"}}}]`:                                     {errPath: "pipeline[0].$group._id.$year"},
	`[{"$sort": {"score": 1, "name": -1}}, {"$match": {"score": {"$in": [1, 2]}}}]`: {all: `[{"active":true,"meta":{"a":{"b":"q"},"plan":"pro"},"name":"a","objectId":"i1","owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"photo":{"__type":"File","name":"p.png"},"raw":{"__type":"Bytes","base64":"aGk="},"score":1,"tags":["x",1,true,null,{"k":"v"},[2]],"team":{"__type":"Pointer","className":"Team","objectId":"m1"},"when":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"where":{"__type":"GeoPoint","latitude":1,"longitude":2}}]`, public: `[{"active":true,"meta":{"a":{"b":"q"},"plan":"pro"},"name":"a","objectId":"i1","owner":{"__type":"Pointer","className":"_User","objectId":"u1"},"photo":{"__type":"File","name":"p.png"},"raw":{"__type":"Bytes","base64":"aGk="},"score":1,"tags":["x",1,true,null,{"k":"v"},[2]],"team":{"__type":"Pointer","className":"Team","objectId":"m1"},"when":{"__type":"Date","iso":"2024-01-02T03:04:05.006Z"},"where":{"__type":"GeoPoint","latitude":1,"longitude":2}}]`},
	`{"not": "an array"}`:     {errPath: "pipeline"},
	`[{"$group":{"_id":""}}]`: {all: `[{"objectId":""}]`, public: `[{"objectId":""}]`},
	`[{"$group":{"_id":null}}, {"$match": {"_id": null}}, {"$limit": 1}]`: {all: `[{"objectId":null}]`, public: `[{"objectId":null}]`},
	// Team m1's items relation has no links.
	`[{"$match": {"$relatedTo": {"object": {"__type": "Pointer", "className": "Team", "objectId": "m1"}, "key": "items"}}}, {"$sort": {"score": -1}}, {"$match": {"team": {"$inQuery": {"className": "Team", "where": {"name": "core"}}}}}]`: {
		all: `[]`, public: `[]`},
	`[{"$match": {"owner": {"$select": {"query": {"className": "Team", "where": {}}, "key": "lead"}}}}, {"$project": {"o": "$owner"}}, {"$match": {"o": {"$inQuery": {"className": "_User", "where": {"username": "ann"}}}}}]`: {
		all: `[{"o":{"__type":"Pointer","className":"_User","objectId":"u1"},"objectId":"i1"}]`, public: `[{"o":{"__type":"Pointer","className":"_User","objectId":"u1"},"objectId":"i1"}]`},
	`[{"$lookup": {"from": "Team", "localField": "team", "foreignField": "objectId", "as": "team"}}, {"$unwind": "$team"}, {"$group": {"_id": "$team.name", "leads": {"$addToSet": "$team.lead"}}}]`: {
		all: `[{"leads":["u1"],"objectId":"core"}]`, public: `[{"leads":["u1"],"objectId":"core"}]`},
	`[{"$facet": {"a": [{"$sortByCount": "$team"}], "b": [{"$match": {"score": {"$gt": 1}}}, {"$count": "n"}]}}, {"$unwind": "$a"}, {"$replaceRoot": {"newRoot": "$a"}}]`: {
		all: `[{"count":2,"objectId":null},{"count":1,"objectId":"m1"}]`, public: `[{"count":1,"objectId":null},{"count":1,"objectId":"m1"}]`},
	// i3 has no score: the default bucket; $push skips its missing name.
	`[{"$bucket": {"groupBy": "$score", "boundaries": [0, 10, 100], "default": "other", "output": {"n": {"$sum": 1}, "names": {"$push": "$name"}}}}]`: {
		all: `[{"n":2,"names":["a","b"],"objectId":0},{"n":1,"names":[],"objectId":"other"}]`, public: `[{"n":1,"names":["a"],"objectId":0},{"n":1,"names":[],"objectId":"other"}]`},
	// Three values (null < "a" < "b") in three buckets; a bucket's max is
	// the next one's min, the last one's its own largest value.
	`[{"$bucketAuto": {"groupBy": "$name", "buckets": 3, "output": {"lo": {"$min": "$score"}}}}, {"$sort": {"lo": -1}}]`: {ordered: true,
		all:    `[{"lo":2.5,"objectId":{"max":"b","min":"b"}},{"lo":1,"objectId":{"max":"b","min":"a"}},{"objectId":{"max":"a","min":null}}]`,
		public: `[{"lo":1,"objectId":{"max":"a","min":"a"}},{"objectId":{"max":"a","min":null}}]`},
	`[{"$project": {"name": 1}}, {"$unionWith": {"coll": "Team", "pipeline": [{"$project": {"name": 1}}]}}, {"$sort": {"name": 1}}]`: {ordered: true,
		all:    `[{"objectId":"i3"},{"name":"a","objectId":"i1"},{"name":"b","objectId":"i2"},{"name":"core","objectId":"m1"}]`,
		public: `[{"objectId":"i3"},{"name":"a","objectId":"i1"},{"name":"core","objectId":"m1"}]`},
	`[{"$graphLookup": {"from": "_User", "startWith": "$owner", "connectFromField": "_id", "connectToField": "_id", "as": "u", "maxDepth": 2, "depthField": "d"}}, {"$unwind": "$u"}, {"$replaceWith": "$u"}]`: {
		all: `[{"d":0,"objectId":"u1","username":"ann"}]`, public: `[{"d":0,"objectId":"u1","username":"ann"}]`},
	`[{"$replaceWith": {"n": "$name", "y": {"$year": "$when"}}}, {"$match": {"y": {"$gte": 2024}}}]`: {all: `[{"n":"a","y":2024}]`, public: `[{"n":"a","y":2024}]`},
}

// Every seed answers what pipelineSeedOutcomes says, on SQLite, without
// an ACL restriction and for the public; a pipeline whose sub-queries are
// given no ACL (the zero value) matches no row through them.
func TestPipelineSeedsRun(t *testing.T) {
	s := execStore(t)
	ctx := context.Background()
	empty, err := query.ParsePipelineJSON(plSchema(), plResolve, []byte(`[]`))
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Aggregate(ctx, "Item", empty, query.NoACLFilter)
	if err != nil || len(all) == 0 {
		t.Fatalf("the rows: %v %v", all, err)
	}
	var created time.Time
	if b, _ := json.Marshal(all[0][parse.FieldCreatedAt]); json.Unmarshal(b, &created) != nil {
		t.Fatalf("createdAt %v", all[0][parse.FieldCreatedAt])
	}
	dates := strings.NewReplacer("YEAR", fmt.Sprint(created.UTC().Year()), "MONTH", fmt.Sprint(int(created.UTC().Month())))
	for _, seed := range pipelineSeeds {
		want, ok := pipelineSeedOutcomes[seed]
		if !ok {
			t.Errorf("%s: no expected outcome in pipelineSeedOutcomes", seed)
			continue
		}
		p, err := query.ParsePipelineJSON(plSchema(), plResolve, []byte(seed))
		if want.errPath != "" {
			var qe *query.Error
			if !errors.As(err, &qe) || qe.Path != want.errPath {
				t.Errorf("%s: error %v, want one at %s", seed, err, want.errPath)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", seed, err)
			continue
		}
		subs := 0
		_ = p.Subqueries(func(*query.Query) error { subs++; return nil })
		for _, run := range []struct {
			name     string
			acl      query.ACLFilter
			rows     string
			n        int
			unsetSub bool
		}{
			{"all", query.NoACLFilter, want.all, want.allN, false},
			{"public", query.ACLEntries("*"), want.public, want.publicN, false},
			{"sub-queries without an ACL", query.NoACLFilter, "[]", 0, true},
		} {
			if run.unsetSub && subs == 0 {
				continue
			}
			_ = p.Subqueries(func(q *query.Query) error {
				q.ReadACL = run.acl
				if run.unsetSub {
					q.ReadACL = query.ACLFilter{}
				}
				return nil
			})
			got, err := s.Aggregate(ctx, "Item", p, run.acl)
			if err != nil {
				t.Errorf("%s (%s): %v", seed, run.name, err)
				continue
			}
			gotRows := canonicalRows(t, got, want.ordered)
			if run.rows == "" {
				if len(gotRows) != run.n {
					t.Errorf("%s (%s): %d rows, want %d", seed, run.name, len(gotRows), run.n)
				}
				for _, r := range got {
					if !hasFields(t, r, want.each) {
						t.Errorf("%s (%s): row %v lacks %s", seed, run.name, r, want.each)
					}
				}
				continue
			}
			var wantRaw []map[string]any
			if err := json.Unmarshal([]byte(dates.Replace(run.rows)), &wantRaw); err != nil {
				t.Fatalf("%s: expected rows: %v", seed, err)
			}
			if wantRows := canonicalRows(t, wantRaw, want.ordered); !slices.Equal(gotRows, wantRows) {
				t.Errorf("%s (%s):\n got  %s\n want %s", seed, run.name, gotRows, wantRows)
			}
		}
	}
}

// canonicalRows is each row as JSON without createdAt and updatedAt (at
// any depth), sorted unless ordered.
func canonicalRows(t *testing.T, rows []map[string]any, ordered bool) []string {
	t.Helper()
	var strip func(v any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if k != parse.FieldCreatedAt && k != parse.FieldUpdatedAt {
					out[k] = strip(e)
				}
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = strip(e)
			}
			return out
		}
		return v
	}
	out := make([]string, len(rows))
	for i, r := range rows {
		// Through JSON first, so typed values compare as the wire shows them.
		var generic any
		b, err := json.Marshal(r)
		if err == nil {
			err = json.Unmarshal(b, &generic)
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ = json.Marshal(strip(generic))
		out[i] = string(b)
	}
	if !ordered {
		slices.Sort(out)
	}
	return out
}

// hasFields reports whether row has every field of the JSON object want,
// with the same value.
func hasFields(t *testing.T, row map[string]any, want string) bool {
	t.Helper()
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	got := canonicalRows(t, []map[string]any{row}, true)[0]
	var g map[string]any
	_ = json.Unmarshal([]byte(got), &g)
	for k, v := range w {
		if !reflect.DeepEqual(g[k], v) {
			return false
		}
	}
	return true
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
