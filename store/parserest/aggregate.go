package parserest

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// Aggregate runs GET /aggregate/Class?pipeline=… with the master key (the
// only credential Parse Server takes for it). The caller's stages go as
// they were written; the governed scope's row filter becomes a leading
// $match, and a read ACL a leading $match on _rperm, so the rows entering
// the pipeline are the ones the caller may read. What the master-key
// pipeline could not restrict that way is refused: a $lookup of another
// class, and sub-queries inside a $match, for a caller without the master
// key or with row filters.
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
		if restricted || l.Filter != nil {
			return nil, fmt.Errorf("%w: $lookup through Parse Server needs the master key and no row filters", store.ErrUnsupported)
		}
	}
	subs := false
	_ = p.Subqueries(func(*query.Query) error { subs = true; return nil })
	if subs && restricted {
		return nil, fmt.Errorf("%w: $inQuery, $select and $relatedTo inside an aggregate through Parse Server need the master key and no row filters", store.ErrUnsupported)
	}
	stages := make([]any, 0, len(p.Raw)+2)
	if !readACL.IsOpen() {
		entries := readACL.Entries()
		perms := make([]any, 0, len(entries)+1)
		for _, e := range entries {
			perms = append(perms, e)
		}
		stages = append(stages, map[string]any{"$match": map[string]any{"_rperm": map[string]any{"$in": perms}}})
	}
	if p.Filter != nil {
		w, err := s.renderer(ctx, readACL).Where(class, p.Filter)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", store.ErrUnsupported, err)
		}
		stages = append(stages, map[string]any{"$match": w})
	}
	stages = append(stages, p.Raw...)
	params := url.Values{}
	if len(stages) > 0 {
		params.Set("pipeline", jsonParam(stages))
	} else {
		params.Set("pipeline", "[]")
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
