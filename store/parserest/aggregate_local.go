package parserest

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// DefaultLocalAggregateRows is Config.LocalAggregateRows's default.
const DefaultLocalAggregateRows = 50_000

// errRelationInLocal refuses a relation constraint in a pipeline run
// locally: the rows fetched carry no relation links.
var errRelationInLocal = fmt.Errorf("%w: a $relatedTo or Relation constraint in an aggregation parsemcp runs itself (Parse Server's rows carry no relation links); filter by pointer instead, or aggregate with the master key and no row filters", store.ErrUnsupported)

// aggregateLocally runs p over the rows readACL's identity may read, which
// Parse Server itself selects: every class the pipeline reads (its own,
// each $lookup, $graphLookup and $unionWith, and every class a sub-query
// names) is fetched with GET /classes as that identity, so Parse Server
// applies its ACLs, class-level permissions and protected fields, into an
// in-memory SQLite store of the same classes (sqlite.Scratch), where the
// pipeline then runs as it would on the sqlite store, its filters and
// constraints included. A class read once, by one source, is fetched
// already narrowed by the scope's rules for it (rendered as Parse
// Server's where); the pipeline applies them again, so that narrowing is
// only a saving. The rows fetched are capped (Config.LocalAggregateRows),
// counted before any is fetched.
func (s *Store) aggregateLocally(ctx context.Context, class string, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error) {
	need, err := localSources(p)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(need))
	for c := range need {
		names = append(names, c)
	}
	sort.Strings(names)
	schemas := make([]parse.Schema, 0, len(names))
	budget := int64(s.cfg.LocalAggregateRows)
	for _, c := range names {
		sch, err := s.schemas.Shared(ctx, c)
		if err != nil {
			return nil, err
		}
		schemas = append(schemas, sch)
		where, err := s.where(ctx, &query.Query{Class: c, Where: need[c], ReadACL: readACL})
		if err != nil {
			// Not renderable as Parse Server's where: every readable row
			// (narrowing is only a saving).
			need[c], where = nil, nil
		}
		n, err := s.count(ctx, c, where, readACL)
		if err != nil {
			return nil, err
		}
		if budget -= n; budget < 0 {
			return nil, fmt.Errorf("%w: this aggregation would read more than %d rows through Parse Server's REST API to run them as this agent (Parse Server's /aggregate takes only the master key and cannot restrict its rows to the agent's); narrow it with a filter, or raise the limit", store.ErrUnsupported, s.cfg.LocalAggregateRows)
		}
	}
	scratch, err := sqlite.Scratch(ctx, schemas)
	if err != nil {
		return nil, fmt.Errorf("aggregate: local store: %w", err)
	}
	defer scratch.Close()
	for i, c := range names {
		rows, err := s.Find(ctx, &query.Query{Class: c, Where: need[c], ReadACL: readACL, Limit: -1})
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			for k, f := range schemas[i].Fields {
				if f.Type == parse.TypeRelation {
					delete(r, k)
				}
			}
		}
		if err := scratch.Create(ctx, c, rows); err != nil {
			return nil, fmt.Errorf("aggregate: load %s rows: %w", c, err)
		}
	}
	out, err := scratch.Aggregate(ctx, class, p, query.NoACLFilter)
	if err != nil && !errors.Is(err, ctx.Err()) {
		return nil, fmt.Errorf("aggregate: %w", err)
	}
	return out, err
}

// localSources names every class p reads, with the constraint its rows
// may be narrowed by when fetched (the scope's rules of its only source;
// nil: every readable row), and refuses relation constraints.
func localSources(p *query.Pipeline) (map[string]query.Expr, error) {
	uses := map[string]int{}
	need := map[string]query.Expr{}
	add := func(class string, filter query.Expr) {
		uses[class]++
		need[class] = filter
	}
	var err error
	var visit func(e query.Expr)
	visit = func(e query.Expr) {
		if e == nil || err != nil {
			return
		}
		if relational(e) {
			err = errRelationInLocal
			return
		}
		err = query.Subqueries(e, func(q *query.Query) error {
			add(q.Class, nil)
			if relational(q.Where) {
				return errRelationInLocal
			}
			return nil
		})
	}
	for _, src := range p.Sources() {
		var filter query.Expr
		if src.Filter != nil {
			filter = *src.Filter
		}
		add(src.Class, filter)
		visit(src.Where)
		visit(filter)
	}
	if err != nil {
		return nil, err
	}
	for c, n := range uses {
		if n > 1 {
			need[c] = nil // read twice: fetch what both may see
		}
	}
	return need, nil
}

// relational reports whether e holds a constraint on a Relation field's
// links ($relatedTo, or equality/$in on a Relation), at any depth outside
// sub-queries (Subqueries visits those).
func relational(e query.Expr) bool {
	switch x := e.(type) {
	case query.RelatedTo, query.RelationHas:
		return true
	case query.And:
		return anyRelational(x.Exprs)
	case query.Or:
		return anyRelational(x.Exprs)
	case query.Nor:
		return anyRelational(x.Exprs)
	case query.InQuery:
		return relational(x.Query.Where)
	}
	return false
}

func anyRelational(es []query.Expr) bool {
	for _, e := range es {
		if relational(e) {
			return true
		}
	}
	return false
}
