package parserest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// ErrRestrictedAggregate refuses an aggregation whose rows would have to
// be restricted (see Store.Aggregate).
var ErrRestrictedAggregate = fmt.Errorf("%w: aggregation through Parse Server runs over every row with the master key, and Parse Server cannot restrict the rows entering it to what this agent may read (its ACL, tenant scope or row filters); only an agent acting with the master key and no row filters may aggregate", store.ErrUnsupported)

// Aggregate runs GET /aggregate/Class?pipeline=… with the master key (the
// only credential Parse Server takes for it), the caller's stages as they
// were written. Only a caller with the master key and no row filters may
// aggregate: the pipeline runs over every row, and Parse Server on
// PostgreSQL has no reliable way to restrict its input (a $match on
// _rperm is ignored, a $match on a pointer or on objectId $in matches
// nothing, and a later $match replaces an earlier one), so a leading
// $match on the caller's ACL or the scope's rules would let rows through.
// It fails closed: such a call is ErrUnsupported.
func (s *Store) Aggregate(ctx context.Context, class string, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error) {
	if name := pgUnsupportedStage(p); name != "" {
		return nil, fmt.Errorf("%w: stage %s: Parse Server's PostgreSQL adapter does not run it (use the sqlite or postgres store for it)", store.ErrUnsupported, name)
	}
	if _, err := s.schemas.Shared(ctx, class); err != nil {
		return nil, err
	}
	if p.Raw == nil && len(p.Stages) > 0 {
		return nil, fmt.Errorf("%w: a pipeline built without its stages' text", store.ErrUnsupported)
	}
	if !readACL.IsSet() {
		return []map[string]any{}, nil // an undecided filter admits no row
	}
	restricted := !readACL.IsOpen() || p.Filter != nil
	for _, l := range p.Lookups() {
		restricted = restricted || l.Filter != nil
	}
	if restricted {
		return nil, ErrRestrictedAggregate
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
		switch st.(type) {
		case *query.FacetStage, *query.BucketStage, *query.BucketAutoStage, *query.ReplaceRootStage,
			*query.UnionWithStage, *query.GraphLookupStage:
			return st.Name()
		}
	}
	return ""
}
