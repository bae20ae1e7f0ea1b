package query

import (
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// $unwind: one row per element of an Array field.

// UnwindStage emits one row per element of an Array field.
type UnwindStage struct {
	stageOut
	Field      string
	Preserve   bool   // preserveNullAndEmptyArrays
	IndexField string // includeArrayIndex ("": none)
	Elem       Type
}

func (UnwindStage) Name() string { return "$unwind" }

func (p *pipeParser) unwind(arg any, at string) (Stage, error) {
	st := &UnwindStage{}
	path := arg
	pat := at
	if keys, m, ok := asObject(arg); ok {
		path = m["path"]
		pat = at + ".path"
		for _, k := range keys {
			kat := at + "." + k
			switch k {
			case "path":
			case "preserveNullAndEmptyArrays":
				b, ok := m[k].(bool)
				if !ok {
					return nil, errAt(kat, "takes true or false, got %s", describeAny(m[k]))
				}
				st.Preserve = b
			case "includeArrayIndex":
				s, ok := m[k].(string)
				if !ok {
					return nil, errAt(kat, "takes a field name, got %s", describeAny(m[k]))
				}
				name, err := outName(s, kat)
				if err != nil {
					return nil, err
				}
				st.IndexField = name
			default:
				return nil, errAt(kat, "unknown option %q (use path, preserveNullAndEmptyArrays, includeArrayIndex)", k)
			}
		}
	}
	s, ok := path.(string)
	if !ok || !strings.HasPrefix(s, "$") {
		return nil, errAt(pat, "takes a field reference like \"$tags\", got %s", describeAny(path))
	}
	if strings.Contains(s, ".") {
		return nil, errAt(pat, "unwinding a path inside an object (%s) is not supported; unwind a top-level Array field", s)
	}
	op, err := p.ref(s, pat)
	if err != nil {
		return nil, err
	}
	if op.Type.Kind != parse.TypeArray {
		return nil, errAt(pat, "%s is a %s field; $unwind applies to Array fields", s, op.Type.Kind)
	}
	if st.IndexField == op.Ref {
		return nil, errAt(at+".includeArrayIndex", "the index field cannot be the unwound field")
	}
	st.Field = op.Ref
	st.Elem = Type{Kind: TypeJSON}
	if op.Type.Elem != nil {
		st.Elem = op.Type.Elem.fromJSON()
	}
	var out []Field
	for _, f := range p.shape {
		switch f.Name {
		case st.Field:
			out = append(out, Field{Name: f.Name, Type: st.Elem})
		case st.IndexField:
		default:
			out = append(out, f)
		}
	}
	if st.IndexField != "" {
		out = append(out, Field{Name: st.IndexField, Type: Type{Kind: parse.TypeNumber}})
	}
	st.fields = out
	p.base = false
	return st, nil
}
