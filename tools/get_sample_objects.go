package tools

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Sample limits.
const (
	DefaultSampleLimit = 5
	MaxSampleLimit     = 20
)

func getSampleObjectsTool() *Tool {
	return &Tool{
		Name:        "get_sample_objects",
		Op:          parse.OpFind,
		Category:    CategoryQuery,
		Title:       "Sample objects",
		Description: "The newest objects of a class.",
		Permission:  agent.Readonly,
		Timeout:     15 * time.Second,
		ReadOnly:    true,
		Input:       schemaFor[sampleArgs](map[string]*jsonschema.Schema{"limit": intSchema("", 1, MaxSampleLimit, DefaultSampleLimit)}),
		Handler:     getSampleObjects,
	}
}

type sampleArgs struct {
	ClassName string `json:"class_name"`
	Limit     *int   `json:"limit,omitempty"`
}

func getSampleObjects(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[sampleArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	limit, err := intArg("limit", args.Limit, DefaultSampleLimit, 1, MaxSampleLimit)
	if err != nil {
		return nil, err
	}
	q := sampleQuery(limit)
	if err := guardFullScan(ctx, c, cls, q); err != nil {
		return nil, err
	}
	rows, err := cls.Find(ctx, q)
	if err != nil {
		return nil, err
	}
	rows = nonNil(rows)
	res := map[string]any{"class_name": cls.Name(), "sample_count": len(rows), "results": rows}
	if el := elideLarge(rows, nil); len(el) > 0 {
		res["elided_fields"] = el
	}
	return res, nil
}

// Samples returns the limit most recently created objects the scope may
// see (also the parse://{class}/samples resource).
func Samples(ctx context.Context, s *agent.Scope, class string, limit int) ([]parse.Object, error) {
	cls, err := s.Class(ctx, class)
	if err != nil {
		return nil, err
	}
	return cls.Find(ctx, sampleQuery(limit))
}

// sampleQuery finds the limit newest objects.
func sampleQuery(limit int) *query.Query {
	return &query.Query{Order: []query.OrderKey{{Field: parse.FieldCreatedAt, Desc: true}}, Limit: limit}
}

func nonNil(rows []parse.Object) []parse.Object {
	if rows == nil {
		return []parse.Object{}
	}
	return rows
}
