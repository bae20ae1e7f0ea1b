package query

import (
	"maps"

	"github.com/parsemcp/parsemcp/parse"
)

// $graphLookup: a recursive $lookup.

// MaxGraphDepth bounds $graphLookup's maxDepth; it is the depth searched
// when maxDepth is left out.
const MaxGraphDepth = 10

// GraphLookupStage adds to each row the Array of From's objects reached
// from the row's Start value: those whose ConnectTo equals it (depth 0),
// then those whose ConnectTo equals a found object's ConnectFrom (depth
// 1), and so on up to MaxDepth. Each object appears once (at the least
// depth it is reached at), ordered by objectId.
type GraphLookupStage struct {
	stageOut
	From        parse.Schema
	Start       Operand
	ConnectFrom string
	ConnectTo   string
	As          string
	MaxDepth    int
	DepthField  string // "": none
	// Restrict is restrictSearchWithMatch, parsed against From.
	Restrict Expr
	// Filter, when set, is an extra constraint on From's rows: the
	// governed scope's row rules for that class. The read ACL passed to
	// the store applies as well.
	Filter Expr
	// elem is the class of the found objects (From, with DepthField).
	elem parse.Schema
}

func (GraphLookupStage) Name() string { return "$graphLookup" }

// Found is the class of the found objects: From, with DepthField (a
// Number) when set.
func (s *GraphLookupStage) Found() parse.Schema { return s.elem }

// graphKind is the class of values that connect: ids (String, Pointer) or
// Numbers.
func graphKind(t Type) string {
	switch t.Kind {
	case parse.TypeString, parse.TypePointer:
		return "an objectId or String"
	case parse.TypeNumber:
		return "a Number"
	}
	return ""
}

func (p *pipeParser) graphLookup(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok {
		return nil, errAt(at, `takes {"from": <class>, "startWith": "$field", "connectFromField": <field>, "connectToField": <field>, "as": <name>}, got %s`, describeAny(arg))
	}
	for _, k := range keys {
		switch k {
		case "from", "startWith", "connectFromField", "connectToField", "as", "maxDepth", "depthField", "restrictSearchWithMatch":
		default:
			return nil, errAt(at+"."+k, "unknown option %q (use from, startWith, connectFromField, connectToField, as, maxDepth, depthField, restrictSearchWithMatch)", k)
		}
	}
	str := func(k string) (string, error) {
		s, ok := m[k].(string)
		if !ok || s == "" {
			return "", errAt(at+"."+k, "$graphLookup needs %s as a string, got %s", k, describeAny(m[k]))
		}
		return s, nil
	}
	from, err := str("from")
	if err != nil {
		return nil, err
	}
	fs, err := p.resolveClass(from, at+".from")
	if err != nil {
		return nil, err
	}
	st := &GraphLookupStage{From: fs, MaxDepth: MaxGraphDepth}
	if _, ok := m["startWith"]; !ok {
		return nil, errAt(at, "needs startWith: the value to start from (\"$field\")")
	}
	if st.Start, err = p.operand(m["startWith"], at+".startWith", true); err != nil {
		return nil, err
	}
	kind := graphKind(st.Start.Type)
	if kind == "" {
		return nil, errAt(at+".startWith", "%s is a %s value; $graphLookup starts from an objectId, a String, a Pointer or a Number (to start from each element of an Array, $unwind it first)", describeOperand(st.Start), st.Start.Type.Kind)
	}
	fp, err := p.child(fs, ClassFields(fs), true, true, at)
	if err != nil {
		return nil, err
	}
	connect := func(k string) (string, error) {
		s, err := str(k)
		if err != nil {
			return "", err
		}
		op, err := fp.keyRef(s, at+"."+k)
		if err != nil {
			return "", err
		}
		if len(op.Sub) > 0 || graphKind(op.Type) != kind {
			return "", errAt(at+"."+k, "%s is %s of %s; startWith is %s, so connect %s fields (or _id)", s, describeType(op.Type), from, kind, kind)
		}
		return op.Ref, nil
	}
	if st.ConnectFrom, err = connect("connectFromField"); err != nil {
		return nil, err
	}
	if st.ConnectTo, err = connect("connectToField"); err != nil {
		return nil, err
	}
	as, err := str("as")
	if err != nil {
		return nil, err
	}
	if st.As, err = outName(as, at+".as"); err != nil {
		return nil, err
	}
	if st.As == parse.FieldObjectID {
		return nil, errAt(at+".as", "cannot replace objectId")
	}
	if v, ok := m["maxDepth"]; ok {
		f, isNum := v.(float64)
		if !isNum || f != float64(int(f)) || f < 0 || f > MaxGraphDepth {
			return nil, errAt(at+".maxDepth", "takes an integer from 0 to %d (the cap of this server), got %s", MaxGraphDepth, describeAny(v))
		}
		st.MaxDepth = int(f)
	}
	st.elem = fs
	if v, ok := m["depthField"]; ok {
		s, isStr := v.(string)
		if !isStr {
			return nil, errAt(at+".depthField", "takes a field name, got %s", describeAny(v))
		}
		name, err := outName(s, at+".depthField")
		if err != nil {
			return nil, err
		}
		if parse.IsSystemField(name) {
			return nil, errAt(at+".depthField", "cannot replace %s", name)
		}
		st.DepthField = name
		st.elem.Fields = maps.Clone(fs.Fields)
		st.elem.Fields[name] = parse.Field{Type: parse.TypeNumber}
	}
	if v, ok := m["restrictSearchWithMatch"]; ok {
		ms, err := fp.match(v, at+".restrictSearchWithMatch")
		if err != nil {
			return nil, err
		}
		st.Restrict = ms.(*MatchStage).Where
	}
	elem := Type{Kind: parse.TypeObject, Class: &st.elem}
	st.fields = setField(p.shape, Field{Name: st.As, Type: Type{Kind: parse.TypeArray, Elem: &elem}})
	p.base = false
	return st, nil
}
