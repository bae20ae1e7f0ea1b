package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/parsemcp/parsemcp/tools"
)

// MaxAnalystCatalogBytes bounds the tools/list an analyst (the read-only
// tier) gets, as the tests hold it: the agent pays for every byte of it on
// every session. It was 10 KiB for the 15 tools up to query_class and the
// group tools (10,232 bytes); the three search tools (text_search,
// autocomplete, faceted_search: 2,370 bytes, their schemas as small as
// their arguments allow) raised it to 12.5 KiB (12,614 bytes measured). An
// operator who does not want them narrows the catalog with the policy's
// tool filter.
const MaxAnalystCatalogBytes = 12800

// DefaultMaxResponseBytes is the response budget when the operator sets
// none: about 4,000 tokens (tools.DefaultResponseBudget).
const DefaultMaxResponseBytes = tools.DefaultResponseBudget

// capGuard fits a tool's result into its response budget (the per-tool
// override, else the server's): a paged result (rows, groups, values,
// export lines) keeps the rows that fit and says how to fetch the rest;
// any other result over the budget is refused with too_large
// (tools.FitCopies). The budget holds the result's JSON as many times as
// the response carries it (Invocation.copies: twice for a result sent as
// text and as structuredContent), so it bounds what the client receives.
// The returned data is the serialized JSON, so it is not marshalled twice.
func capGuard(budget int, perTool map[string]int) func(next Handler) Handler {
	return func(next Handler) Handler {
		return func(ctx context.Context, r *Request) (any, error) {
			inv := r.Call
			data, err := next(ctx, r)
			if err != nil {
				return nil, err
			}
			limit := budget
			if n, ok := perTool[inv.Tool.Name]; ok && n > 0 {
				limit = n
			}
			n := max(inv.copies, 1)
			if raw, ok := data.(json.RawMessage); ok && len(raw)*n <= limit {
				return raw, nil
			}
			b, err := tools.FitCopies(data, limit, n)
			if err != nil {
				if _, ok := err.(*tools.Error); ok {
					return nil, err
				}
				return nil, fmt.Errorf("tool %s: %w", inv.Tool.Name, err)
			}
			return json.RawMessage(b), nil
		}
	}
}
