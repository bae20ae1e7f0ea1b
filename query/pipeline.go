package query

import (
	"fmt"
	"math"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// The aggregation pipeline: a MongoDB-style list of stages parsed against
// the class schema into typed stages, with the set of fields (and their
// types) flowing between stages tracked so that every stage is validated
// against what the previous one produces. The SQL backends render a parsed
// pipeline as one SQL statement, a CTE per stage
// (internal/sqlcompile.CompilePipeline).
//
// Conventions (Parse Server's, on MongoDB and PostgreSQL):
//   - `_id` and `objectId` both name the objectId; `$group`'s `_id` comes
//     out as `objectId`.
//   - a pointer field is named "$owner"; inside `$group` (keys and
//     accumulators) a pointer is its bare objectId. Mongo's storage form
//     "$_p_owner" is refused (DenyField suggests "$owner").
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
	// IDOf names, for a String that is a Pointer's bare objectId (a
	// pointer taken into $group), the class it points to. It says what
	// the value means; it changes no rule (sameType ignores it).
	IDOf string `json:",omitempty"`
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

// JSONForm reports whether values of t are held as JSON (SQLite JSON text,
// PostgreSQL jsonb) rather than in a typed column form.
func (t Type) JSONForm() bool {
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
// its bare objectId (a String that remembers the class, IDOf).
func (t Type) groupValue() Type {
	if t.Kind == parse.TypePointer {
		return Type{Kind: parse.TypeString, IDOf: t.Target}
	}
	return t
}

// KeyValue is the type of a $group key or $addToSet element: groupValue,
// and GeoPoints and Polygons in their JSON form (PostgreSQL has no
// equality on its point and polygon types).
func (t Type) KeyValue() Type {
	t = t.groupValue()
	if t.JSONKey() {
		t.JSON = true
	}
	return t
}

// JSONKey reports whether a value of t is converted to its JSON form to be
// grouped or compared.
func (t Type) JSONKey() bool {
	return (t.Kind == parse.TypeGeoPoint || t.Kind == parse.TypePolygon) && !t.JSON
}

// fromJSON is the type of a value of t taken out of a JSON value: scalars
// are converted to their column form, everything else stays JSON.
func (t Type) fromJSON() Type {
	if t.scalar() || t.JSONForm() {
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
	// Output is the fields of the rows the stage leaves, in order.
	Output() []Field
}

type stageOut struct{ fields []Field }

func (s stageOut) Output() []Field { return s.fields }

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
// decoded by encoding/json) against the class schema s, the agent's view
// of the class. resolve returns the schema of a class named by
// $lookup.from (the governed scope passes its own, so invisible classes
// and protected fields stay out). Errors are *Error with a Path like
// "pipeline[2].$group.total.$sum"; a field of the class the view lacks is
// a DenyField, as Parser.View makes it in a where.
//
// A $sort with several keys needs its keys' order, which a Go map does not
// keep: decode with ParsePipelineJSON instead, or use one key per $sort.
func ParsePipeline(s parse.Schema, resolve func(class string) (parse.Schema, error), stages []any) (*Pipeline, error) {
	p := &pipeParser{schema: s, resolve: resolve, shape: ClassFields(s), base: true, classRows: true, total: new(int)}
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
			if a, b := foldDup(st.Output()); a != "" {
				return nil, errAt(sat+"."+name, "fields %q and %q differ only in case; name them apart", a, b)
			}
			pl.Stages = append(pl.Stages, st)
			p.shape = st.Output()
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

// ClassFields are the fields of s's rows as they enter a pipeline.
func ClassFields(s parse.Schema) []Field {
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
	// classRows: the rows still carry every field of the class the agent
	// sees (no stage has dropped or replaced them), so a name they lack
	// is a field of the class the agent cannot use (DenyField), not one
	// a stage did not produce.
	classRows bool
	total     *int // stages parsed so far, sub-pipelines included
	nested    int  // sub-pipelines this parser is inside
	inFacet   bool // parsing a $facet's sub-pipeline
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

// unknownField is the error for the name the rows lack (prefix as in
// DenyField): a field denial while the rows are the class's, or for a
// storage-form name; otherwise a query-shape error listing what the rows
// have.
func (p *pipeParser) unknownField(name, at, prefix string) error {
	if p.classRows {
		if f, ok := p.schema.Fields[name]; ok {
			switch f.Type {
			case parse.TypeRelation:
				return errAt(at, "Relation field %q has no value in a pipeline; aggregate the related class instead", name)
			case parse.TypeACL:
				return errAt(at, "the ACL field cannot be used in a pipeline")
			}
		}
	}
	switch {
	case p.classRows:
		return DenyField(p.schema, name, at, prefix)
	case strings.HasPrefix(name, storagePrefix):
		return DenyField(whereSchema(p.schema.ClassName, p.shape), name, at, prefix)
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

// keyName validates a key of $project, $addFields, $unset or $group that
// names a field (outName); a storage-form name is refused as a field
// reference is.
func (p *pipeParser) keyName(k, at string) (string, error) {
	if strings.HasPrefix(k, storagePrefix) {
		return "", p.unknownField(k, at, "")
	}
	return outName(k, at)
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

// setField returns shape with f in place of the field of its name, or
// added last.
func setField(shape []Field, f Field) []Field {
	out := append([]Field(nil), shape...)
	if i := FieldIndex(out, f.Name); i >= 0 {
		out[i] = f
		return out
	}
	return append(out, f)
}
