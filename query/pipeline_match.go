package query

import (
	"errors"
	"sort"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// $match: a where-constraint on the rows flowing through a pipeline.

// MatchStage filters rows with a where-constraint on the current fields.
type MatchStage struct {
	stageOut
	Where Expr
}

func (MatchStage) Name() string { return "$match" }

func (p *pipeParser) match(arg any, at string) (Stage, error) {
	_, _, ok := asObject(arg)
	if !ok {
		return nil, errAt(at, "takes a where-constraint object, got %s", describeAny(arg))
	}
	m := p.matchKeys(plain(arg).(map[string]any), 0)
	pr := Parser{Resolve: p.resolve, View: true}
	sch := p.schema
	if !p.base {
		sch = whereSchema(p.schema.ClassName, p.shape)
		pr.unknown = func(field, at string) error { return p.unknownField(field, at, "") }
	}
	e, err := pr.Where(sch, m)
	if err != nil {
		return nil, rebase(err, at)
	}
	if !p.base {
		if err := p.checkComputedMatch(e, at); err != nil {
			return nil, err
		}
	}
	return &MatchStage{stageOut: stageOut{p.shape}, Where: e}, nil
}

// rebase moves a where error under the stage's path.
func rebase(err error, at string) error {
	var qe *Error
	if errors.As(err, &qe) {
		path := qe.Path
		if path == "where" || strings.HasPrefix(path, "where.") || strings.HasPrefix(path, "where[") {
			path = at + strings.TrimPrefix(path, "where")
		} else if path == "" {
			path = at
		}
		return &Error{Path: path, Msg: qe.Msg, Denied: qe.Denied}
	}
	return errAt(at, "%v", err)
}

// matchKeys rewrites `_id` to objectId.
func (p *pipeParser) matchKeys(m map[string]any, depth int) map[string]any {
	out := make(map[string]any, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "$or", "$and", "$nor":
			if arr, ok := v.([]any); ok && depth < MaxDepth {
				na := make([]any, len(arr))
				for i, e := range arr {
					if mm, ok := e.(map[string]any); ok {
						na[i] = p.matchKeys(mm, depth+1)
					} else {
						na[i] = e
					}
				}
				v = na
			}
		default:
			head, rest, dotted := strings.Cut(k, ".")
			if head == "_id" {
				head = parse.FieldObjectID
			}
			k = head
			if dotted {
				k += "." + rest
			}
		}
		if _, dup := out[k]; dup {
			// `_id` and `objectId` both given: keep both constraints.
			out["$and"] = append(asSlice(out["$and"]), map[string]any{k: v})
			continue
		}
		out[k] = v
	}
	return out
}

func asSlice(v any) []any {
	a, _ := v.([]any)
	return a
}

// whereSchema is the schema a where-constraint is checked against after
// the fields have changed: computed fields compare as plain values.
func whereSchema(class string, shape []Field) parse.Schema {
	fields := make(map[string]parse.Field, len(shape))
	for _, f := range shape {
		fields[f.Name] = parse.Field{Type: whereType(f.Type), TargetClass: f.Type.Target}
	}
	return parse.Schema{ClassName: class, Fields: fields}
}

func whereType(t Type) parse.FieldType {
	switch t.Kind {
	case parse.TypeObject, TypeJSON:
		return parse.TypeObject
	case parse.TypeFile, parse.TypeGeoPoint, parse.TypePolygon, parse.TypeBytes:
		if t.JSON {
			return parse.TypeObject
		}
	}
	return t.Kind
}

// checkComputedMatch refuses, on rows that are no longer the class's own,
// $relatedTo (it matches class objects by objectId) and $lt/$gt… on a
// whole JSON value (JSON text and jsonb order differently, so the result
// would depend on the backend).
func (p *pipeParser) checkComputedMatch(e Expr, at string) error {
	var list []Expr
	switch x := e.(type) {
	case And:
		list = x.Exprs
	case Or:
		list = x.Exprs
	case Nor:
		list = x.Exprs
	case RelatedTo:
		return errAt(at+".$relatedTo", "$relatedTo matches the class's own rows: use it in a $match before any stage that reshapes them")
	case Cmp:
		if x.Op == OpEq || x.Op == OpNe || len(x.Path.Sub) > 0 {
			return nil
		}
		if f, ok := p.field(x.Path.Field); ok && whereType(f.Type) == parse.TypeObject {
			return errAt(at+"."+x.Path.Field, "ordering comparisons do not apply to the %s value %q; compare a path inside it", f.Type.Kind, x.Path.Field)
		}
	}
	for _, sub := range list {
		if err := p.checkComputedMatch(sub, at); err != nil {
			return err
		}
	}
	return nil
}
