package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// AutoLimit is the final $limit aggregate adds to a pipeline that has
// none.
const AutoLimit = 200

var pipelineSchema = &jsonschema.Schema{
	Type:        "array",
	Items:       &jsonschema.Schema{Type: "object"},
	Description: "stages; see " + QueryLanguageURI,
	Examples:    []any{[]any{map[string]any{"$match": map[string]any{"status": "open"}}, map[string]any{"$group": map[string]any{"_id": "$priority", "n": map[string]any{"$sum": 1}}}}},
}

// aggregateName is the tool's name (its next_call names it too).
const aggregateName = "aggregate"

func aggregateTool() *Tool {
	return &Tool{
		Name:        aggregateName,
		Op:          parse.OpFind,
		Category:    CategoryAggregate,
		Title:       "Aggregate",
		Description: fmt.Sprintf("Run an aggregation pipeline (a final $limit %d is added if none).", AutoLimit),
		Permission:  agent.Readonly,
		Timeout:     60 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[aggregateArgs](map[string]*jsonschema.Schema{"pipeline": pipelineSchema, "apply_canonical_filter": canonicalSchema,
			"compact_pointers": {Type: "boolean", Default: mustJSON(true), Description: "false: _p_field: \"Class$id\""}}),
		Handler: aggregate,
	}
}

type aggregateArgs struct {
	ClassName string `json:"class_name"`
	Pipeline  Stages `json:"pipeline"`
	DryRun    bool   `json:"dry_run,omitempty"`
	// ApplyCanonicalFilter false lets rows outside the class's canonical
	// filter enter the pipeline.
	ApplyCanonicalFilter *bool `json:"apply_canonical_filter,omitempty"`
	// CompactPointers false gives pointers in Parse's storage form
	// instead of bare objectIds and pointer_classes.
	CompactPointers *bool `json:"compact_pointers,omitempty"`
}

// expandPointers rewrites the pointer columns of rows (ptrs: the output
// fields holding Pointers, and their classes) into Parse's storage form:
// the field becomes _p_<field> and its value <Class>$<objectId>. A
// pointer's bare objectId taken into $group stays bare, as Parse Server
// gives it.
func expandPointers(rows []map[string]any, ptrs map[string]string) {
	for _, row := range rows {
		for field, class := range ptrs {
			v, ok := row[field]
			if !ok {
				continue
			}
			if _, id, isPtr := parse.PointerID(v); isPtr {
				v = class + "$" + id
			}
			delete(row, field)
			row["_p_"+field] = v
		}
	}
}

// pointerFields lists the result fields that hold a class's objects by
// reference: Pointers (ptrs), and pointers' bare objectIds taken into
// $group (ids: a group key on a pointer, $first of one, …).
func pointerFields(p *query.Pipeline) (ptrs, ids map[string]string) {
	ptrs, ids = map[string]string{}, map[string]string{}
	for _, f := range p.Output {
		switch {
		case f.Type.Kind == parse.TypePointer && f.Type.Target != "":
			ptrs[f.Name] = f.Type.Target
		case f.Type.Kind == parse.TypeString && f.Type.IDOf != "":
			ids[f.Name] = f.Type.IDOf
		}
	}
	return ptrs, ids
}

// pointerClasses is pointer_classes: every result field holding bare
// objectIds of a class (pointers and pointer group keys), and its class,
// for the model to resolve; nil when there is none.
func pointerClasses(ptrs, ids map[string]string) map[string]string {
	if len(ptrs)+len(ids) == 0 {
		return nil
	}
	out := maps.Clone(ptrs)
	maps.Copy(out, ids)
	return out
}

func aggregate(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[aggregateArgs](c.Args)
	if err != nil {
		return nil, err
	}
	c = c.withScope(canonicalScope(c.Scope, args.ApplyCanonicalFilter))
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	sch := cls.Schema
	raw, err := args.Pipeline.raw()
	if err != nil {
		return nil, err
	}
	resolve := c.Scope.Parser(ctx).Resolve
	p, err := query.ParsePipelineJSON(sch, resolve, raw)
	if err != nil {
		return nil, err
	}
	autoLimited := !p.HasLimit
	if autoLimited {
		p = p.WithLimit(AutoLimit) // appended to the parsed pipeline, not parsed again
	}
	if err := guardPipelineScan(ctx, c, cls, p); err != nil {
		return nil, err
	}
	ptrs, ids := pointerFields(p)
	pc := pointerClasses(ptrs, ids)
	compact := args.CompactPointers == nil || *args.CompactPointers
	if args.DryRun {
		if err := c.Scope.CheckPipeline(ctx, p); err != nil {
			return nil, err
		}
		// The pipeline that would run, as the caller's text (so its key
		// order, a $sort's, holds) with the automatic $limit.
		shown := raw
		if autoLimited {
			shown = withStage(raw, fmt.Sprintf(`{"$limit":%d}`, AutoLimit))
		}
		out := map[string]any{"class_name": sch.ClassName, "pipeline_stages": len(p.Stages), "dry_run": true, "pipeline": json.RawMessage(shown),
			"hint": "dry_run: the pipeline above was validated but NOT run. Call aggregate again without dry_run to run it."}
		if pc != nil && compact {
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
	if !compact {
		expandPointers(rows, ptrs)
		pc = nil
	}
	res := &RowsResult{ClassName: sch.ClassName, PipelineStages: len(p.Stages), PointerClasses: pc, ResultCount: len(rows), Results: rows, all: rows}
	if autoLimited && len(rows) >= AutoLimit {
		res.AutoLimited, res.AutoLimit = true, AutoLimit
		res.Hint = fmt.Sprintf(`The pipeline was bounded with {"$limit": %d} because it did not end with $limit or $count. Add your own final $limit to choose the size, or run count_objects first to size the result.`, AutoLimit)
	}
	// A cut page continues with the caller's pipeline and a final $skip
	// past the rows sent (before the automatic $limit, when there is one).
	next := map[string]any{"class_name": sch.ClassName}
	if args.ApplyCanonicalFilter != nil {
		next["apply_canonical_filter"] = *args.ApplyCanonicalFilter
	}
	if !compact {
		next["compact_pointers"] = false
	}
	res.Page = Page{Pagination: Window{Limit: len(rows), Skip: 0}, tool: aggregateName, args: next,
		resume: func(a map[string]any, skip int) { a["pipeline"] = withSkip(raw, skip) }}
	return res, nil
}

// withSkip appends {"$skip": n} to a raw pipeline.
func withSkip(raw []byte, n int) json.RawMessage {
	return withStage(raw, fmt.Sprintf(`{"$skip":%d}`, n))
}

// RowsResult is the answer of aggregate: the pipeline's output rows.
type RowsResult struct {
	ClassName      string            `json:"class_name"`
	PipelineStages int               `json:"pipeline_stages"`
	PointerClasses map[string]string `json:"pointer_classes,omitempty"`
	ResultCount    int               `json:"result_count"`
	Results        []map[string]any  `json:"results"`
	AutoLimited    bool              `json:"auto_limited,omitempty"`
	AutoLimit      int               `json:"auto_limit,omitempty"`
	Hint           string            `json:"hint,omitempty"`
	Page
	all []map[string]any
}

func (r *RowsResult) pageRows() int { return len(r.all) }

func (r *RowsResult) keepRows(n int) {
	r.Results = r.all[:n]
	r.ResultCount = n
	r.cut(n, len(r.all))
}

func (r *RowsResult) objectRows() []map[string]any { return r.all }
