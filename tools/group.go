package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Aggregation limits of the group tools (group_by; distinct and
// group_by_date).
const (
	DefaultGroupLimit    = 200
	MaxGroupLimit        = 1000
	DefaultDistinctLimit = 1000
	MaxDistinctLimit     = 5000
)

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

// groupSetup validates the common arguments and returns the class, the
// leading $match stage (if any), the accumulator and the field's schema
// entry.
func groupSetup(ctx context.Context, c *Call, g groupCommon, defSort string) (*agent.Class, parse.Field, []any, map[string]any, string, error) {
	cls, err := openClass(ctx, c.Scope, g.ClassName)
	if err != nil {
		return nil, parse.Field{}, nil, nil, "", err
	}
	sch := cls.Schema
	f, ok := sch.Fields[g.Field]
	if !ok && g.Field != "" {
		return cls, f, nil, nil, "", query.DenyField(sch, g.Field, "field", "")
	}
	if !ok || f.Type == parse.TypeRelation || f.Type == parse.TypeACL {
		return cls, f, nil, nil, "", argErr("field", "%q is not a groupable field of %s", g.Field, sch.ClassName)
	}
	op := opName(g.Operation)
	acc, ok := groupOps[op]
	if !ok {
		return cls, f, nil, nil, "", argErr("operation", "must be count, sum, avg, min or max, got %q", g.Operation)
	}
	var accumulator map[string]any
	if op == "count" {
		if g.ValueField != "" {
			return cls, f, nil, nil, "", argErr("value_field", "is not used by count")
		}
		accumulator = map[string]any{"$sum": 1}
	} else {
		vf, ok := sch.Fields[g.ValueField]
		if !ok && g.ValueField != "" {
			return cls, f, nil, nil, "", query.DenyField(sch, g.ValueField, "value_field", "")
		}
		if vf.Type != parse.TypeNumber {
			return cls, f, nil, nil, "", argErr("value_field", "%s needs a Number field of %s, got %q", op, sch.ClassName, g.ValueField)
		}
		accumulator = map[string]any{acc: "$" + g.ValueField}
	}
	var stages []any
	if m, err := g.Where.object(); err != nil {
		return cls, f, nil, nil, "", err
	} else if len(m) > 0 {
		stages = append(stages, map[string]any{"$match": m})
	}
	sort := defSort
	if strings.TrimSpace(g.Sort) != "" {
		var ok bool
		if sort, ok = enumMember(groupSorts, g.Sort); !ok {
			return cls, f, nil, nil, "", argErr("sort", "must be value_desc, value_asc, key_asc or key_desc, got %q", g.Sort)
		}
	}
	return cls, f, stages, accumulator, sort, nil
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

// parseStages parses (through JSON, so $sort key order holds) the stages
// built by a helper tool on cls, and refuses them when they would scan
// the class and the operator refuses that (guardPipelineScan).
func parseStages(ctx context.Context, c *Call, cls *agent.Class, stages []any) (*query.Pipeline, error) {
	raw, err := json.Marshal(stages)
	if err != nil {
		return nil, err
	}
	p, err := query.ParsePipelineJSON(cls.Schema, c.Scope.Parser(ctx).Resolve, raw)
	if err != nil {
		return nil, err
	}
	if err := guardPipelineScan(ctx, c, cls, p); err != nil {
		return nil, err
	}
	return p, nil
}

// runStages runs the stages built by a helper tool.
func runStages(ctx context.Context, c *Call, cls *agent.Class, stages []any) (*query.Pipeline, []map[string]any, error) {
	p, err := parseStages(ctx, c, cls, stages)
	if err != nil {
		return nil, nil, err
	}
	rows, err := c.Scope.Aggregate(ctx, p)
	return p, rows, err
}

// checkStages validates the stages built by a helper tool and refuses them
// as running them would, for a dry run.
func checkStages(ctx context.Context, c *Call, cls *agent.Class, stages []any) error {
	p, err := parseStages(ctx, c, cls, stages)
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

// GroupsResult is the answer of group_by and group_by_date.
type GroupsResult struct {
	ClassName    string `json:"class_name"`
	Field        string `json:"field"`
	Interval     string `json:"interval,omitempty"`
	Timezone     string `json:"timezone,omitempty"`
	Operation    string `json:"operation"`
	Sort         string `json:"sort"`
	GroupCount   int    `json:"group_count"`
	Groups       []any  `json:"groups"`
	PointerClass string `json:"pointer_class,omitempty"`
	Hint         string `json:"hint,omitempty"`
	Page
	all []any
}

// setRows sets the groups read (up to limit+1: one more says more follow).
func (r *GroupsResult) setRows(rows []any, tool string, next map[string]any, limit, skip int) {
	r.all = r.Page.start(rows, tool, next, limit, skip)
	r.Groups, r.GroupCount = r.all, len(r.all)
}

func (r *GroupsResult) pageRows() int { return len(r.all) }

func (r *GroupsResult) keepRows(n int) {
	r.Groups, r.GroupCount = r.all[:n], n
	r.cut(n, len(r.all))
}
