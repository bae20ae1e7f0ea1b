package query

import (
	"maps"
	"strings"

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
	fp, err := p.child(fs, classFields(fs), true, at)
	if err != nil {
		return nil, err
	}
	connect := func(k string) (string, error) {
		s, err := str(k)
		if err != nil {
			return "", err
		}
		op, err := fp.ref("$"+strings.TrimPrefix(s, "$"), at+"."+k)
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

// graphLookup renders the search as a recursive CTE over the governed
// rows of From: (root row, object, depth), at most MaxDepth+1 levels, each
// object kept at its least depth.
func (c *pcompiler) graphLookup(s *GraphLookupStage, prev string, in []Field) string {
	where := AndOf(s.Filter, s.Restrict)
	body := "SELECT * FROM " + c.d.Ident(s.From.ClassName)
	if w := c.b.Where(&Query{Where: where, ReadACL: c.readACL}); w != "" {
		body += " WHERE " + w
	}
	cand := c.cte(body)
	id := c.d.Ident(parse.FieldObjectID)
	to, from := c.d.Ident(s.ConnectTo), c.d.Ident(s.ConnectFrom)
	start := c.operand(s.Start, "p")
	maxDepth := "CAST(" + c.b.Param(int64(s.MaxDepth)) + " AS BIGINT)"
	found := c.recursiveCTE([]string{"root", "id", "depth"}, func(self string) string {
		return "SELECT " + c.col("p", ordCol) + ", f." + id + ", CAST(0 AS BIGINT) FROM " + prev + " AS p JOIN " + cand + " AS f ON f." + to + " = " + start +
			" UNION SELECT r.root, f." + id + ", r.depth + 1 FROM " + self + " AS r JOIN " + cand + " AS g ON g." + id + " = r.id JOIN " +
			cand + " AS f ON f." + to + " = g." + from + " WHERE r.depth < " + maxDepth
	})
	least := c.cte("SELECT root, id, min(depth) AS depth FROM " + found + " GROUP BY root, id")
	fields := classFields(s.elem)
	keys := make([]string, len(fields))
	vals := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = c.b.Param(f.Name)
		if f.Name == s.DepthField {
			vals[i] = c.d.ToJSON(c.d.Number("r.depth"), f.Type)
			continue
		}
		vals[i] = c.d.ToJSON(c.col("f", f.Name), f.Type)
	}
	sub := "(SELECT " + c.d.JSONArrayAgg(c.d.JSONObject(keys, vals), "", "f."+id+" ASC") +
		" FROM " + least + " AS r JOIN " + cand + " AS f ON f." + id + " = r.id WHERE r.root = " + c.col("p", ordCol) + ")"
	return c.joinArray(s.out(), s.As, sub, prev)
}
