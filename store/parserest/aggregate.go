package parserest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/parsemcp/parsemcp/query"
)

// Aggregate runs a pipeline. With the master key and no row rules it is
// Parse Server's own: GET /aggregate/Class?pipeline=… (the only credential
// Parse Server takes for it), the caller's stages as they were written.
// Otherwise parsemcp runs it itself over the rows the caller may read
// (aggregateLocally): Parse Server on PostgreSQL has no reliable way to
// restrict an aggregation's input (a $match on _rperm is ignored, a
// $match on a pointer or on objectId $in matches nothing, and a later
// $match replaces an earlier one), so passing the caller's ACL or the
// scope's rules on as a leading $match would let rows through. The stages
// Parse Server's PostgreSQL adapter does not translate ($facet, $bucket,
// …; it answers the class's rows instead) run locally too.
func (s *Store) Aggregate(ctx context.Context, class string, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error) {
	if p.Class != class {
		return nil, fmt.Errorf("pipeline was parsed for class %s, not %s", p.Class, class)
	}
	if _, err := s.schemas.Shared(ctx, class); err != nil {
		return nil, err
	}
	if !readACL.IsSet() {
		return []map[string]any{}, nil // an undecided filter admits no row
	}
	// Restricted: the caller is not the master key, a source carries row
	// rules, or a sub-query does (its rules are in the parsed pipeline,
	// not in the stages as written).
	restricted := !readACL.IsOpen()
	for _, src := range p.Sources() {
		restricted = restricted || *src.Filter != nil
	}
	_ = p.Subqueries(func(*query.Query) error { restricted = true; return nil })
	if restricted || pgUnsupportedStage(p) != "" || (p.Raw == nil && len(p.Stages) > 0) {
		return s.aggregateLocally(ctx, class, p, readACL)
	}
	params := url.Values{"pipeline": {"[]"}}
	if len(p.Raw) > 0 {
		params.Set("pipeline", jsonParam(p.Raw))
	}
	var resp struct {
		Results []map[string]any `json:"results"`
	}
	if err := s.do(ctx, request{method: http.MethodGet, path: "/aggregate/" + url.PathEscape(class), query: params, cred: master}, &resp); err != nil {
		return nil, err
	}
	if resp.Results == nil {
		resp.Results = []map[string]any{}
	}
	return resp.Results, nil
}

// pgUnsupportedStage names the first stage of p that Parse Server's
// PostgreSQL adapter does not translate into SQL ("" for none). Those
// stages are refused before any request rather than passed on: the
// adapter has no translation for them, so what came back would not be
// what the pipeline means.
func pgUnsupportedStage(p *query.Pipeline) string {
	for _, st := range p.Stages {
		switch st := st.(type) {
		case *query.FacetStage, *query.BucketStage, *query.BucketAutoStage, *query.ReplaceRootStage,
			*query.UnionWithStage, *query.GraphLookupStage:
			return st.Name()
		case *query.MatchStage:
			// The adapter's $match matches no row under a $text or a
			// $regex (with or without options).
			if textOrRegex(st.Where) {
				return st.Name() + " with $text or $regex"
			}
		case *query.GroupStage:
			// Date parts of a key: the adapter groups by the whole date
			// without a timezone, and fails (error 102) with one.
			if groupsByDatePart(st) {
				return st.Name() + " by date parts"
			}
		}
	}
	return ""
}

// textOrRegex reports whether a constraint holds a $text or a $regex.
func textOrRegex(e query.Expr) bool {
	var list []query.Expr
	switch x := e.(type) {
	case query.Text, query.Regex:
		return true
	case query.And:
		list = x.Exprs
	case query.Or:
		list = x.Exprs
	case query.Nor:
		list = x.Exprs
	}
	for _, s := range list {
		if textOrRegex(s) {
			return true
		}
	}
	return false
}

// groupsByDatePart reports whether a $group key (or a component of a
// composite key) is a date part ($year, $month, …).
func groupsByDatePart(g *query.GroupStage) bool {
	datePart := func(op *query.Operand) bool { _, ok := query.DateOperators[op.Op]; return ok }
	if g.Key != nil && datePart(g.Key) {
		return true
	}
	for _, c := range g.Components {
		if datePart(&c.Value) {
			return true
		}
	}
	return false
}
