// Package restwhere renders a parsed constraint (package query) back
// into Parse's REST where-language, for the backend that passes queries
// on to Parse Server (store/parserest). The result means what the parsed
// constraint means; Parse Server then evaluates it with its own semantics
// (it is the oracle).
package restwhere

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Renderer renders constraints to REST JSON.
type Renderer struct {
	// Resolve returns a class's schema (the target class of a Pointer
	// comes from it). Required.
	Resolve func(class string) (parse.Schema, error)
	// Owner decides a $relatedTo whose owner query carries more than the
	// owner's id (the governed scope's rules): it reports whether q
	// selects the owner. Nil refuses such a $relatedTo.
	Owner func(q *query.Query) (bool, error)
}

// ErrNotRenderable is wrapped by the errors of constraints the REST
// where-language cannot express.
var ErrNotRenderable = fmt.Errorf("constraint has no REST form")

// Where renders e, a constraint on class, as a REST where object ({} for
// nil).
func (r Renderer) Where(class string, e query.Expr) (map[string]any, error) {
	if e == nil {
		return map[string]any{}, nil
	}
	sch, err := r.Resolve(class)
	if err != nil {
		return nil, err
	}
	return r.expr(sch, e)
}

// QueryWhere renders q's constraint.
func (r Renderer) QueryWhere(q *query.Query) (map[string]any, error) {
	return r.Where(q.Class, q.Where)
}

func (r Renderer) list(sch parse.Schema, es []query.Expr) ([]any, error) {
	out := make([]any, 0, len(es))
	for _, e := range es {
		m, err := r.expr(sch, e)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func field(p query.Path, v any) map[string]any { return map[string]any{p.String(): v} }

func (r Renderer) expr(sch parse.Schema, e query.Expr) (map[string]any, error) {
	switch x := e.(type) {
	case query.And:
		l, err := r.list(sch, x.Exprs)
		if err != nil {
			return nil, err
		}
		return map[string]any{"$and": l}, nil
	case query.Or:
		l, err := r.list(sch, x.Exprs)
		if err != nil {
			return nil, err
		}
		return map[string]any{"$or": l}, nil
	case query.Nor:
		l, err := r.list(sch, x.Exprs)
		if err != nil {
			return nil, err
		}
		return map[string]any{"$nor": l}, nil
	case query.Cmp:
		return r.cmp(sch, x)
	case query.In:
		vals := make([]any, len(x.Values))
		for i, v := range x.Values {
			vals[i] = r.value(sch, x.Path, v, x.ArrayElem)
		}
		op := "$in"
		if x.Not {
			op = "$nin"
		}
		return field(x.Path, map[string]any{op: vals}), nil
	case query.All:
		return field(x.Path, map[string]any{"$all": x.Values}), nil
	case query.ContainedBy:
		return field(x.Path, map[string]any{"$containedBy": x.Values}), nil
	case query.Exists:
		return field(x.Path, map[string]any{"$exists": x.Exists}), nil
	case query.Regex:
		c := map[string]any{"$regex": x.Pattern}
		opts := ""
		if x.Flags.CaseInsensitive {
			opts += "i"
		}
		if x.Flags.Multiline {
			opts += "m"
		}
		if x.Flags.DotAll {
			opts += "s"
		}
		if opts != "" {
			c["$options"] = opts
		}
		return field(x.Path, c), nil
	case query.Text:
		return field(x.Path, map[string]any{"$text": map[string]any{"$search": map[string]any{"$term": x.Term, "$language": x.Language}}}), nil
	case query.InQuery:
		sub, err := r.subquery(x.Query)
		if err != nil {
			return nil, err
		}
		if x.Key == parse.FieldObjectID && x.Path.Type == parse.TypePointer {
			op := "$inQuery"
			if x.Not {
				op = "$notInQuery"
			}
			return field(x.Path, map[string]any{op: sub}), nil
		}
		op := "$select"
		if x.Not {
			op = "$dontSelect"
		}
		return field(x.Path, map[string]any{op: map[string]any{"query": sub, "key": x.Key}}), nil
	case query.RelatedTo:
		return r.relatedTo(x)
	case query.RelationHas:
		ptrs := make([]any, len(x.IDs))
		for i, id := range x.IDs {
			ptrs[i] = pointer(x.Class, id)
		}
		switch {
		case x.Not:
			return map[string]any{x.Field: map[string]any{"$nin": ptrs}}, nil
		case len(ptrs) == 1:
			return map[string]any{x.Field: ptrs[0]}, nil
		}
		return map[string]any{x.Field: map[string]any{"$in": ptrs}}, nil
	case query.GeoBox:
		return field(x.Path, map[string]any{"$within": map[string]any{"$box": []any{
			restGeoPoint(x.SWLat, x.SWLng), restGeoPoint(x.NELat, x.NELng)}}}), nil
	case query.GeoNear:
		if x.Sort {
			c := map[string]any{"$nearSphere": restGeoPoint(x.Lat, x.Lng)}
			if x.MaxRadians > 0 {
				c["$maxDistanceInRadians"] = x.MaxRadians
			}
			return field(x.Path, c), nil
		}
		radius := x.MaxRadians
		if radius <= 0 {
			radius = math.Pi
		}
		return field(x.Path, map[string]any{"$geoWithin": map[string]any{
			"$centerSphere": []any{[]any{x.Lng, x.Lat}, radius}}}), nil
	case query.GeoPolygon:
		pts := make([]any, len(x.Points))
		for i, p := range x.Points {
			pts[i] = restGeoPoint(p[0], p[1])
		}
		return field(x.Path, map[string]any{"$geoWithin": map[string]any{"$polygon": pts}}), nil
	}
	return nil, fmt.Errorf("%w: %T", ErrNotRenderable, e)
}

func (r Renderer) subquery(q *query.Query) (map[string]any, error) {
	w, err := r.QueryWhere(q)
	if err != nil {
		return nil, err
	}
	return map[string]any{"className": q.Class, "where": w}, nil
}

// relatedTo renders $relatedTo. The parser makes the owner query an
// objectId equality; the governed scope may add its rules to it, which
// Parse's $relatedTo cannot carry: Owner decides them first.
func (r Renderer) relatedTo(x query.RelatedTo) (map[string]any, error) {
	id, extra := ownerID(x.Owner.Where)
	if id == "" {
		return nil, fmt.Errorf("%w: $relatedTo without an owner objectId", ErrNotRenderable)
	}
	if extra {
		if r.Owner == nil {
			return nil, fmt.Errorf("%w: $relatedTo with constraints on its owner", ErrNotRenderable)
		}
		ok, err := r.Owner(x.Owner)
		if err != nil {
			return nil, err
		}
		if !ok { // the owner is not visible: nothing relates
			return map[string]any{parse.FieldObjectID: map[string]any{"$in": []any{}}}, nil
		}
	}
	return map[string]any{"$relatedTo": map[string]any{"object": pointer(x.Owner.Class, id), "key": x.Field}}, nil
}

// ownerID finds the objectId equality of an owner query; extra reports
// other constraints beside it.
func ownerID(e query.Expr) (id string, extra bool) {
	isID := func(e query.Expr) string {
		if c, ok := e.(query.Cmp); ok && c.Path.Field == parse.FieldObjectID && len(c.Path.Sub) == 0 && c.Op == query.OpEq && !c.ArrayElem {
			s, _ := c.Value.(string)
			return s
		}
		return ""
	}
	if s := isID(e); s != "" {
		return s, false
	}
	if a, ok := e.(query.And); ok {
		for _, sub := range a.Exprs {
			if s := isID(sub); s != "" {
				return s, len(a.Exprs) > 1
			}
		}
	}
	return "", true
}

func (r Renderer) cmp(sch parse.Schema, c query.Cmp) (map[string]any, error) {
	var v any
	if c.Path.Type == parse.TypeArray && len(c.Path.Sub) == 0 && !c.ArrayElem && c.Value != nil {
		s, _ := c.Value.(string) // whole-array equality holds the array's JSON
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			return nil, fmt.Errorf("%w: array value %q", ErrNotRenderable, s)
		}
	} else {
		v = r.value(sch, c.Path, c.Value, c.ArrayElem)
	}
	switch c.Op {
	case query.OpEq:
		if c.ArrayElem && v != nil {
			// "the array holds v": Parse Server on PostgreSQL answers
			// {"tags": v} with an internal error, $all means the same.
			return field(c.Path, map[string]any{"$all": []any{v}}), nil
		}
		// A plain Object value could read as operators: say $eq. A typed
		// value ({"__type":…}) and a scalar are equalities as they are.
		if m, isObj := v.(map[string]any); isObj && m["__type"] == nil {
			return field(c.Path, map[string]any{"$eq": v}), nil
		}
		return field(c.Path, v), nil
	case query.OpNe:
		return field(c.Path, map[string]any{"$ne": v}), nil
	case query.OpLt:
		return field(c.Path, map[string]any{"$lt": v}), nil
	case query.OpLte:
		return field(c.Path, map[string]any{"$lte": v}), nil
	case query.OpGt:
		return field(c.Path, map[string]any{"$gt": v}), nil
	case query.OpGte:
		return field(c.Path, map[string]any{"$gte": v}), nil
	}
	return nil, fmt.Errorf("%w: operator %s", ErrNotRenderable, c.Op)
}

// value turns a storage-form value back into its REST form.
func (r Renderer) value(sch parse.Schema, p query.Path, v any, elem bool) any {
	if v == nil || elem || len(p.Sub) > 0 {
		return v
	}
	s, isStr := v.(string)
	if !isStr {
		return v
	}
	switch p.Type {
	case parse.TypeDate:
		return map[string]any{"__type": "Date", "iso": s}
	case parse.TypePointer:
		return pointer(sch.Fields[p.Field].TargetClass, s)
	case parse.TypeFile:
		return map[string]any{"__type": "File", "name": s}
	case parse.TypeObject:
		var o any
		if json.Unmarshal([]byte(s), &o) == nil {
			return o
		}
	}
	return v
}

func pointer(class string, id any) map[string]any {
	return map[string]any{"__type": "Pointer", "className": class, "objectId": id}
}

func restGeoPoint(lat, lng float64) map[string]any {
	return map[string]any{"__type": "GeoPoint", "latitude": lat, "longitude": lng}
}
