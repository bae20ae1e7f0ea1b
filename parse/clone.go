package parse

import "reflect"

// Clone returns a deep copy of s, so a caller changing the schema it was
// handed cannot change a cache it came from.
func (s Schema) Clone() Schema {
	out := s
	if s.Fields != nil {
		out.Fields = make(map[string]Field, len(s.Fields))
		for k, f := range s.Fields {
			f.DefaultValue = CloneJSON(f.DefaultValue)
			out.Fields[k] = f
		}
	}
	out.Indexes = CloneIndexes(s.Indexes)
	out.CLP = s.CLP.Clone()
	return out
}

// CloneIndexes returns a deep copy of a schema's indexes.
func CloneIndexes(idx map[string]map[string]int) map[string]map[string]int {
	if idx == nil {
		return nil
	}
	out := make(map[string]map[string]int, len(idx))
	for name, keys := range idx {
		var k map[string]int
		if keys != nil {
			k = make(map[string]int, len(keys))
			for f, dir := range keys {
				k[f] = dir
			}
		}
		out[name] = k
	}
	return out
}

// Clone returns a deep copy of c.
func (c CLP) Clone() CLP {
	out := c
	for _, p := range []**OpPerm{&out.Get, &out.Find, &out.Count, &out.Create, &out.Update, &out.Delete, &out.AddField} {
		*p = cloneOpPerm(*p)
	}
	if c.ProtectedFields != nil {
		out.ProtectedFields = make(map[string][]string, len(c.ProtectedFields))
		for k, v := range c.ProtectedFields {
			out.ProtectedFields[k] = cloneStrings(v)
		}
	}
	out.ReadUserFields = cloneStrings(c.ReadUserFields)
	out.WriteUserFields = cloneStrings(c.WriteUserFields)
	return out
}

func cloneOpPerm(p *OpPerm) *OpPerm {
	if p == nil {
		return nil
	}
	q := *p
	if p.Entries != nil {
		q.Entries = make(map[string]bool, len(p.Entries))
		for k, v := range p.Entries {
			q.Entries[k] = v
		}
	}
	q.PointerFields = cloneStrings(p.PointerFields)
	return &q
}

func cloneStrings(a []string) []string {
	if a == nil {
		return nil
	}
	return append(make([]string, 0, len(a)), a...)
}

// CloneJSON deep-copies a decoded JSON value.
func CloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = CloneJSON(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = CloneJSON(e)
		}
		return a
	}
	return v
}

// closeRing returns a Polygon's coordinates with the first point repeated
// last when the caller left the ring open, as Parse Server stores polygons.
func closeRing(coords any) any {
	pts, ok := coords.([]any)
	if !ok || len(pts) == 0 || reflect.DeepEqual(pts[0], pts[len(pts)-1]) {
		return coords
	}
	return append(append(make([]any, 0, len(pts)+1), pts...), pts[0])
}
