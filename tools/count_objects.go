package tools

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

func countObjectsTool() *Tool {
	return &Tool{
		Name:        "count_objects",
		Op:          parse.OpCount,
		Category:    CategoryQuery,
		Title:       "Count objects",
		Description: "Count objects matching a where (cheap).",
		Permission:  agent.Readonly,
		Timeout:     20 * time.Second,
		ReadOnly:    true,
		Input:       schemaFor[countArgs](map[string]*jsonschema.Schema{"where": whereRef, "apply_canonical_filter": canonicalSchema}),
		Handler:     countObjects,
	}
}

type countArgs struct {
	ClassName            string `json:"class_name"`
	Where                Where  `json:"where,omitempty"`
	ApplyCanonicalFilter *bool  `json:"apply_canonical_filter,omitempty"`
}

func countObjects(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[countArgs](c.Args)
	if err != nil {
		return nil, err
	}
	c = c.withScope(canonicalScope(c.Scope, args.ApplyCanonicalFilter))
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	where, _, err := args.Where.parse(ctx, cls)
	if err != nil {
		return nil, err
	}
	q := &query.Query{Class: cls.Name(), Where: where}
	if err := guardFullScan(ctx, c, cls, q); err != nil {
		return nil, err
	}
	n, err := cls.Count(ctx, q)
	if err != nil {
		return nil, err
	}
	return map[string]any{"class_name": cls.Name(), "count": n}, nil
}
