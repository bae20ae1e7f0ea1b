package query

import (
	"math"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// $group and $sortByCount: rows grouped by a key, with accumulators.

// GroupStage groups rows by Key (one value) or by Components (a composite
// key), computing Accumulators per group. A constant Key (nil Ref, no
// operator) makes one group of every row.
type GroupStage struct {
	stageOut
	Key          *Operand
	Components   []GroupComponent
	Accumulators []Accumulator
}

// GroupComponent is one named part of a composite group key.
type GroupComponent struct {
	Name  string
	Value Operand
}

// Accumulator computes one output field of a group.
type Accumulator struct {
	Name string
	Op   string   // "$sum", "$avg", "$min", "$max", "$count", "$first", "$last", "$push", "$addToSet"
	Arg  *Operand // nil for $count and for a constant $sum
	// Factor is the constant a constant $sum adds per row.
	Factor float64
	Type   Type
}

func (GroupStage) Name() string { return "$group" }

var accumulators = map[string]bool{
	"$sum": true, "$avg": true, "$min": true, "$max": true, "$count": true,
	"$first": true, "$last": true, "$push": true, "$addToSet": true,
}

func (p *pipeParser) group(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok {
		return nil, errAt(at, "takes an object {\"_id\": <key>, <field>: {<accumulator>: …}}, got %s", describeAny(arg))
	}
	idv, ok := m["_id"]
	if !ok {
		return nil, errAt(at, "needs an _id: the grouping key (null puts every row in one group)")
	}
	if len(keys) > maxStageFields {
		return nil, errAt(at, "at most %d output fields", maxStageFields)
	}
	st := &GroupStage{}
	kat := at + "._id"
	var keyType Type
	ikeys, im, isObj := asObject(idv)
	switch {
	case isObj && len(ikeys) == 0:
		return nil, errAt(kat, "an empty key object; use null to group every row together")
	case isObj && !strings.HasPrefix(ikeys[0], "$") && parse.TypeOf(plain(idv)) == "":
		comps := make([]Field, 0, len(ikeys))
		for _, k := range ikeys {
			cat := kat + "." + k
			if strings.HasPrefix(k, "$") {
				return nil, errAt(cat, "operator %s mixed with key names; a composite key maps names to values", k)
			}
			if !validSubKey(k) {
				return nil, errAt(cat, "invalid key name %q", k)
			}
			op, err := p.operand(im[k], cat, true)
			if err != nil {
				return nil, err
			}
			if err := groupable(op.Type, cat); err != nil {
				return nil, err
			}
			op.Type = op.Type.groupValue()
			st.Components = append(st.Components, GroupComponent{Name: k, Value: op})
			comps = append(comps, Field{Name: k, Type: op.Type.KeyValue()})
		}
		keyType = Type{Kind: parse.TypeObject, Fields: comps}
	default:
		op, err := p.operand(idv, kat, true)
		if err != nil {
			return nil, err
		}
		if err := groupable(op.Type, kat); err != nil {
			return nil, err
		}
		op.Type = op.Type.groupValue()
		st.Key = &op
		keyType = op.Type.KeyValue()
	}
	out := []Field{{Name: parse.FieldObjectID, Type: keyType, KeepNull: true}}
	for _, name := range keys {
		if name == "_id" {
			continue
		}
		fat := at + "." + name
		if name == parse.FieldObjectID {
			return nil, errAt(fat, "objectId is the group key (_id); name the field otherwise")
		}
		if _, err := p.keyName(name, fat); err != nil {
			return nil, err
		}
		acc, err := p.accumulator(name, m[name], fat)
		if err != nil {
			return nil, err
		}
		st.Accumulators = append(st.Accumulators, acc)
		out = append(out, Field{Name: name, Type: acc.Type})
	}
	st.fields = out
	p.base = false
	p.classRows = false
	return st, nil
}

func groupable(t Type, at string) error {
	switch t.Kind {
	case parse.TypeRelation, parse.TypeACL:
		return errAt(at, "cannot group by a %s", t.Kind)
	}
	return nil
}

func (p *pipeParser) accumulator(name string, v any, at string) (Accumulator, error) {
	keys, m, ok := asObject(v)
	if !ok || len(keys) != 1 {
		return Accumulator{}, errAt(at, "an output field of $group is {<accumulator>: <value>} with one of $sum, $avg, $min, $max, $count, $first, $last, $push, $addToSet; got %s", describeAny(v))
	}
	op := keys[0]
	oat := at + "." + op
	arg := m[op]
	acc := Accumulator{Name: name, Op: op}
	if !accumulators[op] {
		if unsupportedAccumulators[op] {
			return acc, errAt(oat, "accumulator %s is not supported (supported: $sum, $avg, $min, $max, $count, $first, $last, $push, $addToSet)", op)
		}
		return acc, errAt(oat, "unknown accumulator %s (supported: $sum, $avg, $min, $max, $count, $first, $last, $push, $addToSet)", op)
	}
	if op == "$count" {
		if ck, _, ok := asObject(arg); !ok || len(ck) != 0 {
			return acc, errAt(oat, "$count takes an empty object: {\"$count\": {}}")
		}
		acc.Type = Type{Kind: parse.TypeNumber}
		return acc, nil
	}
	if op == "$sum" {
		if f, ok := arg.(float64); ok {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return acc, errAt(oat, "not a finite number")
			}
			acc.Factor = f
			acc.Type = Type{Kind: parse.TypeNumber}
			return acc, nil
		}
	}
	operand, err := p.operand(arg, oat, op == "$push" || op == "$addToSet" || op == "$first" || op == "$last")
	if err != nil {
		return acc, err
	}
	t := operand.Type
	switch op {
	case "$sum", "$avg":
		if t.Kind != parse.TypeNumber {
			return acc, errAt(oat, "%s takes a Number value (or, for $sum, a number constant like 1); %s is a %s", op, describeOperand(operand), t.Kind)
		}
		acc.Type = Type{Kind: parse.TypeNumber}
	case "$min", "$max":
		if !t.scalar() {
			return acc, errAt(oat, "%s takes a String, Number, Boolean, Date or Pointer value; %s is a %s", op, describeOperand(operand), t.Kind)
		}
		acc.Type = t.groupValue()
	case "$first", "$last":
		acc.Type = t.groupValue()
	case "$push":
		et := t.groupValue()
		acc.Type = Type{Kind: parse.TypeArray, Elem: &et}
	case "$addToSet":
		et := t.KeyValue()
		acc.Type = Type{Kind: parse.TypeArray, Elem: &et}
	}
	acc.Arg = &operand
	return acc, nil
}

func (p *pipeParser) sortByCount(arg any, at string) ([]Stage, error) {
	op, err := p.operand(arg, at, false)
	if err != nil {
		return nil, err
	}
	if err := groupable(op.Type, at); err != nil {
		return nil, err
	}
	op.Type = op.Type.groupValue()
	num := Type{Kind: parse.TypeNumber}
	g := &GroupStage{Key: &op, Accumulators: []Accumulator{{Name: "count", Op: "$sum", Factor: 1, Type: num}}}
	g.fields = []Field{{Name: parse.FieldObjectID, Type: op.Type.KeyValue(), KeepNull: true}, {Name: "count", Type: num}}
	s := &SortStage{Keys: []SortKey{{Field: "count", Type: num, Desc: true}}}
	s.fields = g.fields
	p.base = false
	p.classRows = false
	return []Stage{g, s}, nil
}
