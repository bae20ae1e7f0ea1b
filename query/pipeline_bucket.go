package query

import (
	"encoding/json"
	"fmt"
	"strings"

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
	// bucket's bounds (fields bucketMin, bucketMax).
	Group *GroupStage
}

func (BucketStage) Name() string     { return "$bucket" }
func (BucketAutoStage) Name() string { return "$bucketAuto" }

// The bucket bounds $bucketAuto adds to each row before grouping (names
// no user field can take: those start with a letter).
const (
	bucketMin = "_bmin"
	bucketMax = "_bmax"
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
	kt := by.Type.keyValue()
	g := &GroupStage{
		Components: []GroupComponent{
			{Name: "min", Value: Operand{Ref: bucketMin, Type: by.Type}},
			{Name: "max", Value: Operand{Ref: bucketMax, Type: by.Type}},
		},
		Accumulators: accs,
	}
	idType := Type{Kind: parse.TypeObject, Fields: []Field{{Name: "min", Type: kt, KeepNull: true}, {Name: "max", Type: kt, KeepNull: true}}}
	g.fields = append([]Field{{Name: parse.FieldObjectID, Type: idType}}, out...)
	p.base = false
	return &BucketAutoStage{stageOut: g.stageOut, By: by, N: int(f), Group: g}, nil
}

// bucketKey renders the bucket of op's value: CASE over the boundaries.
func (c *pcompiler) bucketKey(op Operand, from string) string {
	k := op.Bucket
	v := c.operand(*op.Arg, from)
	if op.Arg.Type.jsonForm() {
		v = c.d.FromJSON(v, k.Boundaries[0].Type)
	}
	text := k.Boundaries[0].Type.Kind == parse.TypeString
	if text {
		v = c.d.CodePointOrder(v)
	}
	lit := func(o Operand) string {
		if !k.JSON {
			return c.operand(o, from)
		}
		b, _ := json.Marshal(o.Const) // numbers, strings, ISO dates, booleans
		return c.d.Literal(c.b.Param(string(b)), Type{Kind: TypeJSON})
	}
	less := func(o Operand) string {
		b := c.operand(o, from)
		if text {
			b = c.d.CodePointOrder(b)
		}
		return v + " < " + b
	}
	var sb strings.Builder
	sb.WriteString("(CASE WHEN " + less(k.Boundaries[0]) + " THEN " + lit(k.Default))
	for i := 1; i < len(k.Boundaries); i++ {
		sb.WriteString(" WHEN " + less(k.Boundaries[i]) + " THEN " + lit(k.Boundaries[i-1]))
	}
	sb.WriteString(" ELSE " + lit(k.Default) + " END)")
	return sb.String()
}

// bucketAuto renders $bucketAuto: the rows numbered in By order, the
// buckets' first positions (a recursive walk: a bucket takes about n/N
// rows, then every further row equal to its last one), each row's bucket
// bounds, then the $group.
func (c *pcompiler) bucketAuto(s *BucketAutoStage, prev string, in []Field) string {
	v := c.operand(s.By, "p")
	order := append(c.orderKeys(v, s.By.Type, false), c.col("p", ordCol)+" ASC")
	peers := c.orderKeys(v, s.By.Type, false)
	sel := c.passthrough(in)
	sel = append(sel,
		c.as(v, "_v"),
		c.as("row_number() OVER (ORDER BY "+strings.Join(order, ", ")+") - 1", ordCol),
		c.as("count(*) OVER (ORDER BY "+strings.Join(peers, ", ")+")", "_end"),
		c.as("count(*) OVER ()", "_n"))
	rows := c.cte("SELECT " + strings.Join(sel, ", ") + " FROM " + prev + " AS p")
	n := "CAST(" + c.b.Param(int64(s.N)) + " AS BIGINT)"
	// About n/N rows a bucket, rounded half up, at least 1.
	size := "(CASE WHEN (2 * a._n + " + n + ") / (2 * " + n + ") < 1 THEN 1 ELSE (2 * a._n + " + n + ") / (2 * " + n + ") END)"
	last := "a._n - 1"
	ord := "a." + c.d.Ident(ordCol)
	starts := c.recursiveCTE([]string{"i", "s"}, func(self string) string {
		return "SELECT CAST(0 AS BIGINT), CAST(0 AS BIGINT) FROM " + rows + " AS a WHERE " + ord + " = 0" +
			" UNION ALL SELECT b.i + 1, a._end FROM " + self + " AS b JOIN " + rows + " AS a ON " + ord +
			" = (CASE WHEN b.s + " + size + " - 1 < " + last + " THEN b.s + " + size + " - 1 ELSE " + last + " END)" +
			" WHERE b.i + 1 < " + n + " AND a._end < a._n"
	})
	at := func(pos string) string {
		return "(SELECT a._v FROM " + rows + " AS a WHERE " + ord + " = " + pos + ")"
	}
	next := "(SELECT b2.s FROM " + starts + " AS b2 WHERE b2.i = b.i + 1)"
	// Per bucket: its first position, the next bucket's (NULL for the
	// last), and its bounds' values.
	bounds := c.cte("SELECT b.s, " + next + " AS nx, " + at("b.s") + " AS lo, " +
		at("COALESCE("+next+", (SELECT max(a._n) - 1 FROM "+rows+" AS a))") + " AS hi FROM " + starts + " AS b")
	sel = c.passthrough(in)
	sel = append(sel, c.as("k.lo", bucketMin), c.as("k.hi", bucketMax), c.col("p", ordCol))
	tagged := c.cte("SELECT " + strings.Join(sel, ", ") + " FROM " + rows + " AS p JOIN " + bounds + " AS k ON p." + c.d.Ident(ordCol) +
		" >= k.s AND (k.nx IS NULL OR p." + c.d.Ident(ordCol) + " < k.nx)")
	return c.group(s.Group, tagged)
}
