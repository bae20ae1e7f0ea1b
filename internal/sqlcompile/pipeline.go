package sqlcompile

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// PipelineDialect is what the pipeline compiler needs beyond a where
// Dialect. Expressions are SQL text; values reach SQL only through the
// param functions (bind arguments).
//
// Values flow between stages in two forms. The column form is the type's
// own column type (text, a number, a boolean, a timestamp; the backend's
// form for File, GeoPoint, Polygon, Bytes). The JSON form (SQLite JSON
// text, PostgreSQL jsonb) holds Objects, Arrays and values of unknown type;
// the JSON normal form of a typed value is: String, Pointer (bare
// objectId), File (name) and Bytes (base64) as JSON strings, Numbers and
// Booleans as themselves, Dates as ISO-8601 strings in parse.DateLayout,
// GeoPoints as {"latitude","longitude"}, Polygons as [[lat,lng],…].
type PipelineDialect interface {
	Dialect
	// DatePart extracts a date part (a key of query.DateOperators) of a Date; tz
	// is "" (UTC) or the placeholder of a bound time zone (an IANA name, or
	// a "+05:30" offset when offset is set). It works in
	// column form, in UTC, as a Number.
	DatePart(op, expr, tz string, offset bool) string
	// ToJSON renders a value of type t (column form, or JSON form when
	// t's values are) in the JSON normal form, fit for JSONObject and
	// JSONArrayAgg; NULL stays NULL.
	ToJSON(expr string, t query.Type) string
	// FromJSON converts a JSON-form value to t's column form (t a String,
	// Number, Boolean, Date or Pointer); a JSON value of another type
	// becomes NULL.
	FromJSON(expr string, t query.Type) string
	// JSONAt is the JSON-form value at the path sub inside a JSON-form
	// value (NULL when missing).
	JSONAt(expr string, sub []string, param func(any) string) string
	// JSONObject builds a JSON object; keys are bound placeholders, vals
	// JSON normal forms.
	JSONObject(keys, vals []string) string
	// JSONArrayAgg aggregates JSON normal forms into a JSON array, never
	// NULL, in order (an ORDER BY list, "" for any order), of the rows
	// where filter (a condition, "" for all rows) holds.
	JSONArrayAgg(elem, filter, order string) string
	// JSONSortKeys are the ORDER BY expressions that sort JSON-form values
	// the same way on every backend (by type as MongoDB does: null,
	// numbers, strings, objects, arrays, booleans; then by value).
	JSONSortKeys(expr string) []string
	// First is the aggregate value of expr (of type t) on the group's
	// first row in the given ORDER BY order, NULL included.
	First(expr, order string, t query.Type) string
	// MinMax is the aggregate minimum (or maximum) of a scalar of type t.
	MinMax(expr string, t query.Type, max bool) string
	// Literal types a bound placeholder (or NULL) as a value of type t.
	Literal(ph string, t query.Type) string
	// Number converts an integer expression (count(*)) to the Number
	// column form.
	Number(expr string) string
	// Unwind renders the join of a row (whose JSON-form array is arr) with
	// the array's elements: the join clause, the element (JSON form), its
	// 0-based index and its ORDER BY key. With preserve, a row whose
	// array is empty, missing or not an array is kept once with NULLs.
	Unwind(arr string, preserve bool) (join, elem, index, order string)
	// NoLimit is the LIMIT bind value meaning no limit.
	NoLimit() any
}

const ordCol = "_ord" // a row's position; user field names start with a letter

// CompilePipeline renders p as one SELECT (a CTE per stage) and its bind
// arguments. The result columns are p.Output, in order (or one dummy
// column when p.Output is empty), ordered as the pipeline leaves them.
// readACL is applied to the class rows entering the pipeline and to the
// rows of every $lookup'd class (see query.ACLFilter).
func CompilePipeline(d PipelineDialect, p *query.Pipeline, readACL query.ACLFilter) (string, []any) {
	c := &pcompiler{d: d, b: &Builder{D: d}, readACL: readACL}
	prev, shape := c.pipeline(p)
	cols := make([]string, 0, len(shape))
	for _, f := range shape {
		cols = append(cols, d.Ident(f.Name))
	}
	if len(cols) == 0 {
		cols = []string{"NULL AS " + d.Ident("_none")}
	}
	with := "WITH "
	if c.recursive {
		with = "WITH RECURSIVE "
	}
	sqlText := with + strings.Join(c.ctes, ", ") + " SELECT " + strings.Join(cols, ", ") + " FROM " + prev + " ORDER BY " + d.Ident(ordCol)
	return sqlText, c.b.Args
}

// pipeline renders p on its class's rows (with its Filter and the read
// ACL) as CTEs, and returns the last one and its fields.
func (c *pcompiler) pipeline(p *query.Pipeline) (string, []query.Field) {
	d := c.d
	shape := p.Input
	stages := p.Stages
	// The filter and the leading $match stages constrain the class rows
	// themselves (so indexes apply).
	var where []query.Expr
	if p.Filter != nil {
		where = append(where, p.Filter)
	}
	for len(stages) > 0 {
		m, ok := stages[0].(*query.MatchStage)
		if !ok {
			break
		}
		if m.Where != nil {
			where = append(where, m.Where)
		}
		stages = stages[1:]
	}
	sel := make([]string, 0, len(shape)+1)
	for _, f := range shape {
		sel = append(sel, d.Ident(f.Name))
	}
	sel = append(sel, d.Ident(parse.FieldObjectID)+" AS "+d.Ident(ordCol))
	q := &query.Query{ReadACL: c.readACL, Where: query.AndOf(where...)}
	body := "SELECT " + strings.Join(sel, ", ") + " FROM " + d.Ident(p.Class)
	if w := c.b.Where(q); w != "" {
		body += " WHERE " + w
	}
	return c.stages(stages, c.cte(body), shape)
}

// stages renders stages on the rows of prev (fields in) and returns the
// last CTE and its fields.
func (c *pcompiler) stages(stages []query.Stage, prev string, in []query.Field) (string, []query.Field) {
	for _, st := range stages {
		prev = c.stage(st, prev, in)
		in = st.Output()
	}
	return prev, in
}

type pcompiler struct {
	d       PipelineDialect
	b       *Builder
	readACL query.ACLFilter
	ctes    []string
	// recursive is set once a CTE refers to itself (WITH RECURSIVE).
	recursive bool
}

func (c *pcompiler) cte(body string) string {
	name := c.d.Ident("s" + strconv.Itoa(len(c.ctes)))
	c.ctes = append(c.ctes, name+" AS ("+body+")")
	return name
}

// recursiveCTE adds a CTE with named columns whose body refers to itself
// (by the name body is given).
func (c *pcompiler) recursiveCTE(cols []string, body func(self string) string) string {
	c.recursive = true
	name := c.d.Ident("s" + strconv.Itoa(len(c.ctes)))
	c.ctes = append(c.ctes, "") // reserve the slot: body may add no CTE
	quoted := make([]string, len(cols))
	for i, col := range cols {
		quoted[i] = c.d.Ident(col)
	}
	i := len(c.ctes) - 1
	c.ctes[i] = name + "(" + strings.Join(quoted, ", ") + ") AS (" + body(name) + ")"
	return name
}

func (c *pcompiler) col(from, name string) string { return from + "." + c.d.Ident(name) }

func (c *pcompiler) as(expr, name string) string { return expr + " AS " + c.d.Ident(name) }

// passthrough selects every field of shape from the row alias "p".
func (c *pcompiler) passthrough(shape []query.Field) []string {
	out := make([]string, 0, len(shape)+1)
	for _, f := range shape {
		out = append(out, c.col("p", f.Name))
	}
	return out
}

// operand renders op over the row alias from.
func (c *pcompiler) operand(op query.Operand, from string) string {
	switch {
	case op.IsConst:
		if op.Const == nil {
			return c.d.Literal("NULL", op.Type)
		}
		return c.d.Literal(c.b.Param(op.Const), op.Type)
	case op.Bucket != nil:
		return c.bucketKey(op, from)
	case op.Op != "":
		tz := ""
		if op.TZ != "" {
			tz = c.b.Param(op.TZ)
		}
		return c.d.DatePart(op.Op, c.operand(*op.Arg, from), tz, op.TZOffset)
	}
	col := c.col(from, op.Ref)
	if len(op.Sub) == 0 {
		return col
	}
	at := c.d.JSONAt(col, op.Sub, c.b.Param)
	if op.Type.JSONForm() {
		return at
	}
	return c.d.FromJSON(at, op.Type)
}

// orderKeys renders ORDER BY items for a value of type t.
func (c *pcompiler) orderKeys(expr string, t query.Type, desc bool) []string {
	dir := " ASC"
	if desc {
		dir = " DESC"
	}
	dir += c.d.NullsOrder(desc)
	exprs := []string{expr}
	if t.JSONForm() {
		exprs = c.d.JSONSortKeys(expr)
	}
	out := make([]string, len(exprs))
	for i, e := range exprs {
		out[i] = e + dir
	}
	return out
}

func (c *pcompiler) stage(st query.Stage, prev string, in []query.Field) string {
	from := " FROM " + prev + " AS p"
	switch s := st.(type) {
	case *query.MatchStage:
		body := "SELECT *" + from
		if s.Where != nil {
			if w := c.b.Constraint(s.Where); w != "" {
				body += " WHERE " + w
			}
		}
		return c.cte(body)
	case *query.SortStage:
		var keys []string
		for _, k := range s.Keys {
			e := c.operand(query.Operand{Ref: k.Field, Sub: k.Sub, Type: k.Type}, "p")
			keys = append(keys, c.orderKeys(e, k.Type, k.Desc)...)
		}
		keys = append(keys, c.col("p", ordCol)+" ASC")
		sel := append(c.passthrough(in), c.as("row_number() OVER (ORDER BY "+strings.Join(keys, ", ")+")", ordCol))
		return c.cte("SELECT " + strings.Join(sel, ", ") + from)
	case *query.LimitStage:
		return c.cte("SELECT *" + from + " ORDER BY " + c.col("p", ordCol) + " LIMIT " + c.b.Param(int64(s.N)) + " OFFSET " + c.b.Param(int64(0)))
	case *query.SkipStage:
		return c.cte("SELECT *" + from + " ORDER BY " + c.col("p", ordCol) + " LIMIT " + c.b.Param(c.d.NoLimit()) + " OFFSET " + c.b.Param(int64(s.N)))
	case *query.ProjectStage:
		sel := make([]string, 0, len(s.Fields)+1)
		for _, f := range s.Fields {
			sel = append(sel, c.as(c.operand(f.Value, "p"), f.Field.Name))
		}
		sel = append(sel, c.col("p", ordCol))
		return c.cte("SELECT " + strings.Join(sel, ", ") + from)
	case *query.CountStage:
		return c.cte("SELECT " + c.as(c.d.Number("count(*)"), s.Field) + ", " + c.as("1", ordCol) + from + " HAVING count(*) > 0")
	case *query.UnwindStage:
		join, elem, index, order := c.d.Unwind(c.col("p", s.Field), s.Preserve)
		if !s.Elem.JSONForm() {
			elem = c.d.FromJSON(elem, s.Elem)
		}
		var sel []string
		for _, f := range s.Output() {
			switch f.Name {
			case s.Field:
				sel = append(sel, c.as(elem, f.Name))
			case s.IndexField:
				sel = append(sel, c.as(c.d.Number(index), f.Name))
			default:
				sel = append(sel, c.col("p", f.Name))
			}
		}
		sel = append(sel, c.as("row_number() OVER (ORDER BY "+c.col("p", ordCol)+" ASC, "+order+" ASC)", ordCol))
		return c.cte("SELECT " + strings.Join(sel, ", ") + from + " " + join)
	case *query.LookupStage:
		return c.lookup(s, prev)
	case *query.GroupStage:
		return c.group(s, prev)
	case *query.ReplaceRootStage:
		return c.replaceRoot(s, prev)
	case *query.BucketStage:
		return c.group(s.Group, prev)
	case *query.BucketAutoStage:
		return c.bucketAuto(s, prev, in)
	case *query.FacetStage:
		return c.facet(s, prev)
	case *query.UnionWithStage:
		return c.unionWith(s, prev, in)
	case *query.GraphLookupStage:
		return c.graphLookup(s, prev, in)
	}
	panic(fmt.Sprintf("query: unknown pipeline stage %T", st))
}

func (c *pcompiler) lookup(s *query.LookupStage, prev string) string {
	fields := query.ClassFields(s.From)
	keys := make([]string, len(fields))
	vals := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = c.b.Param(f.Name)
		vals[i] = c.d.ToJSON(c.col("f", f.Name), f.Type)
	}
	cond := c.col("f", s.ForeignField) + " = " + c.operand(s.Local, "p")
	if s.Filter != nil {
		// Unqualified columns bind to f, the innermost FROM.
		if w := c.b.Constraint(s.Filter); w != "" {
			cond += " AND (" + w + ")"
		}
	}
	if acl := c.b.ACLClause(c.col("f", "_rperm"), c.readACL); acl != "" {
		cond += " AND " + acl
	}
	sub := "(SELECT " + c.d.JSONArrayAgg(c.d.JSONObject(keys, vals), "", c.col("f", parse.FieldObjectID)+" ASC") +
		" FROM " + c.d.Ident(s.From.ClassName) + " AS f WHERE " + cond + ")"
	return c.joinArray(s.Output(), s.As, sub, prev)
}

// joinArray selects the previous stage's rows with the field as set to
// sub, the correlated array a $lookup or $graphLookup builds for each row.
func (c *pcompiler) joinArray(out []query.Field, as, sub, prev string) string {
	sel := make([]string, 0, len(out)+1)
	for _, f := range out {
		if f.Name == as {
			sel = append(sel, c.as(sub, f.Name))
			continue
		}
		sel = append(sel, c.col("p", f.Name))
	}
	sel = append(sel, c.col("p", ordCol))
	return c.cte("SELECT " + strings.Join(sel, ", ") + " FROM " + prev + " AS p")
}

func (c *pcompiler) group(s *query.GroupStage, prev string) string {
	// First a CTE computing the key parts and accumulator arguments per
	// row, so the grouping works on plain columns.
	var pre []string
	type keyCol struct {
		name string
		t    query.Type
	}
	var keyCols []keyCol
	var keyExprs []string
	key := func(op query.Operand, name string) {
		e := c.operand(op, "p")
		if op.Type.JSONKey() {
			e = c.d.ToJSON(e, op.Type)
		}
		pre = append(pre, c.as(e, name))
		keyExprs = append(keyExprs, e)
		keyCols = append(keyCols, keyCol{name, op.Type.KeyValue()})
	}
	if s.Key != nil && !s.Key.IsConst {
		key(*s.Key, "_k0")
	}
	for i, comp := range s.Components {
		key(comp.Value, "_k"+strconv.Itoa(i))
	}
	for i, a := range s.Accumulators {
		if a.Arg == nil {
			continue
		}
		e := c.operand(*a.Arg, "p")
		name := "_a" + strconv.Itoa(i)
		if a.Op == "$addToSet" {
			// A set keeps each value's first row in the group.
			if a.Arg.Type.JSONKey() {
				e = c.d.ToJSON(e, a.Arg.Type)
			}
			part := append(append([]string(nil), keyExprs...), e)
			pre = append(pre, c.as("row_number() OVER (PARTITION BY "+strings.Join(part, ", ")+" ORDER BY "+c.col("p", ordCol)+" ASC)", "_d"+strconv.Itoa(i)))
		}
		pre = append(pre, c.as(e, name))
	}
	body := "SELECT p.*"
	if len(pre) > 0 {
		body += ", " + strings.Join(pre, ", ")
	}
	g := c.cte(body + " FROM " + prev + " AS p")

	var sel []string
	switch {
	case s.Key != nil && s.Key.IsConst:
		sel = append(sel, c.as(c.operand(*s.Key, "g"), parse.FieldObjectID))
	case s.Key != nil:
		sel = append(sel, c.as(c.col("g", "_k0"), parse.FieldObjectID))
	default:
		keys := make([]string, len(s.Components))
		vals := make([]string, len(s.Components))
		for i, comp := range s.Components {
			keys[i] = c.b.Param(comp.Name)
			vals[i] = c.d.ToJSON(c.col("g", keyCols[i].name), keyCols[i].t)
		}
		sel = append(sel, c.as(c.d.JSONObject(keys, vals), parse.FieldObjectID))
	}
	ord := c.col("g", ordCol)
	for i, a := range s.Accumulators {
		arg := c.col("g", "_a"+strconv.Itoa(i))
		var e string
		switch a.Op {
		case "$count":
			e = c.d.Number("count(*)")
		case "$sum":
			switch {
			case a.Arg == nil && a.Factor == 1:
				e = c.d.Number("count(*)")
			case a.Arg == nil:
				e = "(" + c.d.Number("count(*)") + " * " + c.d.Literal(c.b.Param(a.Factor), a.Type) + ")"
			default:
				e = "COALESCE(sum(" + arg + "), " + c.d.Literal(c.b.Param(float64(0)), a.Type) + ")"
			}
		case "$avg":
			e = "avg(" + arg + ")"
		case "$min", "$max":
			e = c.d.MinMax(arg, a.Arg.Type, a.Op == "$max")
		case "$first":
			e = c.d.First(arg, ord+" ASC", a.Arg.Type)
		case "$last":
			e = c.d.First(arg, ord+" DESC", a.Arg.Type)
		case "$push":
			e = c.d.JSONArrayAgg(c.d.ToJSON(arg, a.Arg.Type), arg+" IS NOT NULL", ord+" ASC")
		case "$addToSet":
			// The distinct values in ascending order (as a sort would
			// order them), equal-ordering ones by first appearance.
			t := a.Arg.Type.KeyValue()
			order := append(c.orderKeys(arg, t, false), ord+" ASC")
			filter := arg + " IS NOT NULL AND " + c.col("g", "_d"+strconv.Itoa(i)) + " = 1"
			e = c.d.JSONArrayAgg(c.d.ToJSON(arg, t), filter, strings.Join(order, ", "))
		default:
			panic("query: unknown accumulator " + a.Op)
		}
		sel = append(sel, c.as(e, a.Name))
	}
	// Groups come out in ascending key order; keys that order the same
	// (whole arrays and objects) by their first row.
	var groupBy, order []string
	for _, k := range keyCols {
		col := c.col("g", k.name)
		groupBy = append(groupBy, col)
		order = append(order, c.orderKeys(col, k.t, false)...)
	}
	if len(order) > 0 {
		order = append(order, "min("+ord+") ASC")
	}
	if len(order) == 0 {
		// One group: count(*) makes the query an aggregate one even
		// without accumulators (SQLite wants that for HAVING).
		sel = append(sel, c.as("count(*)", "_n"), c.as("1", ordCol))
	} else {
		sel = append(sel, c.as("row_number() OVER (ORDER BY "+strings.Join(order, ", ")+")", ordCol))
	}
	body = "SELECT " + strings.Join(sel, ", ") + " FROM " + g + " AS g"
	if len(groupBy) > 0 {
		body += " GROUP BY " + strings.Join(groupBy, ", ")
	} else {
		body += " HAVING count(*) > 0" // no rows, no group (as MongoDB)
	}
	return c.cte(body)
}

func (c *pcompiler) replaceRoot(s *query.ReplaceRootStage, prev string) string {
	sel := make([]string, 0, len(s.Fields)+1)
	for _, f := range s.Fields {
		sel = append(sel, c.as(c.operand(f.Value, "p"), f.Field.Name))
	}
	sel = append(sel, c.col("p", ordCol))
	body := "SELECT " + strings.Join(sel, ", ") + " FROM " + prev + " AS p"
	if s.Root != nil {
		body += " WHERE " + c.operand(*s.Root, "p") + " IS NOT NULL"
	}
	return c.cte(body)
}
