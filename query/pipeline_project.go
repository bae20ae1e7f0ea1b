package query

import (
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
)

// $project, $addFields ($set) and $unset: the fields of each row reshaped.

// ProjectStage reshapes rows: $project, $addFields ($set) and $unset all
// become the list of output fields with the value each one takes.
type ProjectStage struct {
	stageOut
	Op     string
	Fields []ProjectField
}

// ProjectField is one output field of a ProjectStage.
type ProjectField struct {
	Field Field
	Value Operand
}

func (s ProjectStage) Name() string {
	return s.Op
}

func (p *pipeParser) project(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok || len(keys) == 0 {
		return nil, errAt(at, "takes a non-empty object of fields to 1 (include), 0 (exclude) or a value (\"$field\", {\"$year\": …}, {\"$literal\": …}), got %s", describeAny(arg))
	}
	if len(keys) > maxStageFields {
		return nil, errAt(at, "at most %d fields", maxStageFields)
	}
	type entry struct {
		name    string
		include bool
		exclude bool
		value   *Operand
	}
	var entries []entry
	includes, excludes := 0, 0
	idExcluded := false
	seen := map[string]bool{}
	for _, k := range keys {
		kat := at + "." + k
		name, err := p.keyName(k, kat)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, errAt(kat, "%s is given twice (_id and objectId name the same field)", name)
		}
		seen[name] = true
		e := entry{name: name}
		switch v := m[k].(type) {
		case bool:
			e.include, e.exclude = v, !v
		case float64:
			switch v {
			case 1:
				e.include = true
			case 0:
				e.exclude = true
			default:
				return nil, errAt(kat, "use 1 to include, 0 to exclude, or {\"$literal\": %v} for a constant", v)
			}
		default:
			op, err := p.operand(v, kat, false)
			if err != nil {
				return nil, err
			}
			if selfRef(op, name) {
				e.include = true
			} else {
				e.value = &op
			}
		}
		if e.include || e.exclude {
			if _, ok := p.field(name); !ok {
				if e.exclude && name == parse.FieldObjectID {
					idExcluded = true
					continue
				}
				return nil, p.unknownField(name, kat, "")
			}
		}
		switch {
		case e.exclude && name == parse.FieldObjectID:
			idExcluded = true
			continue
		case e.exclude:
			excludes++
		default:
			includes++
		}
		if includes > 0 && excludes > 0 {
			return nil, errAt(kat, "cannot mix inclusion and exclusion in one $project (only objectId may be excluded among included fields)")
		}
		entries = append(entries, e)
	}
	var fields []ProjectField
	if includes == 0 {
		// Exclusion mode (or only objectId excluded).
		drop := map[string]bool{}
		for _, e := range entries {
			drop[e.name] = true
		}
		if idExcluded {
			drop[parse.FieldObjectID] = true
		}
		for _, f := range p.shape {
			if !drop[f.Name] {
				fields = append(fields, keep(f))
			}
		}
	} else {
		if f, ok := p.field(parse.FieldObjectID); ok && !idExcluded && !seen[parse.FieldObjectID] {
			fields = append(fields, keep(f))
		}
		for _, e := range entries {
			if e.include {
				f, _ := p.field(e.name)
				fields = append(fields, keep(f))
				continue
			}
			fields = append(fields, computed(e.name, *e.value))
		}
	}
	st := &ProjectStage{Op: "$project", Fields: fields}
	st.fields = projectOut(fields)
	p.base = false
	p.classRows = false
	return st, nil
}

func keep(f Field) ProjectField {
	return ProjectField{Field: f, Value: Operand{Ref: f.Name, Type: f.Type}}
}

func computed(name string, op Operand) ProjectField {
	return ProjectField{Field: Field{Name: name, Type: op.Type}, Value: op}
}

// selfRef reports whether op is the plain reference "$name" (which keeps
// the field as it is).
func selfRef(op Operand, name string) bool {
	return op.Ref == name && len(op.Sub) == 0 && op.Op == "" && !op.IsConst
}

func projectOut(fields []ProjectField) []Field {
	out := make([]Field, len(fields))
	for i, f := range fields {
		out[i] = f.Field
	}
	return out
}

func (p *pipeParser) addFields(op string, arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok || len(keys) == 0 {
		return nil, errAt(at, "takes a non-empty object of fields to values (\"$field\", a constant, {\"$year\": …}), got %s", describeAny(arg))
	}
	if len(keys) > maxStageFields {
		return nil, errAt(at, "at most %d fields", maxStageFields)
	}
	fields := make([]ProjectField, 0, len(p.shape)+len(keys))
	for _, f := range p.shape {
		fields = append(fields, keep(f))
	}
	for _, k := range keys {
		kat := at + "." + k
		name, err := p.keyName(k, kat)
		if err != nil {
			return nil, err
		}
		val, err := p.operand(m[k], kat, true)
		if err != nil {
			return nil, err
		}
		pf := computed(name, val)
		if f, ok := p.field(name); ok && selfRef(val, name) {
			pf = keep(f)
		}
		replaced := false
		for i := range fields {
			if fields[i].Field.Name == name {
				fields[i], replaced = pf, true
				break
			}
		}
		if !replaced {
			fields = append(fields, pf)
		}
	}
	st := &ProjectStage{Op: op, Fields: fields}
	st.fields = projectOut(fields)
	p.base = false
	return st, nil
}

func (p *pipeParser) unset(arg any, at string) (Stage, error) {
	var names []string
	switch v := arg.(type) {
	case string:
		names = []string{v}
	case []any:
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, errAt(fmt.Sprintf("%s[%d]", at, i), "expected a field name, got %s", describeAny(e))
			}
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return nil, errAt(at, "takes a field name or a non-empty array of field names, got %s", describeAny(arg))
	}
	drop := map[string]bool{}
	for i, n := range names {
		nat := at
		if _, isArr := arg.([]any); isArr {
			nat = fmt.Sprintf("%s[%d]", at, i)
		}
		name, err := p.keyName(n, nat)
		if err != nil {
			return nil, err
		}
		if _, ok := p.field(name); !ok {
			return nil, p.unknownField(name, nat, "")
		}
		drop[name] = true
	}
	var fields []ProjectField
	for _, f := range p.shape {
		if !drop[f.Name] {
			fields = append(fields, keep(f))
		}
	}
	st := &ProjectStage{Op: "$unset", Fields: fields}
	st.fields = projectOut(fields)
	p.base = false
	p.classRows = false
	return st, nil
}
