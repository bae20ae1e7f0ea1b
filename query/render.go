package query

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/parsemcp/parsemcp/parse"
)

// Rendering a parsed constraint back into Parse's REST where-language, for
// a backend that passes queries on to Parse Server (store/parserest). The
// result means what the parsed constraint means; Parse Server then
// evaluates it with its own semantics (it is the oracle).

// Renderer renders constraints to REST JSON.
type Renderer struct {
	// Resolve returns a class's schema (the target class of a Pointer
	// comes from it). Required.
	Resolve func(class string) (parse.Schema, error)
	// Owner decides a $relatedTo whose owner query carries more than the
	// owner's id (the governed scope's rules): it reports whether q
	// selects the owner. Nil refuses such a $relatedTo.
	Owner func(q *Query) (bool, error)
}

// ErrNotRenderable is wrapped by the errors of constraints the REST
// where-language cannot express.
var ErrNotRenderable = fmt.Errorf("constraint has no REST form")

// Where renders e, a constraint on class, as a REST where object ({} for
// nil).
func (r Renderer) Where(class string, e Expr) (map[string]any, error) {
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
func (r Renderer) QueryWhere(q *Query) (map[string]any, error) { return r.Where(q.Class, q.Where) }

func (r Renderer) list(sch parse.Schema, es []Expr) ([]any, error) {
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

func field(p Path, v any) map[string]any { return map[string]any{p.String(): v} }

func (r Renderer) expr(sch parse.Schema, e Expr) (map[string]any, error) {
	switch x := e.(type) {
	case And:
		l, err := r.list(sch, x.Exprs)
		if err != nil {
			return nil, err
		}
		return map[string]any{"$and": l}, nil
	case Or:
		l, err := r.list(sch, x.Exprs)
		if err != nil {
			return nil, err
		}
		return map[string]any{"$or": l}, nil
	case Nor:
		l, err := r.list(sch, x.Exprs)
		if err != nil {
			return nil, err
		}
		return map[string]any{"$nor": l}, nil
	case Cmp:
		return r.cmp(sch, x)
	case In:
		vals := make([]any, len(x.Values))
		for i, v := range x.Values {
			vals[i] = r.value(sch, x.Path, v, x.ArrayElem)
		}
		op := "$in"
		if x.Not {
			op = "$nin"
		}
		return field(x.Path, map[string]any{op: vals}), nil
	case All:
		return field(x.Path, map[string]any{"$all": x.Values}), nil
	case ContainedBy:
		return field(x.Path, map[string]any{"$containedBy": x.Values}), nil
	case Exists:
		return field(x.Path, map[string]any{"$exists": x.Exists}), nil
	case Regex:
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
	case InQuery:
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
	case RelatedTo:
		return r.relatedTo(x)
	case RelationHas:
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
	case GeoBox:
		return field(x.Path, map[string]any{"$within": map[string]any{"$box": []any{
			restGeoPoint(x.SWLat, x.SWLng), restGeoPoint(x.NELat, x.NELng)}}}), nil
	case GeoNear:
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
	case GeoPolygon:
		pts := make([]any, len(x.Points))
		for i, p := range x.Points {
			pts[i] = restGeoPoint(p[0], p[1])
		}
		return field(x.Path, map[string]any{"$geoWithin": map[string]any{"$polygon": pts}}), nil
	}
	return nil, fmt.Errorf("%w: %T", ErrNotRenderable, e)
}

func (r Renderer) subquery(q *Query) (map[string]any, error) {
	w, err := r.QueryWhere(q)
	if err != nil {
		return nil, err
	}
	return map[string]any{"className": q.Class, "where": w}, nil
}

// relatedTo renders $relatedTo. The parser makes the owner query an
// objectId equality; the governed scope may add its rules to it, which
// Parse's $relatedTo cannot carry: Owner decides them first.
func (r Renderer) relatedTo(x RelatedTo) (map[string]any, error) {
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
func ownerID(e Expr) (id string, extra bool) {
	isID := func(e Expr) string {
		if c, ok := e.(Cmp); ok && c.Path.Field == parse.FieldObjectID && len(c.Path.Sub) == 0 && c.Op == OpEq && !c.ArrayElem {
			s, _ := c.Value.(string)
			return s
		}
		return ""
	}
	if s := isID(e); s != "" {
		return s, false
	}
	if a, ok := e.(And); ok {
		for _, sub := range a.Exprs {
			if s := isID(sub); s != "" {
				return s, len(a.Exprs) > 1
			}
		}
	}
	return "", true
}

func (r Renderer) cmp(sch parse.Schema, c Cmp) (map[string]any, error) {
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
	case OpEq:
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
	case OpNe:
		return field(c.Path, map[string]any{"$ne": v}), nil
	case OpLt:
		return field(c.Path, map[string]any{"$lt": v}), nil
	case OpLte:
		return field(c.Path, map[string]any{"$lte": v}), nil
	case OpGt:
		return field(c.Path, map[string]any{"$gt": v}), nil
	case OpGte:
		return field(c.Path, map[string]any{"$gte": v}), nil
	}
	return nil, fmt.Errorf("%w: operator %s", ErrNotRenderable, c.Op)
}

// value turns a storage-form value back into its REST form.
func (r Renderer) value(sch parse.Schema, p Path, v any, elem bool) any {
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

// MarshalJSON renders the object with its keys in their order.
func (o *OrderedObject) MarshalJSON() ([]byte, error) {
	if o == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.Keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(o.Values[k])
		if err != nil {
			return nil, err
		}
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
