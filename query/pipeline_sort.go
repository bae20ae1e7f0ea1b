package query

import "github.com/parsemcp/parsemcp/parse"

// $sort: rows ordered by fields and typed paths.

// SortStage orders rows; ties keep their previous order.
type SortStage struct {
	stageOut
	Keys []SortKey
}

// SortKey is one sort key: a field, or a typed path inside one.
type SortKey struct {
	Field string
	Sub   []string
	Type  Type
	Desc  bool
}

func (SortStage) Name() string { return "$sort" }

func (p *pipeParser) sort(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok || len(keys) == 0 {
		return nil, errAt(at, "takes an object of fields to 1 (ascending) or -1 (descending), got %s", describeAny(arg))
	}
	if _, isMap := arg.(map[string]any); isMap && len(keys) > 1 {
		return nil, errAt(at, "a $sort with several keys needs their order, which this form of the pipeline lost; pass the pipeline as JSON text, or use one $sort stage per key, least significant first (ties keep the previous order)")
	}
	if len(keys) > maxSortKeys {
		return nil, errAt(at, "at most %d sort keys", maxSortKeys)
	}
	st := &SortStage{stageOut: stageOut{p.shape}}
	for _, k := range keys {
		kat := at + "." + k
		var desc bool
		switch v := m[k].(type) {
		case float64:
			switch v {
			case 1:
			case -1:
				desc = true
			default:
				return nil, errAt(kat, "sort direction is 1 or -1, got %v", v)
			}
		default:
			return nil, errAt(kat, "sort direction is 1 or -1, got %s", describeAny(v))
		}
		op, err := p.named(k, "$"+k, kat, "")
		if err != nil {
			return nil, err
		}
		ks, err := sortKeys(op, desc, kat)
		if err != nil {
			return nil, err
		}
		st.Keys = append(st.Keys, ks...)
	}
	if len(st.Keys) > maxSortKeys {
		return nil, errAt(at, "at most %d sort keys", maxSortKeys)
	}
	return st, nil
}

func sortKeys(op Operand, desc bool, at string) ([]SortKey, error) {
	t := op.Type
	switch {
	case t.scalar(), t.Kind == TypeJSON:
		return []SortKey{{Field: op.Ref, Sub: op.Sub, Type: t, Desc: desc}}, nil
	case t.Kind == parse.TypeFile && !t.JSON:
		return []SortKey{{Field: op.Ref, Sub: op.Sub, Type: t, Desc: desc}}, nil
	case t.Kind == parse.TypeObject && t.Fields != nil:
		// A composite key sorts component by component, as MongoDB
		// compares embedded documents.
		var out []SortKey
		for _, c := range t.Fields {
			sub := append(append([]string(nil), op.Sub...), c.Name)
			ks, err := sortKeys(Operand{Ref: op.Ref, Sub: sub, Type: c.Type}, desc, at)
			if err != nil {
				return nil, err
			}
			out = append(out, ks...)
		}
		return out, nil
	}
	return nil, errAt(at, "cannot sort by a %s value; sort by a path inside it or by a scalar field", t.Kind)
}
