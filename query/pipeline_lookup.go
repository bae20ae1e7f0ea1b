package query

import (
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// $lookup: the objects of another class whose field equals a row's value.

// LookupStage adds to each row the array of From's objects whose
// ForeignField equals the row's Local value (ordered by objectId).
type LookupStage struct {
	stageOut
	From         parse.Schema
	Local        Operand
	ForeignField string
	ForeignType  Type
	As           string
	// Filter, when set, is an extra constraint on From's rows (parsed
	// against From's schema): the governed scope's row rules for that
	// class. The read ACL passed to the store applies as well.
	Filter Expr
}

func (LookupStage) Name() string { return "$lookup" }

func (p *pipeParser) lookup(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok {
		return nil, errAt(at, "takes {\"from\": <class>, \"localField\": <field>, \"foreignField\": \"_id\", \"as\": <name>}, got %s", describeAny(arg))
	}
	for _, k := range keys {
		switch k {
		case "from", "localField", "foreignField", "as":
		case "let", "pipeline":
			return nil, errAt(at+"."+k, "the pipeline form of $lookup is not supported; use from, localField, foreignField and as")
		default:
			return nil, errAt(at+"."+k, "unknown option %q (use from, localField, foreignField, as)", k)
		}
	}
	str := func(k string) (string, error) {
		s, ok := m[k].(string)
		if !ok || s == "" {
			return "", errAt(at+"."+k, "$lookup needs %s as a string, got %s", k, describeAny(m[k]))
		}
		return s, nil
	}
	from, err := str("from")
	if err != nil {
		return nil, err
	}
	local, err := str("localField")
	if err != nil {
		return nil, err
	}
	foreign, err := str("foreignField")
	if err != nil {
		return nil, err
	}
	as, err := str("as")
	if err != nil {
		return nil, err
	}
	fs, err := p.resolveClass(from, at+".from")
	if err != nil {
		return nil, err
	}
	st := &LookupStage{From: fs}
	lop, err := p.keyRef(local, at+".localField")
	if err != nil {
		return nil, err
	}
	switch lop.Type.Kind {
	case parse.TypePointer, parse.TypeString:
	default:
		return nil, errAt(at+".localField", "%q is a %s value; $lookup matches a Pointer or an objectId (String)", local, lop.Type.Kind)
	}
	st.Local = lop
	ff := strings.TrimPrefix(foreign, "$")
	switch {
	case ff == "_id" || ff == parse.FieldObjectID:
		ff = parse.FieldObjectID
		st.ForeignType = Type{Kind: parse.TypeString}
		if lop.Type.Kind == parse.TypePointer && lop.Type.Target != from {
			return nil, errAt(at+".localField", "%q points to %s, not %s", local, lop.Type.Target, from)
		}
	default:
		f, ok := fs.Fields[ff]
		if !ok {
			prefix := ""
			if ff != foreign {
				prefix = "$"
			}
			return nil, DenyField(fs, ff, at+".foreignField", prefix)
		}
		if f.Type != parse.TypePointer && f.Type != parse.TypeString {
			return nil, errAt(at+".foreignField", "foreignField is _id (objectId) or a Pointer or String field of %s; %q is not", from, foreign)
		}
		if f.Type == parse.TypePointer && lop.Type.Kind == parse.TypePointer && f.TargetClass != lop.Type.Target {
			return nil, errAt(at+".foreignField", "%q points to %s but %q points to %s", foreign, f.TargetClass, local, lop.Type.Target)
		}
		st.ForeignType = fieldType(f)
	}
	st.ForeignField = ff
	name, err := outName(as, at+".as")
	if err != nil {
		return nil, err
	}
	if name == parse.FieldObjectID {
		return nil, errAt(at+".as", "cannot replace objectId")
	}
	st.As = name
	cls := fs
	elem := Type{Kind: parse.TypeObject, Class: &cls}
	st.fields = setField(p.shape, Field{Name: name, Type: Type{Kind: parse.TypeArray, Elem: &elem}})
	p.base = false
	return st, nil
}

// classError is the *Error of a $lookup.from the resolver refused, still
// wrapping the resolver's error (errors.Is finds it; errors.As finds the
// *Error).
type classError struct {
	qe    *Error
	cause error
}

func (e *classError) Error() string   { return e.qe.Error() }
func (e *classError) Unwrap() []error { return []error{e.qe, e.cause} }
