package tools

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The search tools (text_search, autocomplete, faceted_search) are
// shapes of a find and of a pipeline whose where holds one more
// constraint: $text on a String field (text_search, faceted_search) or a
// prefix $regex (autocomplete). The scope governs them as it governs
// every read: hidden classes and fields, CLP, ACL, tenant and filters.

// searchArgs are the arguments the text searches share.
type searchArgs struct {
	ClassName string `json:"class_name"`
	Field     string `json:"field" jsonschema:"String field to search"`
	Term      string `json:"term" jsonschema:"words; & all, | any, 'a phrase', pre:* prefix"`
	Language  string `json:"language,omitempty"`
	Where     Where  `json:"where,omitempty"`
}

// searchInputs are the argument schemas the text searches share.
func searchInputs(extra map[string]*jsonschema.Schema) map[string]*jsonschema.Schema {
	m := map[string]*jsonschema.Schema{
		"where":    whereRef,
		"language": enumSchema("", query.DefaultTextLanguage, "english", "simple"),
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// textWhere is where with the $text constraint of a search ANDed in, as
// the caller could have written it for query_class.
func (a searchArgs) textWhere() (map[string]any, error) {
	if strings.TrimSpace(a.Field) == "" {
		return nil, argRequired("field")
	}
	if strings.TrimSpace(a.Term) == "" {
		return nil, argRequired("term")
	}
	search := map[string]any{"$term": a.Term}
	if a.Language != "" {
		search["$language"] = a.Language
	}
	return andWhere(a.Where, map[string]any{a.Field: map[string]any{"$text": map[string]any{"$search": search}}})
}

// andWhere is the caller's where with c ANDed in.
func andWhere(w Where, c map[string]any) (map[string]any, error) {
	m, err := w.object()
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return c, nil
	}
	return map[string]any{"$and": []any{c, m}}, nil
}

// searchFind reads a page of the rows a text search matches, best first
// (the rank, then objectId), each with its score: keys are the fields
// returned (nil: every field the agent sees but the class's large ones).
func searchFind(ctx context.Context, c *Call, cls *agent.Class, where map[string]any, keys StringList, limit, skip int) (rows []json.RawMessage, hasMore bool, err error) {
	expr, err := cls.Where(ctx, where)
	if err != nil {
		return nil, false, err
	}
	var top []string
	if keys != nil {
		if top, _, _, err = projection(cls.Schema, keys, nil); err != nil {
			return nil, false, err
		}
	} else if top, _ = largeFieldKeys(cls); top == nil {
		top = cls.Schema.FieldNames()
	}
	q := &query.Query{Class: cls.Name(), Where: expr, Order: []query.OrderKey{{Field: query.ScoreKey, Desc: true}},
		Limit: limit + 1, Skip: skip, Keys: append(top, query.ScoreKey)}
	if err := guardFullScan(ctx, c, cls, q); err != nil {
		return nil, false, err
	}
	if rows, err = cls.FindJSON(ctx, q); err != nil {
		return nil, false, err
	}
	rows, hasMore = pageOf(rows, limit)
	return rows, hasMore, nil
}

// topField is the schema entry of a top-level field named by argument
// arg: a field the agent cannot see is denied as anywhere else, and a
// dotted path (into an Object field) is refused as an argument error.
func topField(sch parse.Schema, name, arg string) (parse.Field, error) {
	head, _, dotted := strings.Cut(name, ".")
	f, ok := sch.Fields[head]
	switch {
	case !ok:
		return f, query.DenyField(sch, head, arg, "")
	case dotted:
		return f, argErr(arg, "%q is a path into %s; name a top-level field", name, head)
	}
	return f, nil
}

// facetCounts counts the rows matching where per value of field, most
// frequent first (ties by value), at most limit values: an Array field
// counts each element.
func facetCounts(ctx context.Context, c *Call, cls *agent.Class, where map[string]any, field string, limit int) ([]any, error) {
	sch := cls.Schema
	f, err := topField(sch, field, "facets")
	if err != nil {
		return nil, err
	}
	switch f.Type {
	case parse.TypeString, parse.TypeNumber, parse.TypeBoolean, parse.TypePointer, parse.TypeArray:
	default:
		return nil, argErr("facets", "%q is a %s field; facets count String, Number, Boolean, Pointer or Array fields", field, f.Type)
	}
	stages := []any{map[string]any{"$match": where}}
	if f.Type == parse.TypeArray {
		stages = append(stages, map[string]any{"$unwind": "$" + field})
	}
	stages = append(stages,
		map[string]any{"$group": map[string]any{"_id": "$" + field, "count": map[string]any{"$sum": 1}}},
		map[string]any{"$sort": orderedSort{{"count", -1}, {"objectId", 1}}},
		map[string]any{"$limit": limit})
	_, rows, err := runStages(ctx, c, cls, stages)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, map[string]any{"value": r["objectId"], "count": r["count"]})
	}
	return out, nil
}
