package tools

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Faceted search limits.
const (
	DefaultFacetResults = 10
	MaxFacets           = 5
	DefaultFacetLimit   = 10
	MaxFacetLimit       = 100
)

func facetedSearchTool() *Tool {
	return &Tool{
		Name:        "faceted_search",
		Op:          parse.OpFind,
		Category:    CategorySearch,
		Title:       "Faceted search",
		Description: "text_search's best rows, the match total, and per facet field its value counts over all matches.",
		Permission:  agent.Readonly,
		Timeout:     60 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[facetedSearchArgs](searchInputs(map[string]*jsonschema.Schema{
			"facets":      {Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(MaxFacets)},
			"limit":       intSchema("", 0, MaxSearchLimit, DefaultFacetResults),
			"facet_limit": intSchema("", 1, MaxFacetLimit, DefaultFacetLimit),
			"term":        {Type: "string", Description: "as text_search"},
			"field":       {Type: "string"},
		})),
		Handler: facetedSearch,
	}
}

type facetedSearchArgs struct {
	searchArgs
	Facets     StringList `json:"facets"`
	Limit      *int       `json:"limit,omitempty"`
	FacetLimit *int       `json:"facet_limit,omitempty"`
}

// FacetResult is the answer of faceted_search.
type FacetResult struct {
	ClassName   string `json:"class_name"`
	Total       int64  `json:"total"`
	ResultCount int    `json:"result_count"`
	Results     []any  `json:"results"`
	// Facets maps each facet field to its {value, count} buckets.
	Facets map[string][]any `json:"facets"`
}

func facetedSearch(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[facetedSearchArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	limit, err := intArg("limit", args.Limit, DefaultFacetResults, 0, MaxSearchLimit)
	if err != nil {
		return nil, err
	}
	facetLimit, err := intArg("facet_limit", args.FacetLimit, DefaultFacetLimit, 1, MaxFacetLimit)
	if err != nil {
		return nil, err
	}
	var facets []string
	for _, f := range args.Facets {
		if f = strings.TrimSpace(f); f != "" && !slices.Contains(facets, f) {
			facets = append(facets, f)
		}
	}
	switch {
	case len(facets) == 0:
		return nil, argRequired("facets")
	case len(facets) > MaxFacets:
		return nil, argErr("facets", "names %d fields, more than %d", len(facets), MaxFacets)
	}
	where, err := args.textWhere()
	if err != nil {
		return nil, err
	}
	res := &FacetResult{ClassName: cls.Name(), Results: []any{}, Facets: map[string][]any{}}
	if limit > 0 {
		rows, _, err := searchFind(ctx, c, cls, where, nil, limit, 0)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			res.Results = append(res.Results, r)
		}
	}
	res.ResultCount = len(res.Results)
	expr, err := cls.Where(ctx, where)
	if err != nil {
		return nil, err
	}
	if res.Total, err = cls.Count(ctx, &query.Query{Class: cls.Name(), Where: expr}); err != nil {
		return nil, err
	}
	for _, f := range facets {
		if res.Facets[f], err = facetCounts(ctx, c, cls, where, f, facetLimit); err != nil {
			return nil, err
		}
	}
	return res, nil
}
