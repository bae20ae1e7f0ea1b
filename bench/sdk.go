package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK experiment: how much of the server's cost is the MCP SDK moving
// a result of a given size, and how that depends on the result's shape.
// A bare mcp.Server (no parsemcp code) has one tool per shape, each
// returning the same precomputed bytes; a real client calls them in memory.
const (
	// ShapeBoth is what parsemcp sends today: the JSON as a text content
	// item and the same JSON as structuredContent.
	ShapeBoth Mode = "text+structured"
	// ShapeText is the JSON as text content only.
	ShapeText Mode = "text only"
	// ShapeStructured is structuredContent with a short text item.
	ShapeStructured Mode = "structured+stub"
	// ShapeEmpty is a tiny result: the fixed cost of one tools/call.
	ShapeEmpty Mode = "tiny result"
)

// Shapes lists the shapes in table order.
var Shapes = []Mode{ShapeBoth, ShapeText, ShapeStructured, ShapeEmpty}

// SDKCase prepares the experiment for payload (a tool's JSON result). Close
// the returned function when done.
func SDKCase(ctx context.Context, payload []byte) (*Case, func(), error) {
	if !json.Valid(payload) {
		return nil, nil, errors.New("payload is not JSON")
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdk-floor", Version: "1"}, nil)
	results := map[Mode]func() *mcp.CallToolResult{
		ShapeBoth: func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(payload)}}, StructuredContent: json.RawMessage(payload)}
		},
		ShapeText: func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(payload)}}}
		},
		ShapeStructured: func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "(result in structuredContent)"}}, StructuredContent: json.RawMessage(payload)}
		},
		ShapeEmpty: func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"count":1}`}}, StructuredContent: json.RawMessage(`{"count":1}`)}
		},
	}
	names := map[Mode]string{ShapeBoth: "both", ShapeText: "text", ShapeStructured: "structured", ShapeEmpty: "tiny"}
	for _, m := range Shapes {
		mk := results[m]
		srv.AddTool(&mcp.Tool{Name: names[m], InputSchema: &jsonschema.Schema{Type: "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mk(), nil
		})
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, nil, err
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "sdk-floor-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		ss.Close()
		return nil, nil, err
	}
	closeAll := func() {
		cs.Close()
		ss.Close()
	}
	c := &Case{Op: fmt.Sprintf("SDK only, %d KB result", len(payload)/1024), Order: Shapes,
		Run: map[Mode]func(context.Context) (any, error){}, Sum: map[Mode]func(any) (string, error){}}
	args := map[string]any{"class_name": benchClass} // a typical small argument object
	for _, m := range Shapes {
		name := names[m]
		c.Run[m] = func(ctx context.Context) (any, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			if err != nil {
				return nil, err
			}
			if res.IsError {
				return nil, fmt.Errorf("%s: tool error", name)
			}
			return res, nil
		}
	}
	return c, closeAll, nil
}
