package query

// Query-shape limits. A where-constraint is bounded in size, the same way
// on every backend, so that a hostile or runaway one is refused with a
// clear invalid_argument error instead of failing deep in a database
// (SQLite refuses expression trees deeper than 1000 nodes, PostgreSQL
// statements with more than 65,535 parameters) or exhausting the server.
// The caps count the whole where, the sub-queries of $inQuery, $select
// and $relatedTo included; each $match stage of a pipeline is a where of
// its own. MaxDepth (where.go) bounds the nesting.
const (
	// MaxBranches bounds the elements of every $or, $and and $nor.
	MaxBranches = 300
	// MaxConstraints bounds the conditions on fields: each operator
	// ({"a": {"$gt": 1, "$lt": 5}} is two) and each value of $all (a
	// condition of its own in SQL).
	MaxConstraints = 500
	// MaxValues bounds the values listed in $in, $nin, $all,
	// $containedBy, Relation sets and $polygon points.
	MaxValues = 10_000
	// MaxAllValues bounds the values of one $all: each is a sub-query of
	// its own, and PostgreSQL's planner slows sharply past a few hundred.
	MaxAllValues = 100
)

// shape is the size of a where. The parser counts the branches (an
// explicit $and and the implicit one of an object's keys are the same And
// in the AST); add counts the rest.
type shape struct {
	branches, constraints, values int
	widestAll                     int // values of the largest $all
}

func (s *shape) add(e Expr) {
	switch x := e.(type) {
	case And:
		s.addAll(x.Exprs)
	case Or:
		s.addAll(x.Exprs)
	case Nor:
		s.addAll(x.Exprs)
	case InQuery:
		s.constraints++
		s.add(x.Query.Where)
	case RelatedTo:
		s.constraints++
		s.add(x.Owner.Where)
	case In:
		s.constraints++
		s.values += len(x.Values)
	case All:
		s.constraints += max(len(x.Values), 1)
		s.values += len(x.Values)
		s.widestAll = max(s.widestAll, len(x.Values))
	case ContainedBy:
		s.constraints++
		s.values += len(x.Values)
	case RelationHas:
		s.constraints++
		s.values += len(x.IDs)
	case GeoPolygon:
		s.constraints++
		s.values += len(x.Points)
	case nil:
	default:
		s.constraints++
	}
}

func (s *shape) addAll(es []Expr) {
	for _, e := range es {
		s.add(e)
	}
}

// checkShape refuses a where over the limits; branches is the parser's
// count of $or/$and/$nor elements.
func checkShape(e Expr, branches int, at string) error {
	s := shape{branches: branches}
	s.add(e)
	switch {
	case s.branches > MaxBranches:
		return errAt(at, "too complex: %d elements of $or/$and/$nor; at most %d", s.branches, MaxBranches)
	case s.constraints > MaxConstraints:
		return errAt(at, "too complex: %d conditions on fields (each operator, each value of $all); at most %d", s.constraints, MaxConstraints)
	case s.widestAll > MaxAllValues:
		return errAt(at, "too many values in $all: %d; at most %d", s.widestAll, MaxAllValues)
	case s.values > MaxValues:
		return errAt(at, "too many listed values: %d in $in/$nin/$all/$containedBy/$polygon; at most %d (split the query)", s.values, MaxValues)
	}
	return nil
}
