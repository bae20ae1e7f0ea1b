package query

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// Operands: per-row values (field references, constants, $literal and the date operators).

// Operand is a value computed per row: a field reference (Ref, with an
// optional path Sub into an Object value), a constant, or a date operator
// (Op) applied to Arg.
type Operand struct {
	Ref     string
	Sub     []string
	IsConst bool
	// Const is the constant in its storage form: string (String; ISO text
	// for a Date; JSON text for an Object or Array), float64, bool or nil.
	Const any
	Op    string // "$year", "$month", …
	Arg   *Operand
	// TZ is the time zone of a date operator: "" for UTC, an IANA name, or
	// a fixed offset "+05:30" (TZOffset).
	TZ       string
	TZOffset bool
	// Bucket makes the operand the $bucket range Arg's value falls in.
	Bucket *BucketKey
	Type   Type
}

// ref resolves a field reference ("$status", "$_id.y").
func (p *pipeParser) ref(s, at string) (Operand, error) {
	return p.named(strings.TrimPrefix(s, "$"), s, at, "$")
}

// keyRef resolves a field named as a key ("owner"), or as a reference
// ("$owner"): $lookup's localField, $graphLookup's connect fields.
func (p *pipeParser) keyRef(k, at string) (Operand, error) {
	if strings.HasPrefix(k, "$") {
		return p.ref(k, at)
	}
	return p.named(k, "$"+k, at, "")
}

// named resolves the field name, written s ("$name") in messages; prefix
// is what preceded the name where it was given ("$" for a reference, ""
// for a key).
func (p *pipeParser) named(name, s, at, prefix string) (Operand, error) {
	if strings.HasPrefix(name, "$") {
		return Operand{}, errAt(at, "variables (%s) are not supported; reference a field as \"$name\"", s)
	}
	if name == "" {
		return Operand{}, errAt(at, "empty field reference %q", s)
	}
	head, rest, dotted := strings.Cut(name, ".")
	if head == "_id" {
		head = parse.FieldObjectID
	}
	f, ok := p.field(head)
	if !ok {
		return Operand{}, p.unknownField(head, at, prefix)
	}
	op := Operand{Ref: head, Type: f.Type}
	if !dotted {
		return op, nil
	}
	if f.Type.Kind == parse.TypePointer {
		return Operand{}, errAt(at, "%q is a Pointer to %s: dotted paths only reach into Object values; use $lookup to reach the target's fields", head, f.Type.Target)
	}
	t := f.Type
	for _, seg := range strings.Split(rest, ".") {
		if !validSubKey(seg) {
			return Operand{}, errAt(at, "invalid path segment %q in %s", seg, s)
		}
		st, err := t.sub(seg)
		if err != nil {
			return Operand{}, errAt(at, "%s: %v", strings.Join(append([]string{head}, op.Sub...), "."), err)
		}
		op.Sub = append(op.Sub, seg)
		t = st
	}
	op.Type = t.fromJSON()
	return op, nil
}

// constant converts a literal value.
func constant(v any, at string) (Operand, error) {
	switch x := v.(type) {
	case nil:
		return Operand{IsConst: true, Type: Type{Kind: parse.TypeString}}, nil
	case string:
		return Operand{IsConst: true, Const: x, Type: Type{Kind: parse.TypeString}}, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Operand{}, errAt(at, "not a finite number")
		}
		return Operand{IsConst: true, Const: x, Type: Type{Kind: parse.TypeNumber}}, nil
	case bool:
		return Operand{IsConst: true, Const: x, Type: Type{Kind: parse.TypeBoolean}}, nil
	case []any:
		b, err := json.Marshal(plain(x))
		if err != nil {
			return Operand{}, errAt(at, "invalid array constant: %v", err)
		}
		return Operand{IsConst: true, Const: string(b), Type: Type{Kind: parse.TypeArray}}, nil
	}
	if _, m, ok := asObject(v); ok {
		if parse.TypeOf(plain(v)) == "Date" {
			d, ok := parse.DateValue(plain(v))
			if !ok {
				return Operand{}, errAt(at, `invalid Date value: use {"__type":"Date","iso":"2024-01-31T00:00:00.000Z"}`)
			}
			return Operand{IsConst: true, Const: parse.FormatDate(d), Type: Type{Kind: parse.TypeDate}}, nil
		}
		if t, ok := m["__type"].(string); ok {
			return Operand{}, errAt(at, "%s constants are not supported in a pipeline", t)
		}
		b, err := json.Marshal(plain(v))
		if err != nil {
			return Operand{}, errAt(at, "invalid object constant: %v", err)
		}
		return Operand{IsConst: true, Const: string(b), Type: Type{Kind: parse.TypeObject}}, nil
	}
	return Operand{}, errAt(at, "unsupported value %s", describeAny(v))
}

// operand parses a value expression: "$field", {"$year": …},
// {"$literal": …}, or (when literals are allowed) a constant.
func (p *pipeParser) operand(v any, at string, literals bool) (Operand, error) {
	if s, ok := v.(string); ok && strings.HasPrefix(s, "$") {
		return p.ref(s, at)
	}
	keys, m, isObj := asObject(v)
	if isObj && len(keys) > 0 && strings.HasPrefix(keys[0], "$") {
		if len(keys) != 1 {
			return Operand{}, errAt(at, "an expression object has exactly one operator, got %s", strings.Join(keys, ", "))
		}
		op := keys[0]
		oat := at + "." + op
		if op == "$literal" {
			return constant(m[op], oat)
		}
		if _, ok := DateOperators[op]; ok {
			return p.datePart(op, m[op], oat)
		}
		if unsupportedExprOps[op] {
			return Operand{}, errAt(oat, "expression operator %s is not supported (supported: field references \"$name\", $literal and the date operators $year, $month, $dayOfMonth, $dayOfWeek, $dayOfYear, $hour, $minute, $second, $millisecond, $week, $isoWeek, $isoWeekYear, $isoDayOfWeek)", op)
		}
		return Operand{}, errAt(oat, "unknown expression operator %s", op)
	}
	if !literals {
		if s, ok := v.(string); ok {
			return Operand{}, errAt(at, "expected a field reference like \"$%s\" or an expression, got the string %q", s, s)
		}
		return Operand{}, errAt(at, "expected a field reference (\"$name\") or an expression, got %s", describeAny(v))
	}
	if isObj {
		for _, k := range keys {
			if strings.HasPrefix(k, "$") {
				return Operand{}, errAt(at, "operator %s mixed with field names; an expression object has exactly one operator", k)
			}
		}
		if parse.TypeOf(plain(v)) == "" {
			return Operand{}, errAt(at, "object values are not evaluated as expressions here; wrap a constant object in {\"$literal\": …}")
		}
	}
	return constant(v, at)
}

func describeOperand(o Operand) string {
	switch {
	case o.IsConst:
		return "the constant"
	case o.Op != "":
		return o.Op
	case len(o.Sub) > 0:
		return fmt.Sprintf("%q", "$"+o.Ref+"."+strings.Join(o.Sub, "."))
	}
	return fmt.Sprintf("%q", "$"+o.Ref)
}
