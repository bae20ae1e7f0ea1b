package parserest

import (
	"context"
	"fmt"
	"net/url"
	"sort"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/object"
)

// DefaultLocalAggregateRows is Config.LocalAggregateRows's default.
const DefaultLocalAggregateRows = 50_000

// localAggregates is how many aggregations one Store runs itself at once
// (each holds its rows in memory); more wait.
const localAggregates = 4

// errRelationInLocal refuses a relation constraint in a pipeline run
// locally: the rows fetched carry no relation links.
var errRelationInLocal = fmt.Errorf("%w: a $relatedTo or Relation constraint in an aggregation parsemcp runs itself (Parse Server's rows carry no relation links); filter by pointer instead, or aggregate with the master key and no row filters", store.ErrUnsupported)

// fetch is one read of a class's rows as the caller: a source of the
// pipeline under the scope's rules for it, or the class of a sub-query
// under the sub-query's constraint.
type fetch struct {
	class string
	where query.Expr
	acl   query.ACLFilter
}

// aggregateLocally runs p over the rows readACL's identity may read, which
// Parse Server itself selects: every class the pipeline reads (its own,
// each $lookup, $graphLookup and $unionWith, and the class of every
// sub-query) is fetched with GET /classes as that identity, so Parse
// Server applies its ACLs, class-level permissions and protected fields,
// into an empty in-memory store of the same classes (Config.Scratch:
// sqlite.Scratch in parsemcp), where the pipeline then runs as it would on
// that store.
//
// Each source is fetched under its own rules (and each sub-query's class
// under the sub-query's constraint), sent to Parse Server as its where:
// Parse Server refuses a rule it would refuse in a find (one on a field
// protected from the caller), and a class read by two sources holds the
// rows of both fetches. The pipeline applies every rule again in SQLite,
// so each source sees only its own rows. A rule that cannot be written as
// Parse Server's where is refused: it could not be checked as the caller.
// The rows fetched are capped (Config.LocalAggregateRows).
func (s *Store) aggregateLocally(ctx context.Context, class string, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error) {
	if s.cfg.Scratch == nil {
		return nil, fmt.Errorf("%w: Parse Server's /aggregate takes only the master key and cannot restrict its rows to this agent's, and this store has no scratch store to run the aggregation itself (parserest.Config.Scratch)", store.ErrUnsupported)
	}
	fetches, err := localFetches(p, readACL)
	if err != nil {
		return nil, err
	}
	select {
	case s.localSem <- struct{}{}:
		defer func() { <-s.localSem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	rows := map[string][]parse.Object{}
	seen := map[string]map[string]bool{}
	budget := s.cfg.LocalAggregateRows
	for _, f := range fetches {
		if _, ok := rows[f.class]; !ok {
			rows[f.class], seen[f.class] = []parse.Object{}, map[string]bool{}
		}
		got, err := s.fetchRows(ctx, f, &budget)
		if err != nil {
			return nil, err
		}
		for _, r := range got {
			if id := object.ID(r); !seen[f.class][id] {
				seen[f.class][id] = true
				rows[f.class] = append(rows[f.class], r)
			}
		}
	}
	names := make([]string, 0, len(rows))
	for c := range rows {
		names = append(names, c)
	}
	sort.Strings(names)
	schemas := make([]parse.Schema, len(names))
	for i, c := range names {
		sch, err := s.schemas.Shared(ctx, c)
		if err != nil {
			return nil, err
		}
		schemas[i] = scratchSchema(sch)
	}
	// What goes wrong from here on is about the rows Parse Server gave
	// (their detail may name fields hidden from the caller): the caller
	// gets a plain refusal, the operator's log the detail.
	refuse := func(what string, err error) error {
		s.log.Warn("parserest: local aggregation failed", "class", class, "step", what, "err", err)
		return fmt.Errorf("%w: parsemcp could not run this aggregation over the rows Parse Server returned (%s); the server log has the detail", store.ErrUnsupported, what)
	}
	scratch, err := s.cfg.Scratch(ctx, schemas)
	if err != nil {
		return nil, refuse("the classes' schemas", err)
	}
	defer scratch.Close()
	for i, c := range names {
		// Relation markers have no column: the rows lose them.
		var relations []string
		for k, f := range schemas[i].Fields {
			if f.Type == parse.TypeRelation {
				relations = append(relations, k)
			}
		}
		for _, r := range rows[c] {
			for _, k := range relations {
				delete(r, k)
			}
		}
		if err := scratch.Create(ctx, c, rows[c]); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, refuse("loading the rows of "+c, err)
		}
	}
	out, err := scratch.Aggregate(ctx, class, p, query.NoACLFilter)
	if err != nil && ctx.Err() == nil {
		return nil, refuse("the pipeline", err)
	}
	return out, err
}

// scratchSchema is sch as the scratch store holds it: the rows are what
// Parse Server returned, so a required field it stripped (protected from
// the caller) is no error, and no default is filled in.
func scratchSchema(sch parse.Schema) parse.Schema {
	fields := make(map[string]parse.Field, len(sch.Fields))
	for k, f := range sch.Fields {
		f.Required, f.DefaultValue = false, nil
		fields[k] = f
	}
	sch.Fields = fields
	sch.Indexes = nil
	return sch
}

// localFetches lists the fetches p needs, and refuses relation
// constraints.
func localFetches(p *query.Pipeline, readACL query.ACLFilter) ([]fetch, error) {
	var out []fetch
	var err error
	visit := func(e query.Expr) {
		if e == nil || err != nil {
			return
		}
		if relational(e) {
			err = errRelationInLocal
			return
		}
		err = query.Subqueries(e, func(q *query.Query) error {
			if relational(q.Where) {
				return errRelationInLocal
			}
			if q.ReadACL.IsSet() { // an undecided sub-query admits no row
				out = append(out, fetch{class: q.Class, where: q.Where, acl: q.ReadACL})
			}
			return nil
		})
	}
	for _, src := range p.Sources() {
		var rules query.Expr
		if src.Filter != nil {
			rules = *src.Filter
		}
		out = append(out, fetch{class: src.Class, where: rules, acl: readACL})
		visit(src.Where)
		visit(rules)
	}
	return out, err
}

// fetchRows reads f's rows as f's identity (scan: by objectId, past a
// small maxLimit, rows written meanwhile neither skipped nor read twice).
// budget is the rows still allowed; a fetch that would go over it is
// refused.
func (s *Store) fetchRows(ctx context.Context, f fetch, budget *int) ([]parse.Object, error) {
	sch, err := s.schemas.Shared(ctx, f.class)
	if err != nil {
		return nil, err
	}
	where, err := s.where(ctx, &query.Query{Class: f.class, Where: f.where, ReadACL: f.acl})
	if err != nil {
		return nil, fmt.Errorf("%w: a rule or constraint on %s in this aggregation cannot be sent to Parse Server to be checked as this agent", store.ErrUnsupported, f.class)
	}
	var out []parse.Object
	err = s.scan(ctx, f.acl, "/classes/"+url.PathEscape(f.class), where, url.Values{}, nil, 0, func(page []parse.Object) error {
		if *budget -= len(page); *budget < 0 {
			return fmt.Errorf("%w: this aggregation would read more than %d rows through Parse Server's REST API to run them as this agent (Parse Server's /aggregate takes only the master key and cannot restrict its rows to the agent's); narrow it with a filter, or raise the limit (serve --parse-aggregate-rows)", store.ErrUnsupported, s.cfg.LocalAggregateRows)
		}
		out = append(out, page...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s.shape(sch, nil, out), nil
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
