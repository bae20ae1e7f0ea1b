package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Aggregation limits.
const (
	AutoLimit            = 200
	DefaultGroupLimit    = 200
	MaxGroupLimit        = 1000
	DefaultDistinctLimit = 1000
	MaxDistinctLimit     = 5000
)

var pipelineSchema = &jsonschema.Schema{
	Type:        "array",
	Items:       &jsonschema.Schema{Type: "object"},
	Description: `Stages, e.g. [{"$match":{"status":"open"}},{"$group":{"_id":"$priority","n":{"$sum":1}}},{"$sort":{"n":-1}},{"$limit":10}]. Stages: $match $group $sort $limit $skip $project $addFields $count $unwind $lookup (on a pointer). Group by "$field", by {"a":"$f1","b":"$f2"} or by date parts ({"$year":"$createdAt"}); accumulators $sum $avg $min $max $count $first $last $push $addToSet. "_id" and "objectId" both name the objectId; a pointer is compared as its bare objectId.`,
}

func aggregateTools() []*Tool {
	return []*Tool{
		{
			Name:        "aggregate",
			Category:    CategoryAggregate,
			Description: fmt.Sprintf("Run an aggregation pipeline on a class (MongoDB-style stages, compiled to SQL). Without a final $limit or $count a $limit of %d is added. dry_run returns the validated pipeline without running it. Prefer group_by, group_by_date or distinct for simple groupings.", AutoLimit),
			Permission:  agent.Readonly,
			Timeout:     60 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[aggregateArgs](map[string]*jsonschema.Schema{"pipeline": pipelineSchema}),
			Handler:     aggregate,
		},
		{
			Name:        "group_by",
			Category:    CategoryAggregate,
			Description: fmt.Sprintf("Group a class by one field and count, sum, average, min or max per group (top-K with sort and limit, default %d, max %d). Array fields can be flattened so each element counts once per row. dry_run shows the pipeline.", DefaultGroupLimit, MaxGroupLimit),
			Permission:  agent.Readonly,
			Timeout:     60 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[groupByArgs](map[string]*jsonschema.Schema{"where": whereSchema}),
			Handler:     groupBy,
		},
		{
			Name:        "group_by_date",
			Category:    CategoryAggregate,
			Description: "Bucket a class by a Date field at an interval (hour, day, week, month, quarter, year) in a time zone (IANA name or ±hh:mm, default UTC) and count, sum, average, min or max per bucket. Keys are formatted like 2025-03-14, 2025-W11, 2025-03, 2025-Q1. dry_run shows the pipeline.",
			Permission:  agent.Readonly,
			Timeout:     60 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[groupByDateArgs](map[string]*jsonschema.Schema{"where": whereSchema}),
			Handler:     groupByDate,
		},
		{
			Name:        "distinct",
			Category:    CategoryAggregate,
			Description: fmt.Sprintf("The distinct values of a field (elements, for Array fields), optionally filtered, sorted asc or desc (default %d, max %d).", DefaultDistinctLimit, MaxDistinctLimit),
			Permission:  agent.Readonly,
			Timeout:     60 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[distinctArgs](map[string]*jsonschema.Schema{"where": whereSchema}),
			Handler:     distinct,
		},
	}
}

// Stages is a pipeline argument: a JSON array of stage objects, or a string
// holding one. The raw text is kept so stage keys keep their order ($sort).
type Stages json.RawMessage

// UnmarshalJSON keeps the raw pipeline.
func (p *Stages) UnmarshalJSON(b []byte) error {
	*p = append((*p)[:0], b...)
	return nil
}

func (p Stages) raw() ([]byte, error) {
	b := bytes.TrimSpace(p)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		b = []byte(strings.TrimSpace(s))
	}
	if len(b) == 0 || b[0] != '[' {
		return nil, &Error{Code: CodeInvalidArgument, Message: `argument "pipeline" must be an array of stage objects, e.g. [{"$match":{…}},{"$group":{…}}]`, Details: map[string]any{"argument": "pipeline"}}
	}
	return b, nil
}

type aggregateArgs struct {
	ClassName string `json:"class_name" jsonschema:"the Parse class whose objects enter the pipeline"`
	Pipeline  Stages `json:"pipeline"`
	DryRun    bool   `json:"dry_run,omitempty" jsonschema:"validate and return the pipeline without running it"`
	// ApplyCanonicalFilter false lets rows outside the class's canonical
	// filter enter the pipeline.
	ApplyCanonicalFilter *bool `json:"apply_canonical_filter,omitempty" jsonschema:"false to let rows outside the class's canonical filter (see get_schema) enter the pipeline; default true"`
}

// pointerClasses lists the result fields that hold bare objectIds of a
// class (pointers and pointer group keys), for the model to resolve.
func pointerClasses(p *query.Pipeline) map[string]string {
	out := map[string]string{}
	for _, f := range p.Output {
		if f.Type.Kind == parse.TypePointer && f.Type.Target != "" {
			out[f.Name] = f.Type.Target
		}
	}
	return out
}

func aggregate(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[aggregateArgs](c.Args)
	if err != nil {
		return nil, err
	}
	c = c.withScope(canonicalScope(c.Scope, args.ApplyCanonicalFilter))
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	raw, err := args.Pipeline.raw()
	if err != nil {
		return nil, err
	}
	resolve := c.Scope.Parser(ctx).Resolve
	p, err := query.ParsePipelineJSON(sch, resolve, raw)
	if err != nil {
		return nil, err
	}
	autoLimited := false
	if !p.HasLimit {
		// Appended to the raw text, so the caller's key order ($sort) holds.
		raw = append(bytes.TrimSuffix(bytes.TrimSpace(raw), []byte("]")), []byte(fmt.Sprintf(`,{"$limit":%d}]`, AutoLimit))...)
		if len(p.Stages) == 0 {
			raw = []byte(fmt.Sprintf(`[{"$limit":%d}]`, AutoLimit))
		}
		autoLimited = true
		if p, err = query.ParsePipelineJSON(sch, resolve, raw); err != nil {
			return nil, err
		}
	}
	res := map[string]any{"class_name": sch.ClassName, "pipeline_stages": len(p.Stages)}
	if pc := pointerClasses(p); len(pc) > 0 {
		res["pointer_classes"] = pc
	}
	if args.DryRun {
		if err := c.Scope.CheckPipeline(ctx, p); err != nil {
			return nil, err
		}
		res["dry_run"] = true
		res["pipeline"] = json.RawMessage(raw)
		res["hint"] = "dry_run: the pipeline above was validated but NOT run. Call aggregate again without dry_run to run it."
		return res, nil
	}
	rows, err := c.Scope.Aggregate(ctx, p)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []map[string]any{}
	}
	res["result_count"] = len(rows)
	res["results"] = rows
	if autoLimited && len(rows) >= AutoLimit {
		res["auto_limited"] = true
		res["auto_limit"] = AutoLimit
		res["hint"] = fmt.Sprintf(`The pipeline was bounded with {"$limit": %d} because it did not end with $limit or $count. Add your own final $limit to choose the size, or run count_objects first to size the result.`, AutoLimit)
	}
	return res, nil
}

// Group operations.
var groupOps = map[string]string{"count": "$sum", "sum": "$sum", "avg": "$avg", "average": "$avg", "min": "$min", "max": "$max"}

type groupCommon struct {
	ClassName  string `json:"class_name" jsonschema:"the Parse class"`
	Field      string `json:"field" jsonschema:"the field to group by"`
	Operation  string `json:"operation,omitempty" jsonschema:"count (default), sum, avg, min or max"`
	ValueField string `json:"value_field,omitempty" jsonschema:"the Number field the operation reads (not for count)"`
	Where      Where  `json:"where,omitempty"`
	Sort       string `json:"sort,omitempty" jsonschema:"value_desc, value_asc, key_asc or key_desc"`
	Limit      *int   `json:"limit,omitempty" jsonschema:"groups to return"`
	DryRun     bool   `json:"dry_run,omitempty" jsonschema:"return the pipeline without running it"`
}

type groupByArgs struct {
	groupCommon
	FlattenArrays *bool `json:"flatten_arrays,omitempty" jsonschema:"for an Array field, count each element once per row (default true)"`
}

type groupByDateArgs struct {
	groupCommon
	Interval string `json:"interval" jsonschema:"hour, day, week, month, quarter or year"`
	Timezone string `json:"timezone,omitempty" jsonschema:"IANA name such as America/New_York, or a fixed offset such as +05:30 (default UTC)"`
}

type distinctArgs struct {
	ClassName string `json:"class_name" jsonschema:"the Parse class"`
	Field     string `json:"field" jsonschema:"the field whose distinct values to list, or a path into an Object field (address.city); a Pointer field gives Pointer objects"`
	Where     Where  `json:"where,omitempty"`
	Sort      string `json:"sort,omitempty" jsonschema:"asc (default) or desc"`
	Limit     *int   `json:"limit,omitempty" jsonschema:"values to return"`
	DryRun    bool   `json:"dry_run,omitempty" jsonschema:"return the pipeline without running it"`
}

func argErr(arg, format string, a ...any) *Error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q ", arg) + fmt.Sprintf(format, a...), Details: map[string]any{"argument": arg}}
}

// groupSetup validates the common arguments and returns the leading
// $match stage (if any), the accumulator and the field's schema entry.
func groupSetup(ctx context.Context, c *Call, g groupCommon, defSort string) (parse.Schema, parse.Field, []any, map[string]any, string, error) {
	sch, err := classSchema(ctx, c.Scope, g.ClassName)
	if err != nil {
		return sch, parse.Field{}, nil, nil, "", err
	}
	f, ok := sch.Fields[g.Field]
	if !ok || f.Type == parse.TypeRelation || f.Type == parse.TypeACL {
		return sch, f, nil, nil, "", argErr("field", "%q is not a groupable field of %s", g.Field, sch.ClassName)
	}
	op := strings.ToLower(g.Operation)
	if op == "" {
		op = "count"
	}
	acc, ok := groupOps[op]
	if !ok {
		return sch, f, nil, nil, "", argErr("operation", "must be count, sum, avg, min or max, got %q", g.Operation)
	}
	var accumulator map[string]any
	if op == "count" {
		if g.ValueField != "" {
			return sch, f, nil, nil, "", argErr("value_field", "is not used by count")
		}
		accumulator = map[string]any{"$sum": 1}
	} else {
		vf, ok := sch.Fields[g.ValueField]
		if !ok || vf.Type != parse.TypeNumber {
			return sch, f, nil, nil, "", argErr("value_field", "%s needs a Number field of %s, got %q", op, sch.ClassName, g.ValueField)
		}
		accumulator = map[string]any{acc: "$" + g.ValueField}
	}
	var stages []any
	if m, err := g.Where.object(); err != nil {
		return sch, f, nil, nil, "", err
	} else if len(m) > 0 {
		stages = append(stages, map[string]any{"$match": m})
	}
	sort := g.Sort
	if sort == "" {
		sort = defSort
	}
	switch sort {
	case "value_desc", "value_asc", "key_asc", "key_desc":
	default:
		return sch, f, nil, nil, "", argErr("sort", "must be value_desc, value_asc, key_asc or key_desc, got %q", g.Sort)
	}
	return sch, f, stages, accumulator, sort, nil
}

func sortStage(sort string, keyField string) map[string]any {
	switch sort {
	case "value_asc":
		return map[string]any{"$sort": orderedSort{{"value", 1}, {keyField, 1}}}
	case "key_asc":
		return map[string]any{"$sort": orderedSort{{keyField, 1}}}
	case "key_desc":
		return map[string]any{"$sort": orderedSort{{keyField, -1}}}
	}
	return map[string]any{"$sort": orderedSort{{"value", -1}, {keyField, 1}}}
}

// orderedSort is a $sort object whose keys keep their order in JSON.
type orderedSort []struct {
	key string
	dir int
}

func (o orderedSort) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k.key)
		b.Write(kb)
		fmt.Fprintf(&b, ":%d", k.dir)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// runStages parses (through JSON, so $sort key order holds) and runs the
// stages built by a helper tool.
func runStages(ctx context.Context, c *Call, sch parse.Schema, stages []any) (*query.Pipeline, []map[string]any, error) {
	raw, err := json.Marshal(stages)
	if err != nil {
		return nil, nil, err
	}
	p, err := query.ParsePipelineJSON(sch, c.Scope.Parser(ctx).Resolve, raw)
	if err != nil {
		return nil, nil, err
	}
	rows, err := c.Scope.Aggregate(ctx, p)
	return p, rows, err
}

// checkStages validates the stages built by a helper tool and refuses them
// as running them would, for a dry run.
func checkStages(ctx context.Context, c *Call, sch parse.Schema, stages []any) error {
	raw, err := json.Marshal(stages)
	if err != nil {
		return err
	}
	p, err := query.ParsePipelineJSON(sch, c.Scope.Parser(ctx).Resolve, raw)
	if err != nil {
		return err
	}
	return c.Scope.CheckPipeline(ctx, p)
}

func dryRun(class string, params map[string]any, stages []any) map[string]any {
	b, _ := json.Marshal(stages)
	return map[string]any{"dry_run": true, "class_name": class, "parameters": params, "pipeline": json.RawMessage(b),
		"hint": "dry_run: the pipeline above was built but NOT run. Call again without dry_run to run it, or pass the pipeline (changed as needed) to aggregate."}
}

func groupBy(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[groupByArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, f, stages, acc, sort, err := groupSetup(ctx, c, args.groupCommon, "value_desc")
	if err != nil {
		return nil, err
	}
	limit, err := intArg("limit", args.Limit, DefaultGroupLimit, 1, MaxGroupLimit)
	if err != nil {
		return nil, err
	}
	if f.Type == parse.TypeArray && (args.FlattenArrays == nil || *args.FlattenArrays) {
		stages = append(stages, map[string]any{"$unwind": "$" + args.Field})
	}
	stages = append(stages,
		map[string]any{"$group": map[string]any{"_id": "$" + args.Field, "value": acc}},
		sortStage(sort, "objectId"),
		map[string]any{"$limit": limit + 1})
	params := map[string]any{"field": args.Field, "operation": opName(args.Operation), "sort": sort, "limit": limit}
	if args.ValueField != "" {
		params["value_field"] = args.ValueField
	}
	if args.DryRun {
		if err := checkStages(ctx, c, sch, stages); err != nil {
			return nil, err
		}
		return dryRun(sch.ClassName, params, stages), nil
	}
	_, rows, err := runStages(ctx, c, sch, stages)
	if err != nil {
		return nil, err
	}
	groups := groupRows(rows, "objectId")
	res := map[string]any{"class_name": sch.ClassName, "field": args.Field, "operation": params["operation"], "limit": limit}
	if len(groups) > limit {
		groups = groups[:limit]
		res["truncated"] = true
	}
	res["group_count"] = len(groups)
	res["groups"] = groups
	if f.Type == parse.TypePointer {
		res["pointer_class"] = f.TargetClass
		res["hint"] = fmt.Sprintf("keys are %s objectIds; get_objects(class_name: %q, ids: [...]) resolves them", f.TargetClass, f.TargetClass)
	}
	return res, nil
}

func opName(op string) string {
	switch strings.ToLower(op) {
	case "":
		return "count"
	case "average":
		return "avg"
	}
	return strings.ToLower(op)
}

// groupRows turns {objectId: key, value: v} rows into {key, value} groups.
func groupRows(rows []map[string]any, keyField string) []any {
	out := make([]any, 0, len(rows))
	for _, r := range rows {
		out = append(out, map[string]any{"key": r[keyField], "value": r["value"]})
	}
	return out
}

func distinct(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[distinctArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	head, _, dotted := strings.Cut(args.Field, ".")
	f, ok := sch.Fields[head]
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
	switch strings.ToLower(args.Sort) {
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
		map[string]any{"$sort": map[string]any{"objectId": dir}},
		map[string]any{"$limit": limit + 1})
	if args.DryRun {
		if err := checkStages(ctx, c, sch, stages); err != nil {
			return nil, err
		}
		return dryRun(sch.ClassName, map[string]any{"field": args.Field, "sort": map[int]string{1: "asc", -1: "desc"}[dir], "limit": limit}, stages), nil
	}
	_, rows, err := runStages(ctx, c, sch, stages)
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
	res := map[string]any{"class_name": sch.ClassName, "field": args.Field}
	if len(values) > limit {
		values = values[:limit]
		res["truncated"] = true
	}
	res["count"] = len(values)
	res["values"] = values
	if f.Type == parse.TypePointer {
		res["pointer_class"] = f.TargetClass
	}
	return res, nil
}
