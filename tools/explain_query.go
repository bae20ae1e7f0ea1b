package tools

import (
	"context"
	"errors"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

func explainQueryTool() *Tool {
	return &Tool{
		Name:        "explain_query",
		Op:          parse.OpFind,
		Category:    CategoryQuery,
		Title:       "Explain a query",
		Description: "How the database would run a query_class call: index or full scan.",
		Permission:  agent.Readonly,
		Timeout:     30 * time.Second,
		ReadOnly:    true,
		Input:       schemaFor[explainArgs](map[string]*jsonschema.Schema{"where": whereRef, "order": orderRef, "limit": intSchema("", 1, MaxQueryLimit, DefaultQueryLimit)}),
		Handler:     explainQuery,
	}
}

type explainArgs struct {
	ClassName string `json:"class_name"`
	Where     Where  `json:"where,omitempty"`
	Order     string `json:"order,omitempty" jsonschema:"sort keys as for query_class"`
	Limit     *int   `json:"limit,omitempty"`
}

func explainQuery(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[explainArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	spec, err := parseFind(ctx, cls, args.Where, args.Order, args.Limit, DefaultQueryLimit, MaxQueryLimit, 0)
	if err != nil {
		return nil, err
	}
	sch := cls.Schema
	where, order, limit := spec.where, spec.order, spec.limit
	q := &query.Query{Class: sch.ClassName, Where: where, Order: order, Limit: limit}
	plan, err := cls.Explain(ctx, q)
	if errors.Is(err, agent.ErrNoExplain) {
		return nil, &Error{Code: CodeInvalidArgument, Message: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	cfg := c.config()
	res := map[string]any{"class_name": sch.ClassName, "full_scan": plan.FullScan}
	if cfg.ExposeExplain {
		res["plan"] = plan.Detail
		res["indexes_used"] = nonNilStrings(plan.Indexes)
	}
	if plan.FullScan {
		suggest := suggestIndex(where, order)
		if len(suggest) > 0 {
			res["suggested_index"] = suggest
		}
		n, counted, err := judgeScan(ctx, c, cls, plan, suggest)
		if err != nil {
			return nil, err
		}
		if counted {
			res["row_count"] = n
		}
	}
	return res, nil
}

func nonNilStrings(a []string) []string {
	if a == nil {
		return []string{}
	}
	return a
}
