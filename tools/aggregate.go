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
	Description: "stages; see " + QueryLanguageURI,
	Examples:    []any{[]any{map[string]any{"$match": map[string]any{"status": "open"}}, map[string]any{"$group": map[string]any{"_id": "$priority", "n": map[string]any{"$sum": 1}}}}},
}

// groupInputs are the argument schemas the group tools share.
func groupInputs(extra map[string]*jsonschema.Schema, defSort string, defLimit, maxLimit int) map[string]*jsonschema.Schema {
	m := map[string]*jsonschema.Schema{
		"where":     whereRef,
		"operation": enumSchema("", "count", groupOperations...),
		"sort":      enumSchema("", defSort, groupSorts...),
		"limit":     intSchema("", 1, maxLimit, defLimit),
		"skip":      skipSchema,
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func aggregateTools() []*Tool {
	return []*Tool{
		{
			Name:        "aggregate",
			Op:          parse.OpFind,
			Category:    CategoryAggregate,
			Title:       "Aggregate",
			Description: fmt.Sprintf("Run an aggregation pipeline on a class (a final $limit %d is added if none).", AutoLimit),
			Permission:  agent.Readonly,
			Timeout:     60 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[aggregateArgs](map[string]*jsonschema.Schema{"pipeline": pipelineSchema, "apply_canonical_filter": canonicalSchema}),
			Handler:     aggregate,
		},
		{
			Name:        "group_by",
			Op:          parse.OpFind,
			Category:    CategoryAggregate,
			Title:       "Group by a field",
			Description: "Aggregate per value of a field.",
			Permission:  agent.Readonly,
			Timeout:     60 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[groupByArgs](groupInputs(map[string]*jsonschema.Schema{
				"flatten_arrays": {Type: "boolean", Default: mustJSON(true), Description: "count Array elements"},
			}, "value_desc", DefaultGroupLimit, MaxGroupLimit)),
			Handler: groupBy,
		},
		{
			Name:        "group_by_date",
			Op:          parse.OpFind,
			Category:    CategoryAggregate,
			Title:       "Group by date",
			Description: "Group by interval of a Date field.",
			Permission:  agent.Readonly,
			Timeout:     60 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[groupByDateArgs](groupInputs(map[string]*jsonschema.Schema{
				"interval": enumSchema("bucket size", "", dateIntervals...),
				"timezone": {Type: "string", Default: mustJSON("UTC"), Description: "IANA name or ±hh:mm"},
			}, "key_asc", DefaultDistinctLimit, MaxDistinctLimit)),
			Handler: groupByDate,
		},
		{
			Name:        "distinct",
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
	ClassName string `json:"class_name"`
	Pipeline  Stages `json:"pipeline"`
	DryRun    bool   `json:"dry_run,omitempty" jsonschema:"validate, do not run"`
	// ApplyCanonicalFilter false lets rows outside the class's canonical
	// filter enter the pipeline.
	ApplyCanonicalFilter *bool `json:"apply_canonical_filter,omitempty"`
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
	pc := pointerClasses(p)
	if len(pc) == 0 {
		pc = nil
	}
	if args.DryRun {
		if err := c.Scope.CheckPipeline(ctx, p); err != nil {
			return nil, err
		}
		out := map[string]any{"class_name": sch.ClassName, "pipeline_stages": len(p.Stages), "dry_run": true, "pipeline": json.RawMessage(raw),
			"hint": "dry_run: the pipeline above was validated but NOT run. Call aggregate again without dry_run to run it."}
		if pc != nil {
			out["pointer_classes"] = pc
		}
		return out, nil
	}
	rows, err := c.Scope.Aggregate(ctx, p)
	if err != nil {
		return nil, err
	}
	if rows == nil {
		rows = []map[string]any{}
	}
	res := &RowsResult{ClassName: sch.ClassName, PipelineStages: len(p.Stages), PointerClasses: pc, ResultCount: len(rows), Results: rows, all: rows}
	if autoLimited && len(rows) >= AutoLimit {
		res.AutoLimited, res.AutoLimit = true, AutoLimit
		res.Hint = fmt.Sprintf(`The pipeline was bounded with {"$limit": %d} because it did not end with $limit or $count. Add your own final $limit to choose the size, or run count_objects first to size the result.`, AutoLimit)
	}
	// A cut page continues with the caller's pipeline and a final $skip
	// past the rows sent (before the automatic $limit, when there is one).
	userRaw, _ := args.Pipeline.raw()
	next := map[string]any{"class_name": sch.ClassName}
	if args.ApplyCanonicalFilter != nil {
		next["apply_canonical_filter"] = *args.ApplyCanonicalFilter
	}
	res.Page = Page{Pagination: Window{Limit: len(rows), Skip: 0}, tool: "aggregate", args: next,
		resume: func(a map[string]any, skip int) { a["pipeline"] = withSkip(userRaw, skip) }}
	return res, nil
}

// withSkip appends {"$skip": n} to a raw pipeline.
func withSkip(raw []byte, n int) json.RawMessage {
	return withStage(raw, fmt.Sprintf(`{"$skip":%d}`, n))
}

// Group operations.
var groupOps = map[string]string{"count": "$sum", "sum": "$sum", "avg": "$avg", "min": "$min", "max": "$max"}

// groupSorts is the closed set of group_by's and group_by_date's sort.
var groupSorts = []string{"value_desc", "value_asc", "key_asc", "key_desc"}

// groupOperations is the closed set of the operation argument.
var groupOperations = []string{"count", "sum", "avg", "min", "max"}

type groupCommon struct {
	ClassName  string `json:"class_name"`
	Field      string `json:"field"`
	Operation  string `json:"operation,omitempty" jsonschema:"count (default), sum, avg, min or max"`
	ValueField string `json:"value_field,omitempty" jsonschema:"Number field (not for count)"`
	Where      Where  `json:"where,omitempty"`
	Sort       string `json:"sort,omitempty" jsonschema:"value_desc, value_asc, key_asc or key_desc"`
	Limit      *int   `json:"limit,omitempty"`
	Skip       int    `json:"skip,omitempty"`
	DryRun     bool   `json:"dry_run,omitempty"`
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
	ClassName string `json:"class_name"`
	Field     string `json:"field"`
	Where     Where  `json:"where,omitempty"`
	Sort      string `json:"sort,omitempty" jsonschema:"asc (default) or desc"`
	Limit     *int   `json:"limit,omitempty"`
	Skip      int    `json:"skip,omitempty"`
	DryRun    bool   `json:"dry_run,omitempty"`
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
	op := opName(g.Operation)
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
	sort := defSort
	if strings.TrimSpace(g.Sort) != "" {
		var ok bool
		if sort, ok = enumMember(groupSorts, g.Sort); !ok {
			return sch, f, nil, nil, "", argErr("sort", "must be value_desc, value_asc, key_asc or key_desc, got %q", g.Sort)
		}
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
		sortStage(sort, "objectId"))
	if args.Skip > 0 {
		stages = append(stages, map[string]any{"$skip": args.Skip})
	}
	stages = append(stages, map[string]any{"$limit": limit + 1})
	params := map[string]any{"field": args.Field, "operation": opName(args.Operation), "sort": sort, "limit": limit}
	if args.ValueField != "" {
		params["value_field"] = args.ValueField
	}
	if args.FlattenArrays != nil {
		params["flatten_arrays"] = *args.FlattenArrays
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
	res := &GroupsResult{ClassName: sch.ClassName, Field: args.Field, Operation: opName(args.Operation), Sort: sort}
	res.setRows(groups, "group_by", groupNext(sch.ClassName, params, args.Where), limit, args.Skip)
	if f.Type == parse.TypePointer {
		res.PointerClass = f.TargetClass
		res.Hint = fmt.Sprintf("keys are %s objectIds; get_objects(class_name: %q, ids: [...]) resolves them", f.TargetClass, f.TargetClass)
	}
	return res, nil
}

// groupNext is the arguments of a group tool's next page: its effective
// parameters, class and where.
func groupNext(class string, params map[string]any, w Where) map[string]any {
	next := map[string]any{"class_name": class}
	for k, v := range params {
		next[k] = v
	}
	if m, _ := w.object(); len(m) > 0 {
		next["where"] = m
	}
	return next
}

// opName is the operation argument's member ("count" when omitted).
func opName(op string) string {
	if strings.TrimSpace(op) == "" {
		return "count"
	}
	if m, ok := enumMember(groupOperations, op); ok {
		return m
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
		if err := checkStages(ctx, c, sch, stages); err != nil {
			return nil, err
		}
		return dryRun(sch.ClassName, params, stages), nil
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
	res := &ValuesResult{ClassName: sch.ClassName, Field: args.Field}
	res.setRows(values, "distinct", groupNext(sch.ClassName, params, args.Where), limit, args.Skip)
	if f.Type == parse.TypePointer {
		res.PointerClass = f.TargetClass
	}
	return res, nil
}
