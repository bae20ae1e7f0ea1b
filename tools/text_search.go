package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// Text search limits.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 200
)

// textSearchName is the tool's name (its next_call names it too).
const textSearchName = "text_search"

func textSearchTool() *Tool {
	return &Tool{
		Name:        textSearchName,
		Op:          parse.OpFind,
		Category:    CategorySearch,
		Title:       "Text search",
		Description: "Full-text search of a String field, best match first, each with its score.",
		Permission:  agent.Readonly,
		Timeout:     30 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[textSearchArgs](searchInputs(map[string]*jsonschema.Schema{
			"limit": intSchema("", 1, MaxSearchLimit, DefaultSearchLimit),
			"skip":  skipSchema,
			"keys":  keysSchema,
		})),
		Handler: textSearch,
	}
}

type textSearchArgs struct {
	searchArgs
	Keys  StringList `json:"keys,omitempty"`
	Limit *int       `json:"limit,omitempty"`
	Skip  int        `json:"skip,omitempty"`
}

func textSearch(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[textSearchArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	limit, err := intArg("limit", args.Limit, DefaultSearchLimit, 1, MaxSearchLimit)
	if err != nil {
		return nil, err
	}
	if err := skipArg(args.Skip); err != nil {
		return nil, err
	}
	where, err := args.textWhere()
	if err != nil {
		return nil, err
	}
	rows, more, err := searchFind(ctx, c, cls, where, args.Keys, limit, args.Skip)
	if err != nil {
		return nil, err
	}
	next := map[string]any{"class_name": cls.Name(), "field": args.Field, "term": args.Term, "limit": limit}
	if args.Language != "" {
		next["language"] = args.Language
	}
	if m, _ := args.Where.object(); len(m) > 0 {
		next["where"] = m
	}
	if args.Keys != nil {
		next["keys"] = []string(args.Keys)
	}
	if rows == nil {
		rows = []json.RawMessage{}
	}
	return &QueryResult{ClassName: cls.Name(), ResultCount: len(rows), Results: rows, all: rows,
		Page: newPage(textSearchName, next, limit, args.Skip, len(rows), more)}, nil
}
