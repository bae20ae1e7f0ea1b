package query

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	names "github.com/parsemcp/parsemcp/internal/shape"
	"github.com/parsemcp/parsemcp/parse"
)

// MaxDepth bounds the nesting of $or/$and/$nor so a hostile where cannot
// exhaust the stack.
const MaxDepth = 16

// validSubKey is ^[A-Za-z0-9_][A-Za-z0-9_-]{0,127}$: a key below a field.
func validSubKey(s string) bool { return names.Lead(s, names.Word, subKeyChars, 128) }

var subKeyChars = names.Word.Or(names.Chars("-"))

// ParseWhere parses a REST where-constraint against a class schema. The
// result is nil when the constraint is empty. Operators that name another
// class ($inQuery, $select, $relatedTo) need a Parser with a Resolve.
func ParseWhere(s parse.Schema, where map[string]any) (Expr, error) {
	return Parser{}.Where(s, where)
}

// Parser parses where-constraints; Resolve looks up the schema of another
// class for the cross-class operators (the governed scope passes its own
// lookup, so hidden classes are unknown classes).
type Parser struct {
	Resolve func(class string) (parse.Schema, error)
	// View says the schemas (the one parsed against and the ones Resolve
	// returns) are an agent's view of its classes: a field they lack is
	// refused as a field denial (DenyField, listing the view's fields).
	// Without it (the operator's own filters, parsed against full
	// schemas) it is an unknown field, and no field list is given.
	View bool
	// unknown, when set, answers a field the schema lacks instead of
	// DenyField (a pipeline's $match on rows that are no longer the
	// class's own); the other classes' sub-queries keep DenyField.
	unknown func(field, at string) error
}

// Where parses where against s.
func (pr Parser) Where(s parse.Schema, where map[string]any) (Expr, error) {
	p := &whereParser{schema: s, lookup: pr.Resolve, branches: new(int), view: pr.View, unknown: pr.unknown}
	e, err := p.object(where, "where", 0)
	if err != nil {
		return nil, err
	}
	if err := checkShape(e, *p.branches, "where"); err != nil {
		return nil, err
	}
	return e, nil
}

// ParseWhereJSON accepts the where-constraint as a JSON string, as agents
// often send it.
func ParseWhereJSON(s parse.Schema, raw string) (Expr, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, nil
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, errAt("where", "not a JSON object: %v", err)
	}
	return ParseWhere(s, m)
}

type whereParser struct {
	schema parse.Schema
	lookup func(class string) (parse.Schema, error)
	// branches counts the elements of $or/$and/$nor, sub-queries
	// included (checkShape).
	branches *int
	view     bool                         // Parser.View
	unknown  func(field, at string) error // Parser.unknown
}

func (p *whereParser) object(m map[string]any, at string, depth int) (Expr, error) {
	if depth > MaxDepth {
		return nil, errAt(at, "constraints nested deeper than %d levels", MaxDepth)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic SQL for the same where
	var out []Expr
	for _, k := range keys {
		v := m[k]
		kat := at + "." + k
		var (
			e   Expr
			err error
		)
		switch k {
		case "$or", "$and", "$nor":
			e, err = p.logical(k, v, kat, depth)
		case "$relatedTo":
			e, err = p.relatedTo(v, kat, depth)
		default:
			if strings.HasPrefix(k, "$") {
				return nil, unsupportedOp(k, kat)
			}
			e, err = p.field(k, v, kat)
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return AndOf(out...), nil
}

func (p *whereParser) logical(op string, v any, at string, depth int) (Expr, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) == 0 {
		return nil, errAt(at, "%s takes a non-empty array of constraint objects", op)
	}
	*p.branches += len(arr)
	if *p.branches > MaxBranches { // stop parsing a huge where early
		return nil, checkShape(nil, *p.branches, "where")
	}
	var parts []Expr
	for i, item := range arr {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, errAt(fmt.Sprintf("%s[%d]", at, i), "expected a constraint object, got %s", describe(item))
		}
		e, err := p.object(m, fmt.Sprintf("%s[%d]", at, i), depth+1)
		if err != nil {
			return nil, err
		}
		if e == nil {
			e = And{} // an empty object matches everything
		}
		parts = append(parts, e)
	}
	switch op {
	case "$or":
		return Or{Exprs: parts}, nil
	case "$nor":
		return Nor{Exprs: parts}, nil
	}
	return And{Exprs: parts}, nil
}

// resolve maps a (possibly dotted) field name to a Path.
func (p *whereParser) resolve(name, at string) (Path, error) {
	head, rest, dotted := strings.Cut(name, ".")
	f, ok := p.schema.Fields[head]
	if !ok {
		if p.unknown != nil {
			return Path{}, p.unknown(head, at)
		}
		return Path{}, p.missing(p.schema, head, at)
	}
	path := Path{Field: head, Type: f.Type}
	if f.Type == parse.TypeACL {
		return Path{}, errAt(at, "the ACL field cannot be queried")
	}
	if f.Type == parse.TypeRelation && dotted {
		return Path{}, errAt(at, "Relation field %q has no sub-fields; use $relatedTo or $inQuery", head)
	}
	if !dotted {
		return path, nil
	}
	if f.Type != parse.TypeObject {
		if f.Type == parse.TypePointer {
			return Path{}, errAt(at, "%q is a Pointer to %s: dotted paths only reach into Object fields; use $inQuery to filter on the target's fields", head, f.TargetClass)
		}
		return Path{}, errAt(at, "%q is a %s field: dotted paths only reach into Object fields", head, f.Type)
	}
	for _, seg := range strings.Split(rest, ".") {
		if !validSubKey(seg) {
			return Path{}, errAt(at, "invalid path segment %q", seg)
		}
		path.Sub = append(path.Sub, seg)
	}
	return path, nil
}

// missing is the error for a field s lacks: a field denial when the
// schemas are an agent's view (Parser.View).
func (p *whereParser) missing(s parse.Schema, field, at string) error {
	if p.view {
		return DenyField(s, field, at, "")
	}
	return errAt(at, "unknown field %q on class %s", field, s.ClassName)
}

func (p *whereParser) field(name string, v any, at string) (Expr, error) {
	path, err := p.resolve(name, at)
	if err != nil {
		return nil, err
	}
	if path.Type == parse.TypeRelation {
		return p.relation(path, v, at)
	}
	if m, ok := v.(map[string]any); ok && isOperatorObject(m) {
		return p.operators(path, m, at)
	}
	return p.equality(path, v, at)
}

func isOperatorObject(m map[string]any) bool {
	if len(m) == 0 {
		return false
	}
	for k := range m {
		if !strings.HasPrefix(k, "$") {
			return false
		}
	}
	return true
}

func (p *whereParser) equality(path Path, v any, at string) (Expr, error) {
	if v == nil { // {"field": null}: the field is unset
		return Cmp{Path: path, Op: OpEq, Value: nil}, nil
	}
	if path.Type == parse.TypeArray && len(path.Sub) == 0 {
		if arr, ok := v.([]any); ok { // whole-array equality
			b, _ := json.Marshal(arr)
			return Cmp{Path: path, Op: OpEq, Value: string(b)}, nil
		}
		ev, err := elementValue(v, at)
		if err != nil {
			return nil, err
		}
		return Cmp{Path: path, Op: OpEq, Value: ev, ArrayElem: true}, nil
	}
	val, err := p.value(path, v, at)
	if err != nil {
		return nil, err
	}
	return Cmp{Path: path, Op: OpEq, Value: val}, nil
}

var cmpOps = map[string]CmpOp{"$eq": OpEq, "$ne": OpNe, "$lt": OpLt, "$lte": OpLte, "$gt": OpGt, "$gte": OpGte}

// operators not yet implemented are refused by name.
var knownLater = map[string]bool{"$geoIntersects": true, "$elemMatch": true}

func unsupportedOp(op, at string) error {
	if knownLater[op] {
		return errAt(at, "operator %s is not supported by this server yet", op)
	}
	return errAt(at, "unknown operator %s", op)
}

func (p *whereParser) operators(path Path, m map[string]any, at string) (Expr, error) {
	ops := make([]string, 0, len(m))
	for k := range m {
		ops = append(ops, k)
	}
	sort.Strings(ops)
	var out []Expr
	var options string
	if o, ok := m["$options"]; ok {
		s, isStr := o.(string)
		if !isStr {
			return nil, errAt(at+".$options", "must be a string of regex flags")
		}
		if _, ok := m["$regex"]; !ok {
			return nil, errAt(at+".$options", "$options is only valid with $regex")
		}
		options = s
	}
	for _, op := range ops {
		v := m[op]
		oat := at + "." + op
		if cmp, ok := cmpOps[op]; ok {
			e, err := p.comparison(path, cmp, v, oat)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
			continue
		}
		switch op {
		case "$options":
		case "$in", "$nin":
			e, err := p.in(path, op == "$nin", v, oat)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case "$all":
			if path.Type != parse.TypeArray || len(path.Sub) > 0 {
				return nil, errAt(oat, "$all applies to Array fields; %q is %s", path, path.Type)
			}
			arr, ok := v.([]any)
			if !ok {
				return nil, errAt(oat, "$all takes an array, got %s", describe(v))
			}
			vals := make([]any, 0, len(arr))
			for i, item := range arr {
				ev, err := elementValue(item, fmt.Sprintf("%s[%d]", oat, i))
				if err != nil {
					return nil, err
				}
				vals = append(vals, ev)
			}
			out = append(out, All{Path: path, Values: vals})
		case "$inQuery", "$notInQuery":
			e, err := p.inQuery(path, op == "$notInQuery", v, oat)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case "$select", "$dontSelect":
			e, err := p.selectQuery(path, op == "$dontSelect", v, oat)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case "$containedBy":
			if path.Type != parse.TypeArray || len(path.Sub) > 0 {
				return nil, errAt(oat, "$containedBy applies to Array fields; %q is %s", path, path.Type)
			}
			vals, err := elementValues(v, oat)
			if err != nil {
				return nil, err
			}
			out = append(out, ContainedBy{Path: path, Values: vals})
		case "$nearSphere", "$within", "$geoWithin":
			e, err := p.geo(path, op, v, m, oat)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case "$maxDistance", "$maxDistanceInRadians", "$maxDistanceInMiles", "$maxDistanceInKilometers":
			if _, ok := m["$nearSphere"]; !ok {
				return nil, errAt(oat, "%s is only valid with $nearSphere", op)
			}
		case "$exists":
			b, ok := v.(bool)
			if !ok {
				return nil, errAt(oat, "$exists takes true or false, got %s", describe(v))
			}
			out = append(out, Exists{Path: path, Exists: b})
		case "$regex":
			e, err := p.regex(path, v, options, oat)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case "$text":
			e, err := p.text(path, v, oat)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		default:
			return nil, unsupportedOp(op, oat)
		}
	}
	if len(out) == 1 {
		return out[0], nil
	}
	return And{Exprs: out}, nil
}

func elementValues(v any, at string) ([]any, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, errAt(at, "takes an array, got %s", describe(v))
	}
	vals := make([]any, 0, len(arr))
	for i, item := range arr {
		ev, err := elementValue(item, fmt.Sprintf("%s[%d]", at, i))
		if err != nil {
			return nil, err
		}
		vals = append(vals, ev)
	}
	return vals, nil
}

func (p *whereParser) comparison(path Path, op CmpOp, v any, at string) (Expr, error) {
	if path.Type == parse.TypeArray && len(path.Sub) == 0 {
		if op != OpEq && op != OpNe {
			return nil, errAt(at, "ordering comparisons do not apply to Array field %q", path)
		}
		if v == nil {
			return Cmp{Path: path, Op: op, Value: nil}, nil
		}
		ev, err := elementValue(v, at)
		if err != nil {
			return nil, err
		}
		return Cmp{Path: path, Op: op, Value: ev, ArrayElem: true}, nil
	}
	if op != OpEq && op != OpNe {
		switch path.Type {
		case parse.TypeNumber, parse.TypeDate, parse.TypeString, parse.TypeObject:
		default:
			return nil, errAt(at, "ordering comparisons do not apply to %s field %q", path.Type, path)
		}
		if v == nil {
			return nil, errAt(at, "cannot order-compare with null")
		}
	}
	val, err := p.value(path, v, at)
	if err != nil {
		return nil, err
	}
	return Cmp{Path: path, Op: op, Value: val}, nil
}

func (p *whereParser) in(path Path, not bool, v any, at string) (Expr, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, errAt(at, "takes an array of values, got %s", describe(v))
	}
	if len(arr) > MaxValues { // refused early, where the list is (checkShape counts every list)
		return nil, errAt(at, "at most %d values", MaxValues)
	}
	elem := path.Type == parse.TypeArray && len(path.Sub) == 0
	vals := make([]any, 0, len(arr))
	for i, item := range arr {
		iat := fmt.Sprintf("%s[%d]", at, i)
		var (
			val any
			err error
		)
		if elem {
			val, err = elementValue(item, iat)
		} else {
			val, err = p.value(path, item, iat)
		}
		if err != nil {
			return nil, err
		}
		vals = append(vals, val)
	}
	return In{Path: path, Values: vals, Not: not, ArrayElem: elem}, nil
}

// stripExtended applies the x ("extended") regex option, as MongoDB and
// Parse Server accept it: whitespace and #-comments (to the end of the
// line) are left out of the pattern, except escaped and inside a
// character class.
func stripExtended(pat string) string {
	var b strings.Builder
	inClass, comment := false, false
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch {
		case comment:
			if c == '\n' {
				comment = false
			}
		case c == '\\' && i+1 < len(pat):
			b.WriteByte(c)
			b.WriteByte(pat[i+1])
			i++
		case inClass:
			if c == ']' {
				inClass = false
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
		case c == '#':
			comment = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func (p *whereParser) regex(path Path, v any, options, at string) (Expr, error) {
	if path.Type != parse.TypeString && !(path.Type == parse.TypeObject && len(path.Sub) > 0) {
		return nil, errAt(at, "$regex applies to String fields; %q is %s", path, path.Type)
	}
	pat, ok := v.(string)
	if !ok {
		return nil, errAt(at, "$regex takes a string pattern, got %s", describe(v))
	}
	if len(pat) > 1000 {
		return nil, errAt(at, "pattern longer than 1000 characters")
	}
	var flags RegexFlags
	for _, c := range options {
		switch c {
		case 'i':
			flags.CaseInsensitive = true
		case 'm':
			flags.Multiline = true
		case 's':
			flags.DotAll = true
		case 'x':
			pat = stripExtended(pat) // the pattern is kept in plain form
		default:
			return nil, errAt(strings.TrimSuffix(at, ".$regex")+".$options", "unsupported regex option %q (use i, m, s or x)", string(c))
		}
	}
	if _, err := regexp.Compile(GoRegexPrefix(flags) + pat); err != nil {
		return nil, errAt(at, "invalid regular expression: %v", err)
	}
	return Regex{Path: path, Pattern: pat, Flags: flags}, nil
}

// value converts a caller value to the storage form of the path's type.
func (p *whereParser) value(path Path, v any, at string) (any, error) {
	if v == nil {
		return nil, nil
	}
	if len(path.Sub) > 0 { // inside an Object: JSON scalars compare as themselves
		if t := parse.TypeOf(v); t == "Date" {
			d, ok := parse.DateValue(v)
			if !ok {
				return nil, errAt(at, "invalid Date value")
			}
			return parse.FormatDate(d), nil
		}
		if f, ok, err := numberOf(v, at); ok {
			return f, err
		}
		switch v.(type) {
		case string, bool:
			return v, nil
		}
		return nil, errAt(at, "values inside Object fields must be strings, numbers, booleans or Dates, got %s", describe(v))
	}
	switch path.Type {
	case parse.TypeString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case parse.TypeNumber:
		if f, ok, err := numberOf(v, at); ok {
			return f, err
		}
	case parse.TypeBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
	case parse.TypeDate:
		if s, ok := v.(string); ok {
			d, err := parse.ParseDate(s)
			if err != nil {
				return nil, errAt(at, "%v", err)
			}
			return parse.FormatDate(d), nil
		}
		if parse.TypeOf(v) == "Date" {
			d, ok := parse.DateValue(v)
			if !ok {
				return nil, errAt(at, `invalid Date value: use {"__type":"Date","iso":"2024-01-31T00:00:00.000Z"}`)
			}
			return parse.FormatDate(d), nil
		}
	case parse.TypePointer:
		if s, ok := v.(string); ok {
			if !parse.ValidObjectID(s) {
				return nil, errAt(at, "%q is not an objectId", s)
			}
			return s, nil
		}
		if class, id, ok := parse.PointerID(v); ok {
			target := p.schema.Fields[path.Field].TargetClass
			if class != "" && class != target {
				return nil, errAt(at, "%q points to %s, not %s", path.Field, target, class)
			}
			return id, nil
		}
		return nil, errAt(at, `Pointer field %q takes an objectId or {"__type":"Pointer","className":%q,"objectId":"…"}, got %s`,
			path.Field, p.schema.Fields[path.Field].TargetClass, describe(v))
	case parse.TypeFile:
		if s, ok := v.(string); ok {
			return s, nil
		}
		if m, ok := v.(map[string]any); ok && m["__type"] == "File" {
			if s, ok := m["name"].(string); ok {
				return s, nil
			}
		}
	case parse.TypeObject:
		b, _ := json.Marshal(v)
		return string(b), nil
	default:
		return nil, errAt(at, "%s field %q supports only $exists here", path.Type, path)
	}
	return nil, errAt(at, "%s field %q cannot be compared with %s", path.Type, path, describe(v))
}

// elementValue converts an array element for containment checks.
func elementValue(v any, at string) (any, error) {
	if f, ok, err := numberOf(v, at); ok {
		return f, err
	}
	switch x := v.(type) {
	case string, bool:
		return x, nil
	}
	return nil, errAt(at, "array elements compare as strings, numbers or booleans, got %s", describe(v))
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		if t, ok := x["__type"].(string); ok {
			return "a " + t
		}
		return "an object"
	}
	if _, ok, _ := numberOf(v, ""); ok {
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// numberOf reads v as a number: a float64 (what the JSON and YAML
// decoders give), or what Go code building a constraint writes: any
// integer type, a float32 or a json.Number (read as a decoder reads a
// JSON number into a float64). The AST holds every number as
// a float64 (the SQL dialects bind, and Match compares, by that type), so
// it is normalized here. ok is false when v is no number at all; err is
// set for a number a float64 cannot hold as it is: NaN and ±Inf (which
// no JSON carries and SQL backends compare differently), and an integer
// beyond float64's exact range, which would silently become a neighbour
// and select other rows.
func numberOf(v any, at string) (f float64, ok bool, err error) {
	exactInt := func(i int64) (float64, bool, error) {
		f := float64(i)
		if f >= 0x1p63 || int64(f) != i {
			return 0, true, errAt(at, "integer %d has no exact float64 value (numbers are float64)", i)
		}
		return f, true, nil
	}
	exactUint := func(u uint64) (float64, bool, error) {
		f := float64(u)
		if f >= 0x1p64 || uint64(f) != u {
			return 0, true, errAt(at, "integer %d has no exact float64 value (numbers are float64)", u)
		}
		return f, true, nil
	}
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		return exactInt(int64(x))
	case int8:
		return float64(x), true, nil
	case int16:
		return float64(x), true, nil
	case int32:
		return float64(x), true, nil
	case int64:
		return exactInt(x)
	case uint:
		return exactUint(uint64(x))
	case uint8:
		return float64(x), true, nil
	case uint16:
		return float64(x), true, nil
	case uint32:
		return float64(x), true, nil
	case uint64:
		return exactUint(x)
	case uintptr:
		return exactUint(uint64(x))
	case json.Number: // read as the JSON decoder reads a number into any
		g, err := x.Float64()
		if err != nil {
			return 0, true, errAt(at, "%q is not a number a float64 can hold", string(x))
		}
		f = g
	default:
		return 0, false, nil
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, true, errAt(at, "%v is not a finite number", f)
	}
	return f, true, nil
}

// GoRegexPrefix renders flags as a Go (RE2) inline flag group, or "".
func GoRegexPrefix(f RegexFlags) string {
	g := ""
	if f.CaseInsensitive {
		g += "i"
	}
	if f.Multiline {
		g += "m"
	}
	if f.DotAll {
		g += "s"
	}
	if g == "" {
		return ""
	}
	return "(?" + g + ")"
}
