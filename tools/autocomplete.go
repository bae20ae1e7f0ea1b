package tools

import (
	"context"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// Autocomplete limits.
const (
	DefaultSuggestLimit = 10
	MaxSuggestLimit     = 100
	// MaxPrefix bounds a prefix's length in characters.
	MaxPrefix = 200
)

func autocompleteTool() *Tool {
	return &Tool{
		Name:        "autocomplete",
		Op:          parse.OpFind,
		Category:    CategorySearch,
		Title:       "Autocomplete",
		Description: "Values of a String field starting with a prefix (any case), most frequent first.",
		Permission:  agent.Readonly,
		Timeout:     30 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[autocompleteArgs](map[string]*jsonschema.Schema{
			"where": whereRef,
			"limit": intSchema("", 1, MaxSuggestLimit, DefaultSuggestLimit),
		}),
		Handler: autocomplete,
	}
}

type autocompleteArgs struct {
	ClassName string `json:"class_name"`
	Field     string `json:"field"`
	Prefix    string `json:"prefix"`
	Where     Where  `json:"where,omitempty"`
	Limit     *int   `json:"limit,omitempty"`
}

// SuggestResult is the answer of autocomplete.
type SuggestResult struct {
	ClassName   string `json:"class_name"`
	Field       string `json:"field"`
	Prefix      string `json:"prefix"`
	Suggestions []any  `json:"suggestions"`
}

func autocomplete(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[autocompleteArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	limit, err := intArg("limit", args.Limit, DefaultSuggestLimit, 1, MaxSuggestLimit)
	if err != nil {
		return nil, err
	}
	switch n := utf8.RuneCountInString(args.Prefix); {
	case strings.TrimSpace(args.Prefix) == "":
		return nil, argRequired("prefix")
	case n > MaxPrefix:
		return nil, argErr("prefix", "is %d characters, more than %d", n, MaxPrefix)
	}
	if strings.TrimSpace(args.Field) == "" {
		return nil, argRequired("field")
	}
	f, err := topField(cls.Schema, args.Field, "field")
	if err != nil {
		return nil, err
	}
	if f.Type != parse.TypeString {
		return nil, argErr("field", "%q is a %s field; autocomplete completes String fields", args.Field, f.Type)
	}
	// The prefix as a literal: a case-insensitive anchored $regex.
	prefix := map[string]any{args.Field: map[string]any{"$regex": "^" + regexp.QuoteMeta(args.Prefix), "$options": "i"}}
	where, err := andWhere(args.Where, prefix)
	if err != nil {
		return nil, err
	}
	counts, err := facetCounts(ctx, c, cls, where, args.Field, limit)
	if err != nil {
		return nil, err
	}
	return &SuggestResult{ClassName: cls.Name(), Field: args.Field, Prefix: args.Prefix, Suggestions: counts}, nil
}
