package query_test

import (
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Sources lists every class a pipeline reads, each with the caller's own
// constraints on its rows and the Filter a governed scope narrows them
// with: the pipeline's class, then each $lookup, $graphLookup and
// $unionWith, in $facet sub-pipelines too.
func ExamplePipeline_Sources() {
	schemas := map[string]parse.Schema{}
	for name, fields := range map[string]map[string]parse.Field{
		"Ticket":  {"title": {Type: parse.TypeString}, "project": {Type: parse.TypePointer, TargetClass: "Project"}},
		"Project": {"name": {Type: parse.TypeString}, "parent": {Type: parse.TypePointer, TargetClass: "Project"}},
	} {
		s := parse.NewSchema(name)
		s.Fields = fields
		schemas[name] = s
	}
	resolve := func(class string) (parse.Schema, error) {
		s, ok := schemas[class]
		if !ok {
			return parse.Schema{}, fmt.Errorf("no class %s", class)
		}
		return s, nil
	}
	p, err := query.ParsePipelineJSON(schemas["Ticket"], resolve, []byte(`[
	  {"$match": {"title": {"$exists": true}}},
	  {"$facet": {"withProject": [{"$lookup": {"from": "Project", "localField": "project", "foreignField": "_id", "as": "p"}}]}},
	  {"$unionWith": {"coll": "Project", "pipeline": [
	    {"$graphLookup": {"from": "Project", "startWith": "$parent", "connectFromField": "parent", "connectToField": "_id", "as": "up",
	      "restrictSearchWithMatch": {"name": {"$ne": "old"}}}}]}}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	p = p.WithFilter(nil) // the copy the scope constrains
	for _, src := range p.Sources() {
		fmt.Println(src.Class, src.Where != nil)
		*src.Filter = query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpNe, Value: "gone"}
	}
	// Output:
	// Ticket true
	// Project false
	// Project false
	// Project true
}
