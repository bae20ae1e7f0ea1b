package agent

import (
	"context"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Aggregate runs a pipeline governed like a find: the class's CLP and row
// rules and the ACL filter the rows entering it; every $lookup'd class and
// every sub-query of a $match is checked and filtered the same way.
func (s *Scope) Aggregate(ctx context.Context, p *query.Pipeline) ([]map[string]any, error) {
	p, err := s.governPipeline(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.st.Aggregate(ctx, p.Class, p, s.readACL())
}

// CheckPipeline refuses p exactly as Aggregate would (hidden classes,
// class-level permissions of the class, of every $lookup and of every
// sub-query) without running it: a dry run must not call valid what the
// run refuses. It may constrain p's stages in place, so call it instead of
// Aggregate, not before it.
func (s *Scope) CheckPipeline(ctx context.Context, p *query.Pipeline) error {
	_, err := s.governPipeline(ctx, p)
	return err
}

// governPipeline applies the agent's constraints to p: every class it
// reads (its own, each $lookup, $graphLookup and $unionWith, in $facet
// sub-pipelines too) is governed like a find on that class, and so is
// every sub-query of its constraints.
func (s *Scope) governPipeline(ctx context.Context, p *query.Pipeline) (*query.Pipeline, error) {
	p = p.WithFilter(nil) // a copy: its Filter is the scope's to set
	for _, src := range p.Sources() {
		r, err := s.govern(ctx, src.Class, parse.OpFind, false, src.Where)
		if err != nil {
			return nil, err
		}
		// Row rules, filters and tenant scope narrow the joined rows too.
		*src.Filter = query.AndOf(*src.Filter, r)
	}
	if err := p.Subqueries(s.governSub(ctx)); err != nil {
		return nil, err
	}
	return p, nil
}
