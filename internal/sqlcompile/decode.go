package sqlcompile

import (
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// ValueCodec is how a backend reads the result columns of a compiled
// pipeline.
type ValueCodec struct {
	// Scalar reads a column-form value of a field type.
	Scalar func(f parse.Field, v any) (parse.Normalized, error)
	// JSON reads a JSON-form value into its generic form (map[string]any,
	// []any, float64, string, bool, nil).
	JSON func(v any) (any, error)
}

// DecodeRow builds a result row from the values of one row of the SELECT
// CompilePipeline rendered (one per p.Output field). A NULL value leaves
// the field out, except a KeepNull field (null). Dates are
// {"__type":"Date","iso":…} (createdAt/updatedAt passing through unchanged
// are bare ISO strings, as Parse renders them); pointers that are still
// pointer fields are Pointer objects; $lookup'd objects look like the rows
// a find returns.
func DecodeRow(p *query.Pipeline, c ValueCodec, vals []any) (map[string]any, error) {
	row := make(map[string]any, len(p.Output))
	for i, f := range p.Output {
		if i >= len(vals) {
			return nil, fmt.Errorf("pipeline row has %d values, want %d", len(vals), len(p.Output))
		}
		v, err := decodeOutput(c, f, vals[i])
		if err != nil {
			return nil, fmt.Errorf("pipeline result field %s: %w", f.Name, err)
		}
		if v == nil {
			if f.KeepNull {
				row[f.Name] = nil
			}
			continue
		}
		row[f.Name] = v
	}
	return row, nil
}

func decodeOutput(c ValueCodec, f query.Field, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	t := f.Type
	if t.JSONForm() {
		j, err := c.JSON(v)
		if err != nil {
			return nil, err
		}
		return restFromJSON(t, j), nil
	}
	pf := parse.Field{Type: t.Kind, TargetClass: t.Target}
	n, err := c.Scalar(pf, v)
	if err != nil {
		return nil, err
	}
	if t.Kind == parse.TypeDate {
		if f.System {
			return parse.FormatDate(n.Time), nil
		}
		return parse.Date(n.Time), nil
	}
	return parse.Denormalize(f.Name, pf, n), nil
}

// restFromJSON converts a value in the JSON normal form of t to its REST
// form.
func restFromJSON(t query.Type, v any) any {
	if v == nil {
		return nil
	}
	switch t.Kind {
	case parse.TypeDate:
		if s, ok := v.(string); ok {
			if d, err := parse.ParseDate(s); err == nil {
				return parse.Date(d)
			}
		}
	case parse.TypePointer:
		if s, ok := v.(string); ok {
			return parse.Pointer(t.Target, s)
		}
	case parse.TypeFile:
		if s, ok := v.(string); ok {
			return parse.File(s, "")
		}
	case parse.TypeBytes:
		if s, ok := v.(string); ok {
			return map[string]any{"__type": "Bytes", "base64": s}
		}
	case parse.TypeGeoPoint:
		if m, ok := v.(map[string]any); ok {
			lat, _ := m["latitude"].(float64)
			lng, _ := m["longitude"].(float64)
			return parse.GeoPoint(lat, lng)
		}
	case parse.TypePolygon:
		if a, ok := v.([]any); ok {
			return map[string]any{"__type": "Polygon", "coordinates": a}
		}
	case parse.TypeArray:
		a, ok := v.([]any)
		if !ok || t.Elem == nil {
			return v
		}
		out := make([]any, len(a))
		for i, e := range a {
			out[i] = restFromJSON(*t.Elem, e)
		}
		return out
	case parse.TypeObject:
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		switch {
		case t.Fields != nil:
			out := make(map[string]any, len(t.Fields))
			for _, f := range t.Fields {
				v, present := m[f.Name]
				switch {
				case v == nil && f.KeepNull && present:
					out[f.Name] = nil
				case v == nil:
				case f.System:
					out[f.Name] = v // createdAt/updatedAt: bare ISO strings
				default:
					if e := restFromJSON(f.Type, v); e != nil {
						out[f.Name] = e
					}
				}
			}
			return out
		case t.Class != nil:
			return classObject(t.Class, m)
		}
	}
	return v
}

// classObject renders an object of class s (JSON normal form) as a find
// returns it.
func classObject(s *parse.Schema, m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for _, f := range query.ClassFields(*s) {
		v := m[f.Name]
		if v == nil {
			continue
		}
		if f.System {
			out[f.Name] = v // createdAt/updatedAt: bare ISO strings
			continue
		}
		if e := restFromJSON(f.Type, v); e != nil {
			out[f.Name] = e
		}
	}
	return out
}
