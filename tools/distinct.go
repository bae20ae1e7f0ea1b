package tools

import (
	"context"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// distinctName is the tool's name (its next_call names it too).
const distinctName = "distinct"

func distinctTool() *Tool {
	return &Tool{
		Name:        distinctName,
		Op:          parse.OpFind,
		Category:    CategoryAggregate,
		Title:       "Distinct values",
		Description: "Distinct values of a field (Array: elements).",
		Permission:  agent.Readonly,
		Timeout:     60 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[distinctArgs](map[string]*jsonschema.Schema{
			"where": whereRef,
			"sort":  enumSchema("", "asc", "asc", "desc"),
			"limit": intSchema("", 1, MaxDistinctLimit, DefaultDistinctLimit),
			"skip":  skipSchema,
		}),
		Handler: distinct,
	}
}

type distinctArgs struct {
	ClassName string `json:"class_name"`
	Field     string `json:"field"`
	Where     Where  `json:"where,omitempty"`
	Sort      string `json:"sort,omitempty" jsonschema:"asc (default) or desc"`
	Limit     *int   `json:"limit,omitempty"`
	Skip      int    `json:"skip,omitempty"`
	DryRun    bool   `json:"dry_run,omitempty"`
}

func distinct(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[distinctArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	sch := cls.Schema
	head, _, dotted := strings.Cut(args.Field, ".")
	f, ok := sch.Fields[head]
	if !ok && head != "" {
		return nil, query.DenyField(sch, head, "field", "")
	}
	if !ok || f.Type == parse.TypeRelation || f.Type == parse.TypeACL {
		return nil, argErr("field", "%q is not a field of %s", args.Field, sch.ClassName)
	}
	if dotted && f.Type != parse.TypeObject {
		return nil, argErr("field", "%q: dotted paths only reach into Object fields; %q is a %s", args.Field, head, f.Type)
	}
	if dotted {
		f = parse.Field{Type: parse.TypeObject} // a value inside an Object field: no pointers, no unwinding
	}
	limit, err := intArg("limit", args.Limit, DefaultDistinctLimit, 1, MaxDistinctLimit)
	if err != nil {
		return nil, err
	}
	dir := 1
	switch strings.ToLower(strings.TrimSpace(args.Sort)) {
	case "", "asc":
	case "desc":
		dir = -1
	default:
		return nil, argErr("sort", "must be asc or desc, got %q", args.Sort)
	}
	var stages []any
	if m, err := args.Where.object(); err != nil {
		return nil, err
	} else if len(m) > 0 {
		stages = append(stages, map[string]any{"$match": m})
	}
	if f.Type == parse.TypeArray {
		stages = append(stages, map[string]any{"$unwind": "$" + args.Field})
	}
	stages = append(stages,
		map[string]any{"$group": map[string]any{"_id": "$" + args.Field}},
		map[string]any{"$sort": map[string]any{"objectId": dir}})
	if args.Skip > 0 {
		stages = append(stages, map[string]any{"$skip": args.Skip})
	}
	stages = append(stages, map[string]any{"$limit": limit + 1})
	params := map[string]any{"field": args.Field, "sort": map[int]string{1: "asc", -1: "desc"}[dir], "limit": limit}
	if args.DryRun {
		if err := checkStages(ctx, c, cls, stages); err != nil {
			return nil, err
		}
		return dryRun(sch.ClassName, params, stages), nil
	}
	_, rows, err := runStages(ctx, c, cls, stages)
	if err != nil {
		return nil, err
	}
	values := make([]any, 0, len(rows))
	for _, r := range rows {
		v, present := r["objectId"]
		if !present || v == nil {
			continue // the missing-field group is not a value
		}
		if id, isID := v.(string); isID && f.Type == parse.TypePointer {
			v = parse.Pointer(f.TargetClass, id) // as Parse Server answers a distinct on a Pointer field
		}
		values = append(values, v)
	}
	res := &ValuesResult{ClassName: sch.ClassName, Field: args.Field}
	res.setRows(values, distinctName, groupNext(sch.ClassName, params, args.Where), limit, args.Skip)
	if f.Type == parse.TypePointer {
		res.PointerClass = f.TargetClass
	}
	return res, nil
}

// ValuesResult is the answer of distinct.
type ValuesResult struct {
	ClassName    string `json:"class_name"`
	Field        string `json:"field"`
	Count        int    `json:"count"`
	Values       []any  `json:"values"`
	PointerClass string `json:"pointer_class,omitempty"`
	Page
	all []any
}

// setRows sets the values read (up to limit+1: one more says more follow).
func (r *ValuesResult) setRows(rows []any, tool string, next map[string]any, limit, skip int) {
	r.all = r.Page.start(rows, tool, next, limit, skip)
	r.Values, r.Count = r.all, len(r.all)
}

func (r *ValuesResult) pageRows() int { return len(r.all) }

func (r *ValuesResult) keepRows(n int) {
	r.Values, r.Count = r.all[:n], n
	r.cut(n, len(r.all))
}
