package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/parse"
)

// The aggregation pipeline: a MongoDB-style list of stages parsed against
// the class schema into typed stages, with the set of fields (and their
// types) flowing between stages tracked so that every stage is validated
// against what the previous one produces. CompilePipeline renders a parsed
// pipeline as one SQL statement (a CTE per stage) for a PipelineDialect.
//
// Conventions (Parse Server's, on MongoDB and PostgreSQL):
//   - `_id` and `objectId` both name the objectId; `$group`'s `_id` comes
//     out as `objectId`.
//   - a pointer field may be named "$owner" or, in Mongo's storage form,
//     "$_p_owner"; inside `$group` (keys and accumulators) a pointer is its
//     bare objectId.
//   - a null value (and a null accumulator result) is omitted from a
//     result row, except `$group`'s objectId, which is null for the null
//     group.

// MaxPipelineStages bounds the length of a pipeline.
const MaxPipelineStages = 20

const (
	maxStageFields = 100 // output fields of one $group, $project, $addFields
	maxSortKeys    = 32
	maxLimit       = math.MaxInt32
	maxNameLen     = 63 // PostgreSQL's identifier length
)

// TypeJSON is the type of a JSON value whose type is not known in advance:
// an element of an Array field, a value inside an Object field.
const TypeJSON parse.FieldType = "JSON"

// Type is the type of a value flowing through a pipeline.
type Type struct {
	Kind   parse.FieldType // a Parse field type, or TypeJSON
	Target string          // Pointer: the target class
	// Elem is the element type of an Array built by $push, $addToSet or
	// $lookup (nil: elements of unknown type).
	Elem *Type `json:",omitempty"`
	// Fields are the components of an Object built as a composite $group
	// key.
	Fields []Field `json:",omitempty"`
	// Class makes an Object an object of that class (a $lookup result).
	Class *parse.Schema `json:"-"`
	// JSON marks a File, GeoPoint, Polygon or Bytes value held in its JSON
	// form (taken out of an array or object) rather than its column form.
	JSON bool `json:",omitempty"`
}

// Field is one field of the rows flowing between stages.
type Field struct {
	Name string
	Type Type
	// System marks createdAt/updatedAt passing through unchanged; they are
	// rendered as bare ISO strings, as Parse does for these two fields.
	System bool `json:",omitempty"`
	// KeepNull renders a null value as null instead of omitting the field
	// ($group's objectId for the null group).
	KeepNull bool `json:",omitempty"`
}

// jsonForm reports whether values of t are held as JSON (SQLite JSON text,
// PostgreSQL jsonb) rather than in a typed column form.
func (t Type) jsonForm() bool {
	switch t.Kind {
	case parse.TypeObject, parse.TypeArray, TypeJSON:
		return true
	}
	return t.JSON
}

// scalar reports whether t is a comparable, sortable scalar in column form.
func (t Type) scalar() bool {
	switch t.Kind {
	case parse.TypeString, parse.TypeNumber, parse.TypeBoolean, parse.TypeDate, parse.TypePointer:
		return true
	}
	return false
}

// groupValue is the type a value takes inside $group: a pointer becomes
// its bare objectId.
func (t Type) groupValue() Type {
	if t.Kind == parse.TypePointer {
		return Type{Kind: parse.TypeString}
	}
	return t
}

// keyValue is the type of a $group key or $addToSet element: groupValue,
// and GeoPoints and Polygons in their JSON form (PostgreSQL has no
// equality on its point and polygon types).
func (t Type) keyValue() Type {
	t = t.groupValue()
	if t.jsonKey() {
		t.JSON = true
	}
	return t
}

// jsonKey reports whether a value of t is converted to its JSON form to be
// grouped or compared.
func (t Type) jsonKey() bool {
	return (t.Kind == parse.TypeGeoPoint || t.Kind == parse.TypePolygon) && !t.JSON
}

// fromJSON is the type of a value of t taken out of a JSON value: scalars
// are converted to their column form, everything else stays JSON.
func (t Type) fromJSON() Type {
	if t.scalar() || t.jsonForm() {
		return t
	}
	t.JSON = true
	return t
}

// fieldType is the pipeline type of a class field.
func fieldType(f parse.Field) Type {
	return Type{Kind: f.Type, Target: f.TargetClass}
}

// sub returns the type of the component seg of an Object value of type t.
func (t Type) sub(seg string) (Type, error) {
	switch t.Kind {
	case parse.TypeObject:
		switch {
		case t.Fields != nil:
			for _, f := range t.Fields {
				if f.Name == seg {
					return f.Type, nil
				}
			}
			names := make([]string, len(t.Fields))
			for i, f := range t.Fields {
				names[i] = f.Name
			}
			return Type{}, fmt.Errorf("has no component %q (it has %s)", seg, strings.Join(names, ", "))
		case t.Class != nil:
			switch seg {
			case parse.FieldObjectID:
				return Type{Kind: parse.TypeString}, nil
			case parse.FieldCreatedAt, parse.FieldUpdatedAt:
				return Type{Kind: parse.TypeDate}, nil
			}
			f, ok := t.Class.Fields[seg]
			if !ok || f.Type == parse.TypeRelation || f.Type == parse.TypeACL {
				return Type{}, fmt.Errorf("has no field %q (an object of class %s)", seg, t.Class.ClassName)
			}
			return fieldType(f).fromJSON(), nil
		}
		return Type{Kind: TypeJSON}, nil
	case TypeJSON:
		return Type{Kind: TypeJSON}, nil
	}
	return Type{}, fmt.Errorf("is a %s: dotted paths reach into Object values", t.Kind)
}

// Pipeline is a parsed aggregation pipeline.
type Pipeline struct {
	// Class is the class whose rows enter the pipeline.
	Class string
	// Stages are the typed stages, in order.
	Stages []Stage
	// Input are the class's fields as the first stage sees them (objectId,
	// createdAt, updatedAt and every field but Relations and the ACL).
	Input []Field
	// Output are the fields of the result rows.
	Output []Field
	// Filter, when set, constrains the class rows before the first stage
	// (the governed scope's row filters). Set it with WithFilter.
	Filter Expr
	// HasLimit reports whether the pipeline ends with $limit or $count (it
	// bounds its own result size).
	HasLimit bool
	// Raw are the stages as the caller gave them (objects may be
	// *OrderedObject), for a backend that passes the pipeline on to Parse
	// Server (store/parserest).
	Raw []any
}

// WithFilter returns a copy of p whose input rows also satisfy e.
func (p *Pipeline) WithFilter(e Expr) *Pipeline {
	c := *p
	c.Filter = AndOf(c.Filter, e)
	return &c
}

// Lookups returns the pipeline's $lookup stages ($facet sub-pipelines
// included), so a store can tell a pipeline that joins another class.
func (p *Pipeline) Lookups() []*LookupStage {
	var out []*LookupStage
	p.walk(func(st Stage) {
		if l, ok := st.(*LookupStage); ok {
			out = append(out, l)
		}
	})
	return out
}

// Subqueries calls f for every sub-query ($inQuery, $select, $relatedTo)
// of the pipeline's constraints (Filter, every $match, restrictSearchWithMatch,
// the Filter of each $lookup and $graphLookup, and those of $facet and
// $unionWith sub-pipelines), so the governed scope
// can constrain each one as it does for a find (the store applies no read
// ACL to them by itself).
func (p *Pipeline) Subqueries(f func(*Query) error) error {
	if err := Subqueries(p.Filter, f); err != nil {
		return err
	}
	var err error
	p.walk(func(st Stage) {
		if err != nil {
			return
		}
		switch x := st.(type) {
		case *MatchStage:
			err = Subqueries(x.Where, f)
		case *LookupStage:
			err = Subqueries(x.Filter, f)
		case *GraphLookupStage:
			if err = Subqueries(x.Restrict, f); err == nil {
				err = Subqueries(x.Filter, f)
			}
		case *UnionWithStage:
			err = x.Pipeline.Subqueries(f)
		}
	})
	return err
}

// Stage is one typed stage.
type Stage interface {
	// Name is the stage's operator ("$group").
	Name() string
	out() []Field
}

type stageOut struct{ fields []Field }

func (s stageOut) out() []Field { return s.fields }

// MatchStage filters rows with a where-constraint on the current fields.
type MatchStage struct {
	stageOut
	Where Expr
}

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

// SortStage orders rows; ties keep their previous order.
type SortStage struct {
	stageOut
	Keys []SortKey
}

// SortKey is one sort key: a field, or a typed path inside one.
type SortKey struct {
	Field string
	Sub   []string
	Type  Type
	Desc  bool
}

// LimitStage keeps the first N rows.
type LimitStage struct {
	stageOut
	N int
}

// SkipStage drops the first N rows.
type SkipStage struct {
	stageOut
	N int
}

// ProjectStage reshapes rows: $project, $addFields ($set) and $unset all
// become the list of output fields with the value each one takes.
type ProjectStage struct {
	stageOut
	Op     string
	Fields []ProjectField
}

// ProjectField is one output field of a ProjectStage.
type ProjectField struct {
	Field Field
	Value Operand
}

// CountStage replaces the rows with one row {Name: count} (none when
// there are no rows).
type CountStage struct {
	stageOut
	Field string
}

// UnwindStage emits one row per element of an Array field.
type UnwindStage struct {
	stageOut
	Field      string
	Preserve   bool   // preserveNullAndEmptyArrays
	IndexField string // includeArrayIndex ("": none)
	Elem       Type
}

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

func (MatchStage) Name() string { return "$match" }
func (GroupStage) Name() string { return "$group" }
func (SortStage) Name() string  { return "$sort" }
func (LimitStage) Name() string { return "$limit" }
func (SkipStage) Name() string  { return "$skip" }
func (s ProjectStage) Name() string {
	return s.Op
}
func (CountStage) Name() string  { return "$count" }
func (UnwindStage) Name() string { return "$unwind" }
func (LookupStage) Name() string { return "$lookup" }

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

// DateOperators are the date-part operators an Operand may apply, with
// what each returns.
var DateOperators = map[string]string{
	"$year":         "the year",
	"$month":        "the month, 1-12",
	"$dayOfMonth":   "the day of the month, 1-31",
	"$dayOfWeek":    "the day of the week, 1 (Sunday) - 7 (Saturday)",
	"$dayOfYear":    "the day of the year, 1-366",
	"$hour":         "the hour, 0-23",
	"$minute":       "the minute, 0-59",
	"$second":       "the second, 0-59",
	"$millisecond":  "the millisecond, 0-999",
	"$week":         "the week of the year, 0-53 (weeks start on Sunday; days before the first Sunday are week 0)",
	"$isoWeek":      "the ISO 8601 week, 1-53",
	"$isoWeekYear":  "the ISO 8601 week-numbering year",
	"$isoDayOfWeek": "the ISO day of the week, 1 (Monday) - 7 (Sunday)",
}

// Stages and operators known from MongoDB that this server refuses by name.
var (
	unsupportedStages = map[string]bool{
		"$out": true, "$merge": true, "$sample": true, "$redact": true, "$geoNear": true, "$collStats": true, "$indexStats": true,
		"$densify": true, "$fill": true, "$setWindowFields": true, "$documents": true,
		"$changeStream": true, "$changeStreamSplitLargeEvent": true, "$currentOp": true, "$listSessions": true, "$listLocalSessions": true,
		"$planCacheStats": true, "$search": true, "$searchMeta": true, "$vectorSearch": true,
		"$listSearchIndexes": true, "$shardedDataDistribution": true,
	}
	unsupportedAccumulators = map[string]bool{
		"$stdDevPop": true, "$stdDevSamp": true, "$mergeObjects": true, "$top": true, "$topN": true,
		"$bottom": true, "$bottomN": true, "$firstN": true, "$lastN": true, "$maxN": true, "$minN": true,
		"$accumulator": true, "$median": true, "$percentile": true,
	}
	unsupportedExprOps = map[string]bool{
		"$add": true, "$subtract": true, "$multiply": true, "$divide": true, "$mod": true, "$abs": true,
		"$ceil": true, "$floor": true, "$round": true, "$trunc": true, "$concat": true, "$substr": true,
		"$substrBytes": true, "$substrCP": true, "$toLower": true, "$toUpper": true, "$split": true,
		"$cond": true, "$ifNull": true, "$switch": true, "$size": true, "$arrayElemAt": true,
		"$dateToString": true, "$dateFromString": true, "$dateTrunc": true, "$toString": true,
		"$toInt": true, "$toDouble": true, "$toDate": true, "$convert": true, "$eq": true, "$ne": true,
		"$gt": true, "$gte": true, "$lt": true, "$lte": true, "$and": true, "$or": true, "$not": true,
		"$in": true, "$filter": true, "$map": true, "$reduce": true, "$let": true, "$objectToArray": true,
		"$arrayToObject": true, "$mergeObjects": true, "$concatArrays": true, "$sum": true, "$avg": true,
		"$min": true, "$max": true, "$first": true, "$last": true, "$type": true, "$strLenCP": true,
		"$regexMatch": true, "$dateAdd": true, "$dateSubtract": true, "$dateDiff": true,
	}
)

const supportedStages = "$match, $group, $sort, $limit, $skip, $project, $addFields ($set), $unset, $count, $unwind, $lookup, $sortByCount, " +
	"$replaceRoot ($replaceWith), $bucket, $bucketAuto, $facet, $unionWith, $graphLookup"

// ParsePipeline parses stages (the JSON array of a MongoDB pipeline, as
// decoded by encoding/json) against the class schema s. resolve returns the
// schema of a class named by $lookup.from (the governed scope passes its
// own, so invisible classes and protected fields stay out). Errors are
// *Error with a Path like "pipeline[2].$group.total.$sum".
//
// A $sort with several keys needs its keys' order, which a Go map does not
// keep: decode with ParsePipelineJSON instead, or use one key per $sort.
func ParsePipeline(s parse.Schema, resolve func(class string) (parse.Schema, error), stages []any) (*Pipeline, error) {
	p := &pipeParser{schema: s, resolve: resolve, shape: classFields(s), base: true, total: new(int)}
	return p.pipeline(stages, "pipeline")
}

// pipeline parses stages (at the path at) on the rows p's shape describes.
func (p *pipeParser) pipeline(stages []any, at string) (*Pipeline, error) {
	if len(stages) > MaxPipelineStages {
		return nil, errAt(at, "%d stages: a pipeline has at most %d", len(stages), MaxPipelineStages)
	}
	if *p.total += len(stages); *p.total > maxTotalStages {
		return nil, errAt(at, "more than %d stages in all (sub-pipelines of $facet and $unionWith count too)", maxTotalStages)
	}
	pl := &Pipeline{Class: p.schema.ClassName, Input: p.shape, Raw: stages}
	for i, raw := range stages {
		sat := fmt.Sprintf("%s[%d]", at, i)
		keys, m, ok := asObject(raw)
		if !ok || len(keys) != 1 {
			return nil, errAt(sat, "a stage is an object with exactly one stage operator (%s); got %s", supportedStages, describeAny(raw))
		}
		name := keys[0]
		sts, err := p.stage(name, m[name], sat+"."+name)
		if err != nil {
			return nil, err
		}
		for _, st := range sts {
			if a, b := foldDup(st.out()); a != "" {
				return nil, errAt(sat+"."+name, "fields %q and %q differ only in case; name them apart", a, b)
			}
			pl.Stages = append(pl.Stages, st)
			p.shape = st.out()
		}
	}
	pl.Output = p.shape
	if n := len(pl.Stages); n > 0 {
		switch pl.Stages[n-1].(type) {
		case *LimitStage, *CountStage, *FacetStage:
			pl.HasLimit = true
		}
	}
	return pl, nil
}

// ParsePipelineJSON parses a pipeline given as JSON text (an array of
// stages), keeping the key order of objects (a $sort's keys, the order of
// output fields).
func ParsePipelineJSON(s parse.Schema, resolve func(class string) (parse.Schema, error), raw []byte) (*Pipeline, error) {
	v, err := decodeOrdered(raw)
	if err != nil {
		return nil, errAt("pipeline", "not valid JSON: %v", err)
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errAt("pipeline", "a pipeline is an array of stages, got %s", describeAny(v))
	}
	return ParsePipeline(s, resolve, arr)
}

// OrderedObject is a JSON object that keeps its keys' order.
type OrderedObject struct {
	Keys   []string
	Values map[string]any
}

// decodeOrdered decodes JSON text, objects as *OrderedObject.
func decodeOrdered(raw []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	v, err := decodeValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("text after the pipeline")
	}
	return v, nil
}

const maxJSONDepth = 64

func decodeValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("nested deeper than %d levels", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		case '{':
			o := &OrderedObject{Values: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				if _, dup := o.Values[k]; !dup {
					o.Keys = append(o.Keys, k)
				}
				o.Values[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		f, err := t.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %s out of range", t)
		}
		return f, nil
	}
	return tok, nil // string, bool, nil
}

// asObject returns an object's keys (in order for an OrderedObject, sorted
// for a map) and values.
func asObject(v any) ([]string, map[string]any, bool) {
	switch o := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys, o, true
	case *OrderedObject:
		if o == nil {
			return nil, nil, false
		}
		return o.Keys, o.Values, true
	}
	return nil, nil, false
}

// plain converts OrderedObjects back to maps, recursively.
func plain(v any) any {
	switch x := v.(type) {
	case *OrderedObject:
		if x == nil {
			return nil
		}
		m := make(map[string]any, len(x.Values))
		for k, e := range x.Values {
			m[k] = plain(e)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = plain(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = plain(e)
		}
		return a
	}
	return v
}

func describeAny(v any) string {
	if o, ok := v.(*OrderedObject); ok && o != nil {
		if t, ok := o.Values["__type"].(string); ok {
			return "a " + t
		}
		return "an object"
	}
	return describe(v)
}

// foldDup finds two field names equal but for case (SQLite's identifiers
// ignore case).
func foldDup(fields []Field) (string, string) {
	seen := make(map[string]string, len(fields))
	for _, f := range fields {
		k := strings.ToLower(f.Name)
		if o, ok := seen[k]; ok && o != f.Name {
			return o, f.Name
		}
		seen[k] = f.Name
	}
	return "", ""
}

// classFields are the fields of s's rows as they enter a pipeline.
func classFields(s parse.Schema) []Field {
	out := []Field{
		{Name: parse.FieldObjectID, Type: Type{Kind: parse.TypeString}},
		{Name: parse.FieldCreatedAt, Type: Type{Kind: parse.TypeDate}, System: true},
		{Name: parse.FieldUpdatedAt, Type: Type{Kind: parse.TypeDate}, System: true},
	}
	for _, name := range s.FieldNames() {
		f := s.Fields[name]
		if parse.IsSystemField(name) || f.Type == parse.TypeRelation || f.Type == parse.TypeACL {
			continue
		}
		out = append(out, Field{Name: name, Type: fieldType(f)})
	}
	return out
}

type pipeParser struct {
	schema  parse.Schema
	resolve func(string) (parse.Schema, error)
	shape   []Field
	base    bool // shape is still the class's own fields
	total   *int // stages parsed so far, sub-pipelines included
	nested  int  // sub-pipelines this parser is inside
	inFacet bool // parsing a $facet's sub-pipeline
}

func (p *pipeParser) field(name string) (Field, bool) {
	for _, f := range p.shape {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

func (p *pipeParser) fieldNames() string {
	names := make([]string, 0, len(p.shape))
	for _, f := range p.shape {
		names = append(names, f.Name)
	}
	if len(names) > 40 {
		names = append(names[:40], "…")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (p *pipeParser) unknownField(name, at string) error {
	if p.base {
		if f, ok := p.schema.Fields[name]; ok {
			switch f.Type {
			case parse.TypeRelation:
				return errAt(at, "Relation field %q has no value in a pipeline; aggregate the related class instead", name)
			case parse.TypeACL:
				return errAt(at, "the ACL field cannot be used in a pipeline")
			}
		}
	}
	return errAt(at, "unknown field %q (the rows here have: %s)", name, p.fieldNames())
}

func (p *pipeParser) stage(name string, arg any, at string) ([]Stage, error) {
	var (
		st  Stage
		err error
	)
	switch name {
	case "$match":
		st, err = p.match(arg, at)
	case "$group":
		st, err = p.group(arg, at)
	case "$sort":
		st, err = p.sort(arg, at)
	case "$limit":
		n, e := intArg(arg, at, 1)
		st, err = &LimitStage{stageOut: stageOut{p.shape}, N: n}, e
	case "$skip":
		n, e := intArg(arg, at, 0)
		st, err = &SkipStage{stageOut: stageOut{p.shape}, N: n}, e
	case "$project":
		st, err = p.project(arg, at)
	case "$addFields", "$set":
		st, err = p.addFields(name, arg, at)
	case "$unset":
		st, err = p.unset(arg, at)
	case "$count":
		st, err = p.count(arg, at)
	case "$unwind":
		st, err = p.unwind(arg, at)
	case "$lookup":
		st, err = p.lookup(arg, at)
	case "$sortByCount":
		return p.sortByCount(arg, at)
	case "$replaceRoot", "$replaceWith":
		st, err = p.replaceRoot(name, arg, at)
	case "$bucket":
		st, err = p.bucket(arg, at)
	case "$bucketAuto":
		st, err = p.bucketAuto(arg, at)
	case "$facet":
		st, err = p.facet(arg, at)
	case "$unionWith":
		st, err = p.unionWith(arg, at)
	case "$graphLookup":
		st, err = p.graphLookup(arg, at)
	default:
		if unsupportedStages[name] {
			return nil, errAt(at, "stage %s is not supported (supported: %s)", name, supportedStages)
		}
		return nil, errAt(at, "unknown stage %q (supported: %s)", name, supportedStages)
	}
	if err != nil {
		return nil, err
	}
	return []Stage{st}, nil
}

func intArg(v any, at string, min int) (int, error) {
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || f < float64(min) || f > maxLimit {
		return 0, errAt(at, "takes an integer from %d to %d, got %s", min, maxLimit, describeAny(v))
	}
	return int(f), nil
}

// pointerKey maps Mongo's storage name of a pointer field ("_p_owner")
// to the field, so {"$project": {"_p_owner": 1}} keeps "owner".
func (p *pipeParser) pointerKey(k string) string {
	if strings.HasPrefix(k, "_p_") {
		if f, ok := p.field(k[3:]); ok && f.Type.Kind == parse.TypePointer {
			return k[3:]
		}
	}
	return k
}

// outName validates an output field name; "_id" names objectId.
func outName(name, at string) (string, error) {
	if name == "_id" {
		return parse.FieldObjectID, nil
	}
	if strings.HasPrefix(name, "$") {
		return "", errAt(at, "a field name cannot start with $ (%q)", name)
	}
	if strings.Contains(name, ".") {
		return "", errAt(at, "dotted output fields (%q) are not supported: name a top-level field", name)
	}
	if !parse.ValidFieldName(name) || len(name) > maxNameLen {
		return "", errAt(at, "invalid field name %q: use a letter followed by letters, digits or underscores (at most %d)", name, maxNameLen)
	}
	return name, nil
}

// ---------------------------------------------------------------- $match

func (p *pipeParser) match(arg any, at string) (Stage, error) {
	_, _, ok := asObject(arg)
	if !ok {
		return nil, errAt(at, "takes a where-constraint object, got %s", describeAny(arg))
	}
	m := p.matchKeys(plain(arg).(map[string]any), 0)
	sch := p.schema
	if !p.base {
		sch = whereSchema(p.schema.ClassName, p.shape)
	}
	e, err := Parser{Resolve: p.resolve}.Where(sch, m)
	if err != nil {
		return nil, rebase(err, at)
	}
	if !p.base {
		if err := p.checkComputedMatch(e, at); err != nil {
			return nil, err
		}
	}
	return &MatchStage{stageOut: stageOut{p.shape}, Where: e}, nil
}

// rebase moves a where error under the stage's path.
func rebase(err error, at string) error {
	var qe *Error
	if errors.As(err, &qe) {
		path := qe.Path
		if path == "where" || strings.HasPrefix(path, "where.") || strings.HasPrefix(path, "where[") {
			path = at + strings.TrimPrefix(path, "where")
		} else if path == "" {
			path = at
		}
		return &Error{Path: path, Msg: qe.Msg}
	}
	return errAt(at, "%v", err)
}

// matchKeys rewrites `_id` to objectId and `_p_<pointer>` to the pointer
// field (with "Class$id" values reduced to the id).
func (p *pipeParser) matchKeys(m map[string]any, depth int) map[string]any {
	out := make(map[string]any, len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m[k]
		switch k {
		case "$or", "$and", "$nor":
			if arr, ok := v.([]any); ok && depth < MaxDepth {
				na := make([]any, len(arr))
				for i, e := range arr {
					if mm, ok := e.(map[string]any); ok {
						na[i] = p.matchKeys(mm, depth+1)
					} else {
						na[i] = e
					}
				}
				v = na
			}
		default:
			head, rest, dotted := strings.Cut(k, ".")
			switch {
			case head == "_id":
				head = parse.FieldObjectID
			case strings.HasPrefix(head, "_p_"):
				if f, ok := p.field(head[3:]); ok && f.Type.Kind == parse.TypePointer {
					head = head[3:]
					v = stripPointerPrefix(v, f.Type.Target)
				}
			}
			k = head
			if dotted {
				k += "." + rest
			}
		}
		if _, dup := out[k]; dup {
			// `_id` and `objectId` both given: keep both constraints.
			out["$and"] = append(asSlice(out["$and"]), map[string]any{k: v})
			continue
		}
		out[k] = v
	}
	return out
}

func asSlice(v any) []any {
	a, _ := v.([]any)
	return a
}

// stripPointerPrefix reduces Mongo's "Class$objectId" pointer strings.
func stripPointerPrefix(v any, target string) any {
	switch x := v.(type) {
	case string:
		if cls, id, ok := strings.Cut(x, "$"); ok && cls == target {
			return id
		}
		return x
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripPointerPrefix(e, target)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if strings.HasPrefix(k, "$") {
				e = stripPointerPrefix(e, target)
			}
			out[k] = e
		}
		return out
	}
	return v
}

// whereSchema is the schema a where-constraint is checked against after
// the fields have changed: computed fields compare as plain values.
func whereSchema(class string, shape []Field) parse.Schema {
	fields := make(map[string]parse.Field, len(shape))
	for _, f := range shape {
		fields[f.Name] = parse.Field{Type: whereType(f.Type), TargetClass: f.Type.Target}
	}
	return parse.Schema{ClassName: class, Fields: fields}
}

func whereType(t Type) parse.FieldType {
	switch t.Kind {
	case parse.TypeObject, TypeJSON:
		return parse.TypeObject
	case parse.TypeFile, parse.TypeGeoPoint, parse.TypePolygon, parse.TypeBytes:
		if t.JSON {
			return parse.TypeObject
		}
	}
	return t.Kind
}

// checkComputedMatch refuses, on rows that are no longer the class's own,
// $relatedTo (it matches class objects by objectId) and $lt/$gt… on a
// whole JSON value (JSON text and jsonb order differently, so the result
// would depend on the backend).
func (p *pipeParser) checkComputedMatch(e Expr, at string) error {
	var list []Expr
	switch x := e.(type) {
	case And:
		list = x.Exprs
	case Or:
		list = x.Exprs
	case Nor:
		list = x.Exprs
	case RelatedTo:
		return errAt(at+".$relatedTo", "$relatedTo matches the class's own rows: use it in a $match before any stage that reshapes them")
	case Cmp:
		if x.Op == OpEq || x.Op == OpNe || len(x.Path.Sub) > 0 {
			return nil
		}
		if f, ok := p.field(x.Path.Field); ok && whereType(f.Type) == parse.TypeObject {
			return errAt(at+"."+x.Path.Field, "ordering comparisons do not apply to the %s value %q; compare a path inside it", f.Type.Kind, x.Path.Field)
		}
	}
	for _, sub := range list {
		if err := p.checkComputedMatch(sub, at); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------- operands

// ref resolves a field reference ("$status", "$_id.y", "$_p_owner").
func (p *pipeParser) ref(s, at string) (Operand, error) {
	name := strings.TrimPrefix(s, "$")
	if strings.HasPrefix(name, "$") {
		return Operand{}, errAt(at, "variables (%s) are not supported; reference a field as \"$name\"", s)
	}
	if name == "" {
		return Operand{}, errAt(at, "empty field reference %q", s)
	}
	head, rest, dotted := strings.Cut(name, ".")
	switch {
	case head == "_id":
		head = parse.FieldObjectID
	case strings.HasPrefix(head, "_p_"):
		f, ok := p.field(head[3:])
		if !ok || f.Type.Kind != parse.TypePointer {
			return Operand{}, errAt(at, "%q is Mongo's storage name of a pointer field, but %q is not a Pointer field here", head, head[3:])
		}
		head = head[3:]
	}
	f, ok := p.field(head)
	if !ok {
		return Operand{}, p.unknownField(head, at)
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
		if !subKeyRE.MatchString(seg) {
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

var tzOffsetRE = regexp.MustCompile(`^([+-])(0\d|1[0-4]):?([0-5]\d)$`)

// timeZone validates a timezone option: UTC, an IANA name or ±hh:mm.
func timeZone(v any, at string) (string, bool, error) {
	tz, _ := v.(string)
	switch tz {
	case "UTC", "Z", "+00:00", "+0000", "Etc/UTC", "GMT":
		return "", false, nil
	}
	if m := tzOffsetRE.FindStringSubmatch(tz); m != nil {
		return m[1] + m[2] + ":" + m[3], true, nil
	}
	if tz == "" || strings.EqualFold(tz, "Local") || len(tz) > 64 {
		return "", false, errAt(at, "expected an IANA time zone such as Europe/Paris or an offset such as +05:30, got %s", describeAny(v))
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return "", false, errAt(at, "unknown time zone %q", tz)
	}
	return tz, false, nil
}

func (p *pipeParser) datePart(op string, arg any, at string) (Operand, error) {
	var tz string
	var tzOffset bool
	date := arg
	if keys, m, ok := asObject(arg); ok && len(keys) > 0 && !strings.HasPrefix(keys[0], "$") {
		date = m["date"]
		for _, k := range keys {
			switch k {
			case "date":
			case "timezone":
				var err error
				if tz, tzOffset, err = timeZone(m[k], at+".timezone"); err != nil {
					return Operand{}, err
				}
			default:
				return Operand{}, errAt(at+"."+k, "unknown option %q (use date and timezone)", k)
			}
		}
		if date == nil {
			return Operand{}, errAt(at, "needs a date: {\"date\": \"$field\"}")
		}
	}
	if arr, ok := date.([]any); ok && len(arr) == 1 {
		date = arr[0]
	}
	a, err := p.operand(date, at, false)
	if err != nil {
		return Operand{}, err
	}
	if a.Type.Kind != parse.TypeDate {
		return Operand{}, errAt(at, "%s takes a Date, got a %s value", op, a.Type.Kind)
	}
	return Operand{Op: op, Arg: &a, TZ: tz, TZOffset: tzOffset, Type: Type{Kind: parse.TypeNumber}}, nil
}

// ---------------------------------------------------------------- $group

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
			if !subKeyRE.MatchString(k) {
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
			comps = append(comps, Field{Name: k, Type: op.Type.keyValue()})
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
		keyType = op.Type.keyValue()
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
		if _, err := outName(name, fat); err != nil {
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
		et := t.keyValue()
		acc.Type = Type{Kind: parse.TypeArray, Elem: &et}
	}
	acc.Arg = &operand
	return acc, nil
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
	g.fields = []Field{{Name: parse.FieldObjectID, Type: op.Type.keyValue(), KeepNull: true}, {Name: "count", Type: num}}
	s := &SortStage{Keys: []SortKey{{Field: "count", Type: num, Desc: true}}}
	s.fields = g.fields
	p.base = false
	return []Stage{g, s}, nil
}

// ---------------------------------------------------------------- $sort

func (p *pipeParser) sort(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok || len(keys) == 0 {
		return nil, errAt(at, "takes an object of fields to 1 (ascending) or -1 (descending), got %s", describeAny(arg))
	}
	if _, isMap := arg.(map[string]any); isMap && len(keys) > 1 {
		return nil, errAt(at, "a $sort with several keys needs their order, which this form of the pipeline lost; pass the pipeline as JSON text, or use one $sort stage per key, least significant first (ties keep the previous order)")
	}
	if len(keys) > maxSortKeys {
		return nil, errAt(at, "at most %d sort keys", maxSortKeys)
	}
	st := &SortStage{stageOut: stageOut{p.shape}}
	for _, k := range keys {
		kat := at + "." + k
		var desc bool
		switch v := m[k].(type) {
		case float64:
			switch v {
			case 1:
			case -1:
				desc = true
			default:
				return nil, errAt(kat, "sort direction is 1 or -1, got %v", v)
			}
		default:
			return nil, errAt(kat, "sort direction is 1 or -1, got %s", describeAny(v))
		}
		op, err := p.ref("$"+k, kat)
		if err != nil {
			return nil, err
		}
		ks, err := sortKeys(op, desc, kat)
		if err != nil {
			return nil, err
		}
		st.Keys = append(st.Keys, ks...)
	}
	if len(st.Keys) > maxSortKeys {
		return nil, errAt(at, "at most %d sort keys", maxSortKeys)
	}
	return st, nil
}

func sortKeys(op Operand, desc bool, at string) ([]SortKey, error) {
	t := op.Type
	switch {
	case t.scalar(), t.Kind == TypeJSON:
		return []SortKey{{Field: op.Ref, Sub: op.Sub, Type: t, Desc: desc}}, nil
	case t.Kind == parse.TypeFile && !t.JSON:
		return []SortKey{{Field: op.Ref, Sub: op.Sub, Type: t, Desc: desc}}, nil
	case t.Kind == parse.TypeObject && t.Fields != nil:
		// A composite key sorts component by component, as MongoDB
		// compares embedded documents.
		var out []SortKey
		for _, c := range t.Fields {
			sub := append(append([]string(nil), op.Sub...), c.Name)
			ks, err := sortKeys(Operand{Ref: op.Ref, Sub: sub, Type: c.Type}, desc, at)
			if err != nil {
				return nil, err
			}
			out = append(out, ks...)
		}
		return out, nil
	}
	return nil, errAt(at, "cannot sort by a %s value; sort by a path inside it or by a scalar field", t.Kind)
}

// ---------------------------------------------------------------- $project, $addFields, $unset

func (p *pipeParser) project(arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok || len(keys) == 0 {
		return nil, errAt(at, "takes a non-empty object of fields to 1 (include), 0 (exclude) or a value (\"$field\", {\"$year\": …}, {\"$literal\": …}), got %s", describeAny(arg))
	}
	if len(keys) > maxStageFields {
		return nil, errAt(at, "at most %d fields", maxStageFields)
	}
	type entry struct {
		name    string
		include bool
		exclude bool
		value   *Operand
	}
	var entries []entry
	includes, excludes := 0, 0
	idExcluded := false
	seen := map[string]bool{}
	for _, k := range keys {
		kat := at + "." + k
		name, err := outName(p.pointerKey(k), kat)
		if err != nil {
			return nil, err
		}
		if seen[name] {
			return nil, errAt(kat, "%s is given twice (_id and objectId name the same field)", name)
		}
		seen[name] = true
		e := entry{name: name}
		switch v := m[k].(type) {
		case bool:
			e.include, e.exclude = v, !v
		case float64:
			switch v {
			case 1:
				e.include = true
			case 0:
				e.exclude = true
			default:
				return nil, errAt(kat, "use 1 to include, 0 to exclude, or {\"$literal\": %v} for a constant", v)
			}
		default:
			op, err := p.operand(v, kat, false)
			if err != nil {
				return nil, err
			}
			if selfRef(op, name) {
				e.include = true
			} else {
				e.value = &op
			}
		}
		if e.include || e.exclude {
			if _, ok := p.field(name); !ok {
				if e.exclude && name == parse.FieldObjectID {
					idExcluded = true
					continue
				}
				return nil, p.unknownField(name, kat)
			}
		}
		switch {
		case e.exclude && name == parse.FieldObjectID:
			idExcluded = true
			continue
		case e.exclude:
			excludes++
		default:
			includes++
		}
		if includes > 0 && excludes > 0 {
			return nil, errAt(kat, "cannot mix inclusion and exclusion in one $project (only objectId may be excluded among included fields)")
		}
		entries = append(entries, e)
	}
	var fields []ProjectField
	if includes == 0 {
		// Exclusion mode (or only objectId excluded).
		drop := map[string]bool{}
		for _, e := range entries {
			drop[e.name] = true
		}
		if idExcluded {
			drop[parse.FieldObjectID] = true
		}
		for _, f := range p.shape {
			if !drop[f.Name] {
				fields = append(fields, keep(f))
			}
		}
	} else {
		if f, ok := p.field(parse.FieldObjectID); ok && !idExcluded && !seen[parse.FieldObjectID] {
			fields = append(fields, keep(f))
		}
		for _, e := range entries {
			if e.include {
				f, _ := p.field(e.name)
				fields = append(fields, keep(f))
				continue
			}
			fields = append(fields, computed(e.name, *e.value))
		}
	}
	st := &ProjectStage{Op: "$project", Fields: fields}
	st.fields = projectOut(fields)
	p.base = false
	return st, nil
}

func keep(f Field) ProjectField {
	return ProjectField{Field: f, Value: Operand{Ref: f.Name, Type: f.Type}}
}

func computed(name string, op Operand) ProjectField {
	return ProjectField{Field: Field{Name: name, Type: op.Type}, Value: op}
}

// selfRef reports whether op is the plain reference "$name" (which keeps
// the field as it is).
func selfRef(op Operand, name string) bool {
	return op.Ref == name && len(op.Sub) == 0 && op.Op == "" && !op.IsConst
}

func projectOut(fields []ProjectField) []Field {
	out := make([]Field, len(fields))
	for i, f := range fields {
		out[i] = f.Field
	}
	return out
}

func (p *pipeParser) addFields(op string, arg any, at string) (Stage, error) {
	keys, m, ok := asObject(arg)
	if !ok || len(keys) == 0 {
		return nil, errAt(at, "takes a non-empty object of fields to values (\"$field\", a constant, {\"$year\": …}), got %s", describeAny(arg))
	}
	if len(keys) > maxStageFields {
		return nil, errAt(at, "at most %d fields", maxStageFields)
	}
	fields := make([]ProjectField, 0, len(p.shape)+len(keys))
	for _, f := range p.shape {
		fields = append(fields, keep(f))
	}
	for _, k := range keys {
		kat := at + "." + k
		name, err := outName(k, kat)
		if err != nil {
			return nil, err
		}
		val, err := p.operand(m[k], kat, true)
		if err != nil {
			return nil, err
		}
		pf := computed(name, val)
		if f, ok := p.field(name); ok && selfRef(val, name) {
			pf = keep(f)
		}
		replaced := false
		for i := range fields {
			if fields[i].Field.Name == name {
				fields[i], replaced = pf, true
				break
			}
		}
		if !replaced {
			fields = append(fields, pf)
		}
	}
	st := &ProjectStage{Op: op, Fields: fields}
	st.fields = projectOut(fields)
	p.base = false
	return st, nil
}

func (p *pipeParser) unset(arg any, at string) (Stage, error) {
	var names []string
	switch v := arg.(type) {
	case string:
		names = []string{v}
	case []any:
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, errAt(fmt.Sprintf("%s[%d]", at, i), "expected a field name, got %s", describeAny(e))
			}
			names = append(names, s)
		}
	}
	if len(names) == 0 {
		return nil, errAt(at, "takes a field name or a non-empty array of field names, got %s", describeAny(arg))
	}
	drop := map[string]bool{}
	for i, n := range names {
		nat := at
		if _, isArr := arg.([]any); isArr {
			nat = fmt.Sprintf("%s[%d]", at, i)
		}
		name, err := outName(p.pointerKey(n), nat)
		if err != nil {
			return nil, err
		}
		if _, ok := p.field(name); !ok {
			return nil, p.unknownField(name, nat)
		}
		drop[name] = true
	}
	var fields []ProjectField
	for _, f := range p.shape {
		if !drop[f.Name] {
			fields = append(fields, keep(f))
		}
	}
	st := &ProjectStage{Op: "$unset", Fields: fields}
	st.fields = projectOut(fields)
	p.base = false
	return st, nil
}

// ---------------------------------------------------------------- $count, $unwind, $lookup

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
	return st, nil
}

func (p *pipeParser) unwind(arg any, at string) (Stage, error) {
	st := &UnwindStage{}
	path := arg
	pat := at
	if keys, m, ok := asObject(arg); ok {
		path = m["path"]
		pat = at + ".path"
		for _, k := range keys {
			kat := at + "." + k
			switch k {
			case "path":
			case "preserveNullAndEmptyArrays":
				b, ok := m[k].(bool)
				if !ok {
					return nil, errAt(kat, "takes true or false, got %s", describeAny(m[k]))
				}
				st.Preserve = b
			case "includeArrayIndex":
				s, ok := m[k].(string)
				if !ok {
					return nil, errAt(kat, "takes a field name, got %s", describeAny(m[k]))
				}
				name, err := outName(s, kat)
				if err != nil {
					return nil, err
				}
				st.IndexField = name
			default:
				return nil, errAt(kat, "unknown option %q (use path, preserveNullAndEmptyArrays, includeArrayIndex)", k)
			}
		}
	}
	s, ok := path.(string)
	if !ok || !strings.HasPrefix(s, "$") {
		return nil, errAt(pat, "takes a field reference like \"$tags\", got %s", describeAny(path))
	}
	if strings.Contains(s, ".") {
		return nil, errAt(pat, "unwinding a path inside an object (%s) is not supported; unwind a top-level Array field", s)
	}
	op, err := p.ref(s, pat)
	if err != nil {
		return nil, err
	}
	if op.Type.Kind != parse.TypeArray {
		return nil, errAt(pat, "%s is a %s field; $unwind applies to Array fields", s, op.Type.Kind)
	}
	if st.IndexField == op.Ref {
		return nil, errAt(at+".includeArrayIndex", "the index field cannot be the unwound field")
	}
	st.Field = op.Ref
	st.Elem = Type{Kind: TypeJSON}
	if op.Type.Elem != nil {
		st.Elem = op.Type.Elem.fromJSON()
	}
	var out []Field
	for _, f := range p.shape {
		switch f.Name {
		case st.Field:
			out = append(out, Field{Name: f.Name, Type: st.Elem})
		case st.IndexField:
		default:
			out = append(out, f)
		}
	}
	if st.IndexField != "" {
		out = append(out, Field{Name: st.IndexField, Type: Type{Kind: parse.TypeNumber}})
	}
	st.fields = out
	p.base = false
	return st, nil
}

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
	lop, err := p.ref("$"+strings.TrimPrefix(local, "$"), at+".localField")
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
		if strings.HasPrefix(ff, "_p_") {
			ff = ff[3:]
		}
		f, ok := fs.Fields[ff]
		if !ok || (f.Type != parse.TypePointer && f.Type != parse.TypeString) {
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

// setField returns shape with f in place of the field of its name, or
// added last.
func setField(shape []Field, f Field) []Field {
	out := append([]Field(nil), shape...)
	if i := fieldIndex(out, f.Name); i >= 0 {
		out[i] = f
		return out
	}
	return append(out, f)
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
