// Package query is Parse's REST query language: where-constraints parsed
// into a typed AST, validated against a class schema. The SQL backends
// compile the AST to parameterised SQL for their dialect
// (internal/sqlcompile); values never reach SQL text, they travel as bind
// arguments.
package query

import (
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// Query is a find or count against one class.
type Query struct {
	Class string
	Where Expr // nil: every row
	Order []OrderKey
	Limit int // < 0: no limit
	Skip  int
	// Keys restricts the returned fields (objectId, createdAt and updatedAt
	// are always returned). Nil returns every field.
	Keys []string
	// Rank, when set, is the $text whose rank $score orders by and returns
	// (ScoreText); nil: the one $text at the top of Where.
	Rank *Text
	// ReadACL keeps only the rows it admits (`_rperm`). Its zero value
	// admits none: set NoACLFilter for no restriction (the master key, the
	// server's own lookups) or ACLEntries. The governed scope sets it;
	// tools never do.
	ReadACL ACLFilter
}

// OrderKey is one sort key.
type OrderKey struct {
	Field string
	// Sub is a path inside an Object field ("address.city": Field
	// "address", Sub ["city"]); nil for the field itself.
	Sub  []string
	Desc bool
}

// Expr is a node of a where-constraint.
type Expr interface{ isExpr() }

// Path names a field, optionally a path into an Object field ("meta.plan").
type Path struct {
	Field string
	Sub   []string
	Type  parse.FieldType // type of Field in the schema
}

func (p Path) String() string {
	if len(p.Sub) == 0 {
		return p.Field
	}
	return p.Field + "." + strings.Join(p.Sub, ".")
}

// And, Or and Nor combine constraints.
type (
	And struct{ Exprs []Expr }
	Or  struct{ Exprs []Expr }
	Nor struct{ Exprs []Expr }
)

// CmpOp is a comparison operator.
type CmpOp string

// The comparison operators.
const (
	OpEq  CmpOp = "="
	OpNe  CmpOp = "<>"
	OpLt  CmpOp = "<"
	OpLte CmpOp = "<="
	OpGt  CmpOp = ">"
	OpGte CmpOp = ">="
)

// Cmp compares a field to a value. Value is already converted to its storage
// form (string, float64, bool, or nil).
type Cmp struct {
	Path  Path
	Op    CmpOp
	Value any
	// ArrayElem compares against the elements of an Array field (array
	// contains) instead of the field itself.
	ArrayElem bool
}

// In matches a field against a set of values ($in, or $nin when Not).
type In struct {
	Path      Path
	Values    []any
	Not       bool
	ArrayElem bool
}

// All matches an Array field containing every value.
type All struct {
	Path   Path
	Values []any
}

// Exists matches rows where the field is (or is not) set.
type Exists struct {
	Path   Path
	Exists bool
}

// Regex matches a String field against a regular expression in RE2 syntax,
// with RE2's meaning on every backend (Go's regexp on SQLite and in Match;
// PostgreSQL's dialect translates it to an equivalent ARE).
type Regex struct {
	Path    Path
	Pattern string
	Flags   RegexFlags
}

// RegexFlags are the $options a dialect renders in its engine's syntax.
type RegexFlags struct {
	CaseInsensitive bool // i
	Multiline       bool // m: ^ and $ match at line breaks
	DotAll          bool // s: . matches a line break
}

func (And) isExpr()    {}
func (Or) isExpr()     {}
func (Nor) isExpr()    {}
func (Cmp) isExpr()    {}
func (In) isExpr()     {}
func (All) isExpr()    {}
func (Exists) isExpr() {}
func (Regex) isExpr()  {}

// Error is a query the schema or the language refuses. Path names the
// offending location in the caller's where ("where.status.$in[2]").
type Error struct {
	Path string
	Msg  string
	// Denied is set when the query names a field its class's schema (the
	// agent's view) lacks: a refusal rather than a malformed query
	// (DenyField).
	Denied *FieldDenial
}

func (e *Error) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

func errAt(path, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// InQuery matches a field against a column of the rows of another query:
// $inQuery/$notInQuery (Key is objectId, the field a Pointer to the
// sub-query's class) and $select/$dontSelect (any Key). The governed scope
// gives the sub-query its own ReadACL and class-level permission checks.
type InQuery struct {
	Path  Path
	Query *Query
	Key   string
	Not   bool
}

// RelatedTo matches the objects a Relation field of the Owner query's rows
// links to ($relatedTo).
type RelatedTo struct {
	Owner *Query
	Field string
}

// RelationHas matches rows whose Relation field links to one of IDs (or to
// none of them, when Not): {"members": <Pointer>} and $in/$nin on a Relation.
type RelationHas struct {
	Field, Class string
	IDs          []any
	Not          bool
}

// ContainedBy matches Array fields whose every element is one of Values.
type ContainedBy struct {
	Path   Path
	Values []any
}

// GeoBox matches GeoPoints inside a latitude/longitude box ($within $box).
type GeoBox struct {
	Path                       Path
	SWLat, SWLng, NELat, NELng float64
}

// GeoNear matches GeoPoints within MaxRadians (0: any distance) of a point
// ($nearSphere, $geoWithin $centerSphere). A $nearSphere also orders the
// results nearest first when no order is given.
type GeoNear struct {
	Path       Path
	Lat, Lng   float64
	MaxRadians float64
	Sort       bool
}

// GeoPolygon matches GeoPoints inside a polygon of [lat, lng] points
// ($geoWithin $polygon).
type GeoPolygon struct {
	Path   Path
	Points [][2]float64
}

func (InQuery) isExpr()     {}
func (RelatedTo) isExpr()   {}
func (RelationHas) isExpr() {}
func (ContainedBy) isExpr() {}
func (GeoBox) isExpr()      {}
func (GeoNear) isExpr()     {}
func (GeoPolygon) isExpr()  {}

// AndOf joins constraints, skipping nils: nil for none, the constraint
// itself for one, an And of them (in order) for more.
func AndOf(es ...Expr) Expr {
	var out []Expr
	for _, e := range es {
		if e != nil {
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return And{Exprs: out}
}

// Subqueries calls f for every sub-query in e (depth first), so the
// governed scope can constrain each one.
func Subqueries(e Expr, f func(*Query) error) error {
	switch x := e.(type) {
	case And:
		return subqueriesOf(x.Exprs, f)
	case Or:
		return subqueriesOf(x.Exprs, f)
	case Nor:
		return subqueriesOf(x.Exprs, f)
	case InQuery:
		if err := Subqueries(x.Query.Where, f); err != nil {
			return err
		}
		return f(x.Query)
	case RelatedTo:
		if err := Subqueries(x.Owner.Where, f); err != nil {
			return err
		}
		return f(x.Owner)
	}
	return nil
}

func subqueriesOf(es []Expr, f func(*Query) error) error {
	for _, e := range es {
		if err := Subqueries(e, f); err != nil {
			return err
		}
	}
	return nil
}

// Near returns the $nearSphere of e that orders results, if any (only a
// top-level one, or one inside a top-level $and, orders).
func Near(e Expr) *GeoNear {
	switch x := e.(type) {
	case GeoNear:
		if x.Sort {
			return &x
		}
	case And:
		for _, sub := range x.Exprs {
			if n := Near(sub); n != nil {
				return n
			}
		}
	}
	return nil
}
