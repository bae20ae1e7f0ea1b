package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// groupByName is the tool's name (its next_call names it too).
const groupByName = "group_by"

func groupByTool() *Tool {
	return &Tool{
		Name:        groupByName,
		Op:          parse.OpFind,
		Category:    CategoryAggregate,
		Title:       "Group by a field",
		Description: "Aggregate per value of a field.",
		Permission:  agent.Readonly,
		Timeout:     60 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[groupByArgs](groupInputs(map[string]*jsonschema.Schema{
			"flatten_arrays": {Type: "boolean", Default: mustJSON(false), Description: "by Array element"},
		}, "value_desc", DefaultGroupLimit, MaxGroupLimit)),
		Handler: groupBy,
	}
}

type groupByArgs struct {
	groupCommon
	FlattenArrays bool `json:"flatten_arrays,omitempty" jsonschema:"for an Array field, group by each element, counting it once per row (default false: the whole array is the key)"`
}

func groupBy(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[groupByArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, f, stages, acc, sort, err := groupSetup(ctx, c, args.groupCommon, "value_desc")
	if err != nil {
		return nil, err
	}
	sch := cls.Schema
	limit, err := intArg("limit", args.Limit, DefaultGroupLimit, 1, MaxGroupLimit)
	if err != nil {
		return nil, err
	}
	group := map[string]any{"_id": "$" + args.Field, "value": acc}
	order := sortStage(sort, "objectId")
	switch {
	case f.Type == parse.TypeArray && args.FlattenArrays:
		stages = append(stages, map[string]any{"$unwind": "$" + args.Field})
	case f.Type == parse.TypeArray:
		// The whole array is the key (MongoDB's $group): arrays have no
		// order here, so groups of equal value are ordered by their first
		// row (their smallest objectId), and the key sorts are refused.
		if strings.HasPrefix(sort, "key_") {
			return nil, argErr("sort", "%s needs scalar keys, and %s is an Array grouped whole; sort by value_desc or value_asc, or pass flatten_arrays: true to group by element", sort, args.Field)
		}
		group[wholeArrayTie] = map[string]any{"$min": "$objectId"}
		order = sortStage(sort, wholeArrayTie)
	}
	stages = append(stages, map[string]any{"$group": group}, order)
	if args.Skip > 0 {
		stages = append(stages, map[string]any{"$skip": args.Skip})
	}
	stages = append(stages, map[string]any{"$limit": limit + 1})
	params := map[string]any{"field": args.Field, "operation": opName(args.Operation), "sort": sort, "limit": limit}
	if args.ValueField != "" {
		params["value_field"] = args.ValueField
	}
	if args.FlattenArrays {
		params["flatten_arrays"] = true
	}
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
	groups := groupRows(rows, "objectId")
	res := &GroupsResult{ClassName: sch.ClassName, Field: args.Field, Operation: opName(args.Operation), Sort: sort}
	res.setRows(groups, groupByName, groupNext(sch.ClassName, params, args.Where), limit, args.Skip)
	if f.Type == parse.TypePointer {
		res.PointerClass = f.TargetClass
		res.Hint = fmt.Sprintf("keys are %s objectIds; get_objects(class_name: %q, ids: [...]) resolves them", f.TargetClass, f.TargetClass)
	}
	return res, nil
}

// wholeArrayTie is the group field that orders groups of equal value
// when the key is a whole array: the group's smallest objectId.
const wholeArrayTie = "first_object_id"

// groupRows turns {objectId: key, value: v} rows into {key, value} groups.
func groupRows(rows []map[string]any, keyField string) []any {
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, map[string]any{"key": r[keyField], "value": r["value"]})
	}
	return out
}
