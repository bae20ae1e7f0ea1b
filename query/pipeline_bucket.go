package query

import (
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
)

// $bucket and $bucketAuto: $group by ranges of a value.

const (
	// MaxBuckets bounds $bucket's boundaries and $bucketAuto's buckets.
	MaxBuckets = 100
)

// BucketStage groups rows by the range [Boundaries[i], Boundaries[i+1])
// their By value falls in; the group's objectId is the range's lower
// boundary, or Default for a value outside every range, of another type,
// or missing. Groups come out in ascending objectId order.
type BucketStage struct {
	stageOut
	// Group is the $group the stage runs: its Key is the bucket of By.
	Group *GroupStage
}

// BucketKey is the bucket a value falls in (an Operand's Bucket).
type BucketKey struct {
	Boundaries []Operand // constants of one type, ascending
	Default    Operand   // a constant
	// JSON makes the key a JSON value (Default's type differs from the
	// boundaries').
	JSON bool
}

// BucketAutoStage sorts rows by By and splits them into at most N buckets
// of about the same number of rows, rows with equal values in the same
// bucket, as MongoDB's $bucketAuto (without granularity) does. A group's
// objectId is {min, max}: its first value and the next bucket's first
// value (the last bucket: its own greatest value). Accumulators see a
// bucket's rows in By order.
type BucketAutoStage struct {
	stageOut
	By Operand
	N  int
	// Group is the $group the stage runs on the rows once each carries its
	// bucket's bounds (fields BucketMin, BucketMax).
	Group *GroupStage
}

func (BucketStage) Name() string     { return "$bucket" }
func (BucketAutoStage) Name() string { return "$bucketAuto" }

// The bucket bounds $bucketAuto adds to each row before grouping (names
// no user field can take: those start with a letter).
const (
	BucketMin = "_bmin"
	BucketMax = "_bmax"
)

func (p *pipeParser) bucketOutput(v any, present bool, at string) ([]Accumulator, []Field, error) {
	if !present {
		num := Type{Kind: parse.TypeNumber}
		return []Accumulator{{Name: "count", Op: "$sum", Factor: 1, Type: num}}, []Field{{Name: "count", Type: num}}, nil
	}
	keys, m, ok := asObject(v)
	if !ok || len(keys) == 0 {
		return nil, nil, errAt(at, "takes an object of output fields to accumulators ({\"n\": {\"$sum\": 1}}), got %s", describeAny(v))
	}
	if len(keys) > maxStageFields {
		return nil, nil, errAt(at, "at most %d output fields", maxStageFields)
	}
	var accs []Accumulator
	var out []Field
	for _, name := range keys {
		fat := at + "." + name
		if name == "_id" || name == parse.FieldObjectID {
			return nil, nil, errAt(fat, "objectId is the bucket; name the field otherwise")
		}
		if _, err := outName(name, fat); err != nil {
			return nil, nil, err
		}
		acc, err := p.accumulator(name, m[name], fat)
		if err != nil {
			return nil, nil, err
		}
		accs = append(accs, acc)
		out = append(out, Field{Name: name, Type: acc.Type})
	}
	return accs, out, nil
}

func (p *pipeParser) bucket(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok {
		return nil, errAt(at, `takes {"groupBy": "$field", "boundaries": [b0, b1, …], "default": <value>, "output": {…}}, got %s`, describeAny(arg))
	}
	for _, k := range keys {
		switch k {
		case "groupBy", "boundaries", "default", "output":
		default:
			return nil, errAt(at+"."+k, "unknown option %q (use groupBy, boundaries, default, output)", k)
		}
	}
	if _, ok := m["groupBy"]; !ok {
		return nil, errAt(at, "needs groupBy: the value to put in buckets (\"$field\")")
	}
	by, err := p.operand(m["groupBy"], at+".groupBy", false)
	if err != nil {
		return nil, err
	}
	bat := at + ".boundaries"
	arr, ok := m["boundaries"].([]any)
	if !ok || len(arr) < 2 {
		return nil, errAt(bat, "takes an array of at least 2 ascending values of one type (Numbers, Strings or Dates), got %s", describeAny(m["boundaries"]))
	}
	if len(arr) > MaxBuckets+1 {
		return nil, errAt(bat, "at most %d boundaries", MaxBuckets+1)
	}
	key := &BucketKey{}
	var bt Type
	for i, b := range arr {
		iat := fmt.Sprintf("%s[%d]", bat, i)
		c, err := constant(b, iat)
		if err != nil {
			return nil, err
		}
		switch c.Type.Kind {
		case parse.TypeNumber, parse.TypeString, parse.TypeDate:
		default:
			return nil, errAt(iat, "a boundary is a Number, String or Date, got %s", describeAny(b))
		}
		if i == 0 {
			bt = c.Type
		} else {
			if c.Type.Kind != bt.Kind {
				return nil, errAt(iat, "boundaries are all of one type: this one is a %s, the first a %s", c.Type.Kind, bt.Kind)
			}
			if !constLess(key.Boundaries[i-1], c) {
				return nil, errAt(iat, "boundaries must be strictly ascending")
			}
		}
		key.Boundaries = append(key.Boundaries, c)
	}
	dv, hasDefault := m["default"]
	if !hasDefault {
		return nil, errAt(at, "needs default: the bucket of values outside the boundaries (MongoDB fails the whole aggregation "+
			"on such a value, which this server cannot do row by row); give e.g. \"default\": \"other\"")
	}
	def, err := constant(dv, at+".default")
	if err != nil {
		return nil, err
	}
	switch {
	case def.Const == nil:
		def.Type = bt
	case def.Type.Kind == bt.Kind:
		lo, hi := key.Boundaries[0], key.Boundaries[len(key.Boundaries)-1]
		if !constLess(def, lo) && constLess(def, hi) {
			return nil, errAt(at+".default", "default must be below the lowest boundary or at least the highest one")
		}
	case def.Type.Kind == parse.TypeObject || def.Type.Kind == parse.TypeArray:
		return nil, errAt(at+".default", "default is a Number, String, Date or Boolean")
	default:
		key.JSON = true
	}
	key.Default = def
	switch {
	case by.Type.Kind == bt.Kind && by.Type.scalar():
	case by.Type.Kind == TypeJSON:
		by.Type = bt // converted from JSON: a value of another type is no value
	default:
		return nil, errAt(at+".groupBy", "%s is a %s value and the boundaries are %ss: every row would fall in the default bucket", describeOperand(by), by.Type.Kind, bt.Kind)
	}
	kt := bt
	if key.JSON {
		kt = Type{Kind: TypeJSON}
	}
	accs, out, err := p.bucketOutput(m["output"], m["output"] != nil, at+".output")
	if err != nil {
		return nil, err
	}
	arg0 := by
	g := &GroupStage{Key: &Operand{Bucket: key, Arg: &arg0, Type: kt}, Accumulators: accs}
	g.fields = append([]Field{{Name: parse.FieldObjectID, Type: kt, KeepNull: true}}, out...)
	p.base = false
	p.classRows = false
	return &BucketStage{stageOut: g.stageOut, Group: g}, nil
}

// constLess orders two constants of one type (Number, String or Date).
func constLess(a, b Operand) bool {
	switch x := a.Const.(type) {
	case float64:
		y, _ := b.Const.(float64)
		return x < y
	case string:
		y, _ := b.Const.(string)
		if a.Type.Kind == parse.TypeDate {
			dx, _ := parse.ParseDate(x)
			dy, _ := parse.ParseDate(y)
			return dx.Before(dy)
		}
		return x < y
	}
	return false
}

func (p *pipeParser) bucketAuto(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok {
		return nil, errAt(at, `takes {"groupBy": "$field", "buckets": <count>, "output": {…}}, got %s`, describeAny(arg))
	}
	for _, k := range keys {
		switch k {
		case "groupBy", "buckets", "output":
		case "granularity":
			return nil, errAt(at+"."+k, "granularity (preferred-number series) is not supported; leave it out to split by row counts")
		default:
			return nil, errAt(at+"."+k, "unknown option %q (use groupBy, buckets, output)", k)
		}
	}
	if _, ok := m["groupBy"]; !ok {
		return nil, errAt(at, "needs groupBy: the value to put in buckets (\"$field\")")
	}
	by, err := p.operand(m["groupBy"], at+".groupBy", false)
	if err != nil {
		return nil, err
	}
	if !by.Type.scalar() && by.Type.Kind != TypeJSON {
		return nil, errAt(at+".groupBy", "%s is a %s value; $bucketAuto orders String, Number, Boolean, Date or Pointer values", describeOperand(by), by.Type.Kind)
	}
	by.Type = by.Type.groupValue()
	f, ok := m["buckets"].(float64)
	if !ok || f != float64(int(f)) || f < 1 || f > MaxBuckets {
		return nil, errAt(at+".buckets", "takes an integer from 1 to %d (the cap of this server), got %s", MaxBuckets, describeAny(m["buckets"]))
	}
	accs, out, err := p.bucketOutput(m["output"], m["output"] != nil, at+".output")
	if err != nil {
		return nil, err
	}
	kt := by.Type.KeyValue()
	g := &GroupStage{
		Components: []GroupComponent{
			{Name: "min", Value: Operand{Ref: BucketMin, Type: by.Type}},
			{Name: "max", Value: Operand{Ref: BucketMax, Type: by.Type}},
		},
		Accumulators: accs,
	}
	idType := Type{Kind: parse.TypeObject, Fields: []Field{{Name: "min", Type: kt, KeepNull: true}, {Name: "max", Type: kt, KeepNull: true}}}
	g.fields = append([]Field{{Name: parse.FieldObjectID, Type: idType}}, out...)
	p.base = false
	p.classRows = false
	return &BucketAutoStage{stageOut: g.stageOut, By: by, N: int(f), Group: g}, nil
}
