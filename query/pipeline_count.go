package query

import "github.com/parsemcp/parsemcp/parse"

// $count: one row holding the number of rows.

// CountStage replaces the rows with one row {Name: count} (none when
// there are no rows).
type CountStage struct {
	stageOut
	Field string
}

func (CountStage) Name() string { return "$count" }

func (p *pipeParser) count(arg any, at string) (Stage, error) {
	s, ok := arg.(string)
	if !ok {
		return nil, errAt(at, "takes the name of the count field, got %s", describeAny(arg))
	}
	if s == "_id" || s == parse.FieldObjectID {
		return nil, errAt(at, "the count field cannot be named %s", s)
	}
	name, err := outName(s, at)
	if err != nil {
		return nil, err
	}
	st := &CountStage{Field: name}
	st.fields = []Field{{Name: name, Type: Type{Kind: parse.TypeNumber}}}
	p.base = false
	p.classRows = false
	return st, nil
}
