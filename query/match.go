package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sync"
	"time"

	"github.com/parsemcp/parsemcp/parse"
)

// ErrNotMatchable is wrapped by the errors of Match and Matchable for a
// constraint that cannot be decided from the object alone: one that needs
// another query or the database ($inQuery, $notInQuery, $select,
// $dontSelect, $relatedTo, a Relation constraint), the geo operators, a
// comparison whose result depends on the SQL backend, or a node this
// evaluator does not know. Callers should fail closed.
var ErrNotMatchable = errors.New("query: constraint cannot be evaluated in memory")

func notMatchable(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNotMatchable, fmt.Sprintf(format, args...))
}

// Match reports whether obj (a REST object, as a store's Find returns it)
// satisfies e, with the semantics of the SQL the compiler renders for e:
//
//   - a missing field and a null are the same (SQL NULL); a comparison with
//     one is false, except that $ne, $nin and a $nor match it;
//   - values compare only with values of their own kind: a string never
//     equals or orders with a number, a boolean never equals 1;
//   - Dates compare as instants (millisecond precision), Pointers by their
//     objectId, Files by their name, whole Object and Array values by their
//     JSON text;
//   - on an Array field a scalar matches an element (strings, numbers and
//     booleans; null and nested elements match no scalar);
//   - a path into an Object field reaches only through nested objects, and
//     a nested object or array found there is not a scalar.
//
// Only the constraint is evaluated: a query's ReadACL is the caller's to
// check. A nil e matches every object. The error wraps ErrNotMatchable when e
// holds a node that needs the database (see Matchable) or when obj's data
// is where the SQL backends disagree (a path indexing into an array); it is
// a plain error for a $regex Go cannot compile. Odd values never panic: a
// value of the wrong type compares false.
func Match(e Expr, obj parse.Object) (bool, error) {
	if e == nil {
		return true, nil
	}
	if err := Matchable(e); err != nil {
		return false, err
	}
	return match(e, obj)
}

// Matchable reports, without an object, whether Match can evaluate e: nil,
// or an error wrapping ErrNotMatchable naming the first node that needs the
// database, or the error of a $regex Go cannot compile. Match checks it
// before looking at the object, so an expression is refused the same way
// whatever the object holds.
func Matchable(e Expr) error {
	switch x := e.(type) {
	case nil:
		return nil
	case And:
		return matchableAll(x.Exprs)
	case Or:
		return matchableAll(x.Exprs)
	case Nor:
		return matchableAll(x.Exprs)
	case Cmp:
		if err := checkPath(x.Path); err != nil {
			return err
		}
		switch x.Op {
		case OpEq, OpNe, OpLt, OpLte, OpGt, OpGte:
		default:
			return notMatchable("unknown comparison %q on %q", x.Op, x.Path)
		}
		if x.ArrayElem {
			if !arrayField(x.Path) {
				return notMatchable("an array-element comparison on %s field %q", x.Path.Type, x.Path)
			}
			if x.Op != OpEq && x.Op != OpNe {
				return notMatchable("ordering comparison %s on the elements of %q", x.Op, x.Path)
			}
			return checkElemOperand(x.Path, x.Value, true)
		}
		if x.Value == nil {
			return nil
		}
		if err := checkOperand(x.Path, x.Value); err != nil {
			return err
		}
		if x.Op != OpEq && x.Op != OpNe && len(x.Path.Sub) == 0 &&
			(x.Path.Type == parse.TypeObject || x.Path.Type == parse.TypeArray) {
			// SQLite orders JSON text, PostgreSQL jsonb values: no one answer.
			return notMatchable("ordering comparison %s on the whole %s value %q depends on the backend", x.Op, x.Path.Type, x.Path)
		}
		return nil
	case In:
		if err := checkPath(x.Path); err != nil {
			return err
		}
		if x.ArrayElem && !arrayField(x.Path) {
			return notMatchable("an array-element $in on %s field %q", x.Path.Type, x.Path)
		}
		for _, v := range x.Values {
			if v == nil {
				continue
			}
			var err error
			if x.ArrayElem {
				err = checkElemOperand(x.Path, v, false)
			} else {
				err = checkOperand(x.Path, v)
			}
			if err != nil {
				return err
			}
		}
		return nil
	case All:
		return checkElemList("$all", x.Path, x.Values)
	case ContainedBy:
		return checkElemList("$containedBy", x.Path, x.Values)
	case Exists:
		return checkPath(x.Path)
	case Regex:
		if err := checkPath(x.Path); err != nil {
			return err
		}
		if x.Path.Type != parse.TypeString && (x.Path.Type != parse.TypeObject || len(x.Path.Sub) == 0) {
			return notMatchable("$regex on %s field %q", x.Path.Type, x.Path)
		}
		_, err := compileRegex(x)
		return err
	case Text:
		if x.Path.Type != parse.TypeString || len(x.Path.Sub) > 0 {
			return notMatchable("$text on %s field %q", x.Path.Type, x.Path)
		}
		return nil
	case InQuery:
		if x.Key == parse.FieldObjectID {
			return notMatchable("$inQuery/$notInQuery on %q runs another query", x.Path)
		}
		return notMatchable("$select/$dontSelect on %q runs another query", x.Path)
	case RelatedTo:
		return notMatchable("$relatedTo (%s.%s) reads a relation table", classOf(x.Owner), x.Field)
	case RelationHas:
		return notMatchable("a constraint on Relation field %q reads its relation table", x.Field)
	case GeoBox:
		return notMatchable("$within on %q is a geo query", x.Path)
	case GeoNear:
		return notMatchable("$nearSphere/$centerSphere on %q is a geo query", x.Path)
	case GeoPolygon:
		return notMatchable("$polygon on %q is a geo query", x.Path)
	}
	return notMatchable("unsupported constraint %T", e)
}

func classOf(q *Query) string {
	if q == nil {
		return "?"
	}
	return q.Class
}

func matchableAll(es []Expr) error {
	for _, e := range es {
		if err := Matchable(e); err != nil {
			return err
		}
	}
	return nil
}

// checkPath refuses paths with no column (Relation), the ACL, unknown
// field types and sub-paths into anything but an Object field.
func checkPath(p Path) error {
	switch p.Type {
	case parse.TypeString, parse.TypeNumber, parse.TypeBoolean, parse.TypeDate, parse.TypeObject,
		parse.TypeArray, parse.TypePointer, parse.TypeFile, parse.TypeGeoPoint, parse.TypePolygon, parse.TypeBytes:
	case parse.TypeRelation:
		return notMatchable("Relation field %q has no value on the object", p)
	default:
		return notMatchable("field %q of type %q", p, p.Type)
	}
	if len(p.Sub) > 0 && p.Type != parse.TypeObject {
		return notMatchable("a path into %s field %q", p.Type, p)
	}
	return nil
}

func arrayField(p Path) bool { return p.Type == parse.TypeArray && len(p.Sub) == 0 }

// checkOperand accepts the storage-form values the parser produces for a
// comparison with p (string, number or boolean), on fields compared by
// value.
func checkOperand(p Path, v any) error {
	if len(p.Sub) == 0 {
		switch p.Type {
		case parse.TypeGeoPoint, parse.TypePolygon, parse.TypeBytes:
			return notMatchable("%s field %q compared by value", p.Type, p)
		}
	}
	if _, ok := operand(v); !ok {
		return notMatchable("value %T compared with %q", v, p)
	}
	return nil
}

func checkElemOperand(p Path, v any, nilOK bool) error {
	if v == nil && nilOK {
		return nil
	}
	if _, ok := operand(v); !ok || v == nil {
		return notMatchable("value %T compared with the elements of %q", v, p)
	}
	return nil
}

func checkElemList(op string, p Path, vals []any) error {
	if err := checkPath(p); err != nil {
		return err
	}
	if !arrayField(p) {
		return notMatchable("%s on %s field %q", op, p.Type, p)
	}
	for _, v := range vals {
		if err := checkElemOperand(p, v, false); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------- evaluation

func match(e Expr, obj parse.Object) (bool, error) {
	switch x := e.(type) {
	case nil: // an empty constraint, as ParseWhere returns for {}
		return true, nil
	case And: // 1=1 when empty
		for _, sub := range x.Exprs {
			ok, err := match(sub, obj)
			if err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case Or: // 1=0 when empty
		return matchAny(x.Exprs, obj)
	case Nor: // (… OR …) IS NOT TRUE: a NULL (unknown) clause counts as false
		hit, err := matchAny(x.Exprs, obj)
		return !hit && err == nil, err
	case Cmp:
		return matchCmp(x, obj)
	case In:
		return matchIn(x, obj)
	case All:
		arr, _ := obj[x.Path.Field].([]any)
		for _, v := range x.Values {
			if !hasElem(arr, v) {
				return false, nil
			}
		}
		return true, nil
	case ContainedBy:
		return matchContainedBy(x, obj), nil
	case Exists:
		v, err := lookup(x.Path, obj)
		if err != nil {
			return false, err
		}
		return (v != nil) == x.Exists, nil
	case Regex:
		col, err := column(x.Path, obj)
		if err != nil || col.k != kString {
			return false, err
		}
		re, err := compileRegex(x)
		if err != nil {
			return false, err
		}
		return re.MatchString(col.s), nil
	case Text: // textsearch: PostgreSQL's to_tsvector @@ to_tsquery
		s, ok := obj[x.Path.Field].(string)
		if !ok {
			return false, nil
		}
		return x.Query().MatchText(x.Language, s) // PostgreSQL's error for a text too long for a tsvector
	}
	return false, notMatchable("unsupported constraint %T", e) // Matchable refused it already
}

func matchAny(es []Expr, obj parse.Object) (bool, error) {
	for _, sub := range es {
		ok, err := match(sub, obj)
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func matchCmp(c Cmp, obj parse.Object) (bool, error) {
	if c.ArrayElem {
		raw := obj[c.Path.Field]
		arr, _ := raw.([]any)
		has := hasElem(arr, c.Value)
		if c.Op == OpNe { // col IS NULL OR NOT has
			return raw == nil || !has, nil
		}
		return has, nil
	}
	col, err := column(c.Path, obj)
	if err != nil {
		return false, err
	}
	if c.Value == nil {
		switch c.Op {
		case OpEq:
			return col.k == kNull, nil
		case OpNe:
			return col.k != kNull, nil
		}
		return false, nil // col < NULL is NULL
	}
	v := cmpOperand(c.Path, c.Value)
	if c.Op == OpNe { // rows without the field match $ne
		return col.k == kNull || !equal(col, v), nil
	}
	if c.Op == OpEq {
		return equal(col, v), nil
	}
	n, ok := order(col, v)
	if !ok {
		return false, nil
	}
	switch c.Op {
	case OpLt:
		return n < 0, nil
	case OpLte:
		return n <= 0, nil
	case OpGt:
		return n > 0, nil
	case OpGte:
		return n >= 0, nil
	}
	return false, nil
}

func matchIn(x In, obj parse.Object) (bool, error) {
	if len(x.Values) == 0 { // 1=0, or 1=1 for $nin
		return x.Not, nil
	}
	if x.ArrayElem {
		raw := obj[x.Path.Field]
		arr, _ := raw.([]any)
		has := false
		for _, v := range x.Values {
			if v != nil && hasElem(arr, v) {
				has = true
				break
			}
		}
		if x.Not {
			return raw == nil || !has, nil
		}
		return has, nil
	}
	col, err := column(x.Path, obj)
	if err != nil {
		return false, err
	}
	hasNull, in := false, false
	for _, v := range x.Values {
		if v == nil {
			hasNull = true
			continue
		}
		if !in && equal(col, cmpOperand(x.Path, v)) {
			in = true
		}
	}
	null := col.k == kNull
	switch {
	case x.Not && hasNull:
		return !null && !in, nil
	case x.Not:
		return null || !in, nil
	case hasNull:
		return null || in, nil
	}
	return in, nil
}

// matchContainedBy: the array is set and each of its elements is one of
// the values. A null or nested element is none of them (as jsonb's NOT IN
// says on PostgreSQL).
func matchContainedBy(x ContainedBy, obj parse.Object) bool {
	arr, ok := obj[x.Path.Field].([]any)
	if !ok {
		return false
	}
	for _, el := range arr {
		e := jsonScalar(el)
		found := false
		for _, v := range x.Values {
			if equal(e, cmpOperand(Path{}, v)) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// hasElem reports whether an element of arr equals v (strictly by kind).
func hasElem(arr []any, v any) bool {
	if v == nil {
		return false // el = NULL
	}
	want := cmpOperand(Path{}, v)
	for _, el := range arr {
		if equal(jsonScalar(el), want) {
			return true
		}
	}
	return false
}

// ---------------------------------------------------------------- values

type kind uint8

const (
	kNull   kind = iota // missing, or null: SQL NULL
	kString             // String, Date (canonical ISO text), Pointer (objectId), File (name), whole JSON (its text)
	kNumber
	kBool
	kOther // present, but no scalar that compares with a value: a nested object or array, a value of the wrong type
)

type scalar struct {
	k kind
	s string
	n float64
	b bool
}

// operand converts a value from the AST (storage form) to a scalar.
func operand(v any) (scalar, bool) {
	switch x := v.(type) {
	case nil:
		return scalar{k: kNull}, true
	case string:
		return scalar{k: kString, s: x}, true
	case bool:
		return scalar{k: kBool, b: x}, true
	}
	if n, ok := number(v); ok {
		return scalar{k: kNumber, n: n}, true
	}
	return scalar{}, false
}

// cmpOperand is the operand compared with p's column: a Date field's value
// in the canonical text its column holds.
func cmpOperand(p Path, v any) scalar {
	s, ok := operand(v)
	if !ok {
		return scalar{k: kOther}
	}
	if s.k == kString && p.Type == parse.TypeDate && len(p.Sub) == 0 {
		if t, err := parse.ParseDate(s.s); err == nil {
			s.s = parse.FormatDate(t)
		}
	}
	return s
}

func number(v any) (float64, bool) {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int8:
		f = float64(x)
	case int16:
		f = float64(x)
	case int32:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint:
		f = float64(x)
	case uint8:
		f = float64(x)
	case uint16:
		f = float64(x)
	case uint32:
		f = float64(x)
	case uint64:
		f = float64(x)
	case json.Number:
		g, err := x.Float64()
		if err != nil {
			return 0, false
		}
		f = g
	default:
		return 0, false
	}
	if math.IsNaN(f) { // not a value SQL can hold
		return 0, false
	}
	return f, true
}

// jsonScalar is the scalar a JSON value inside an Object or Array column
// compares as.
func jsonScalar(v any) scalar {
	switch x := v.(type) {
	case nil:
		return scalar{k: kNull}
	case string:
		return scalar{k: kString, s: x}
	case bool:
		return scalar{k: kBool, b: x}
	}
	if n, ok := number(v); ok {
		return scalar{k: kNumber, n: n}
	}
	return scalar{k: kOther}
}

func equal(a, b scalar) bool {
	if a.k != b.k {
		return false
	}
	switch a.k {
	case kString:
		return a.s == b.s
	case kNumber:
		return a.n == b.n
	case kBool:
		return a.b == b.b
	}
	return false // NULL = x, and values without a scalar, are never equal
}

// order compares a and b of the same kind.
func order(a, b scalar) (int, bool) {
	if a.k != b.k {
		return 0, false
	}
	switch a.k {
	case kString:
		switch {
		case a.s < b.s:
			return -1, true
		case a.s > b.s:
			return 1, true
		}
		return 0, true
	case kNumber:
		switch {
		case a.n < b.n:
			return -1, true
		case a.n > b.n:
			return 1, true
		}
		return 0, true
	case kBool:
		ai, bi := 0, 0
		if a.b {
			ai = 1
		}
		if b.b {
			bi = 1
		}
		return ai - bi, true
	}
	return 0, false
}

// lookup returns the raw value at p in obj, nil when it is missing or null.
// A path into an Object field descends only through objects; descending
// into an array by an integer segment is refused, because PostgreSQL's #>
// indexes the array where SQLite's json_extract finds nothing.
func lookup(p Path, obj parse.Object) (any, error) {
	v := obj[p.Field]
	for _, seg := range p.Sub {
		switch c := v.(type) {
		case map[string]any:
			v = c[seg]
		case []any:
			if isIndex(seg) {
				return nil, notMatchable("%q indexes into an array at %q (the SQL backends disagree)", p, seg)
			}
			return nil, nil
		default:
			return nil, nil
		}
	}
	return v, nil
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// column returns the scalar p's SQL column (or json_extract of it) holds
// for obj.
func column(p Path, obj parse.Object) (scalar, error) {
	v, err := lookup(p, obj)
	if err != nil || v == nil {
		return scalar{k: kNull}, err
	}
	if len(p.Sub) > 0 {
		return jsonScalar(v), nil
	}
	other := scalar{k: kOther}
	switch p.Type {
	case parse.TypeString:
		if s, ok := v.(string); ok {
			return scalar{k: kString, s: s}, nil
		}
	case parse.TypeNumber:
		if n, ok := number(v); ok {
			return scalar{k: kNumber, n: n}, nil
		}
	case parse.TypeBoolean:
		if b, ok := v.(bool); ok {
			return scalar{k: kBool, b: b}, nil
		}
	case parse.TypeDate:
		if t, ok := dateOf(v); ok {
			return scalar{k: kString, s: parse.FormatDate(t)}, nil
		}
	case parse.TypePointer:
		if _, id, ok := parse.PointerID(v); ok {
			return scalar{k: kString, s: id}, nil
		}
	case parse.TypeFile:
		if m, ok := v.(map[string]any); ok && m["__type"] == "File" {
			if name, ok := m["name"].(string); ok {
				return scalar{k: kString, s: name}, nil
			}
		}
	case parse.TypeObject, parse.TypeArray:
		_, isObj := v.(map[string]any)
		_, isArr := v.([]any)
		if (p.Type == parse.TypeObject && isObj) || (p.Type == parse.TypeArray && isArr) {
			if b, err := json.Marshal(v); err == nil {
				return scalar{k: kString, s: string(b)}, nil
			}
		}
	}
	return other, nil
}

// dateOf reads a Date field's value: {"__type":"Date","iso":…}, an ISO
// string (createdAt, updatedAt) or a time.Time.
func dateOf(v any) (time.Time, bool) {
	switch x := v.(type) {
	case string:
		t, err := parse.ParseDate(x)
		return t, err == nil
	case time.Time:
		return x.UTC(), true
	}
	return parse.DateValue(v)
}

// ---------------------------------------------------------------- regex

var (
	regexMu    sync.Mutex
	regexCache = map[string]*regexp.Regexp{}
)

const maxMatchPatterns = 1024

// compileRegex compiles r as the SQLite dialect does (Go's engine, flags as
// an inline group), through a bounded cache.
func compileRegex(r Regex) (*regexp.Regexp, error) {
	pat := GoRegexPrefix(r.Flags) + r.Pattern
	regexMu.Lock()
	re, ok := regexCache[pat]
	regexMu.Unlock()
	if ok {
		return re, nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("query: %s: invalid regular expression: %w", r.Path, err)
	}
	regexMu.Lock()
	if len(regexCache) >= maxMatchPatterns {
		clear(regexCache)
	}
	regexCache[pat] = re
	regexMu.Unlock()
	return re, nil
}
