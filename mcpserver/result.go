package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/tools"
)

// A result is encoded once (the cap guard did it) and travels as JSON
// text; for a tool with an output schema, the same bytes are its
// structuredContent too (encoded.go), after a check against the schema.
// out is nil for a tool without one, or a session that gets no
// structuredContent (Server.structured). rc says which copies a
// structured result travels as: under ResultStructured its text block is
// StructuredOnlyNote. The error is a result that does not match out.
func successResult(ctx context.Context, data any, out *jsonschema.Schema, rc ResultContent, oc *outputChecks) (*mcp.CallToolResult, error) {
	b, ok := data.(json.RawMessage) // already serialized by the cap guard
	if !ok {
		var err error
		if b, err = jsonenc.Marshal(data); err != nil {
			return errorResult(&tools.Error{Code: tools.CodeInternal, Message: "internal error: result not serializable"}), nil
		}
	}
	if out != nil {
		if err := oc.check(out, b); err != nil {
			return nil, err
		}
	}
	return textResult(ctx, b, out == nil || rc != ResultStructured, out != nil), nil
}

func errorResult(e *tools.Error) *mcp.CallToolResult {
	b, _ := json.Marshal(e)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}
