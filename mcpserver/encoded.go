package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
)

// A tool's result travels as JSON text inside a text content block. The
// SDK would encode that text a second time (TextContent.MarshalJSON
// escapes it into a JSON string) and then scan it once more when
// CallToolResult.MarshalJSON embeds the block; both passes over a large
// find page cost more than running its SQL (docs/PERFORMANCE.md). So the
// text is escaped once, by us, straight into the result's bytes:
//
//   - sendEncoded, the outermost receiving middleware, gives each
//     tools/call an encodedSlot in its context;
//   - successResult leaves the result's JSON text in the slot and puts a
//     placeholder in the text block;
//   - sendEncoded wraps the *mcp.CallToolResult in an encodedResult, whose
//     MarshalJSON is the SDK's own encoding of the result (placeholder
//     text, every other field as the SDK writes it) with the placeholder
//     replaced by the escaped text.
//
// The wire bytes are exactly what the SDK would have written. The SDK
// still compacts the result twice after this (its JSON-RPC layer
// validates a Marshaler's output and then the envelope's raw result);
// that part cannot be reached from outside the SDK. Without sendEncoded in
// the chain (a handler called some other way) successResult sets the text
// itself.

type encodedSlotKey struct{}

// encodedSlot holds a tool result's JSON text between successResult and
// sendEncoded.
type encodedSlot struct{ text []byte }

// textPlaceholder marks the text block whose text is in the slot. The
// random part keeps a value that happens to hold the prefix from being
// taken for it.
var textPlaceholder, quotedPlaceholder = func() (string, []byte) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	p := "parsemcp-encoded-text-" + hex.EncodeToString(b[:])
	return p, []byte(`"` + p + `"`)
}()

// sendEncoded is the receiving middleware that sends tool results'
// text encoded once (see above).
func sendEncoded(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		slot := &encodedSlot{}
		res, err := next(context.WithValue(ctx, encodedSlotKey{}, slot), method, req)
		if err != nil || slot.text == nil {
			return res, err
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil {
			return &encodedResult{CallToolResult: r, text: slot.text}, nil
		}
		return res, err
	}
}

// textResult is a successful result whose text is the JSON text b: a
// placeholder when the call has a slot, b itself otherwise.
func textResult(ctx context.Context, b []byte) *mcp.CallToolResult {
	if slot, ok := ctx.Value(encodedSlotKey{}).(*encodedSlot); ok && slot.text == nil {
		slot.text = b
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: textPlaceholder}}}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// encodedResult is a tool result whose text block's text is sent as it
// is in text (JSON text, escaped here into the block's string).
type encodedResult struct {
	*mcp.CallToolResult
	text []byte
}

func (r *encodedResult) MarshalJSON() ([]byte, error) {
	b, err := r.CallToolResult.MarshalJSON()
	if err != nil {
		return nil, err
	}
	i := bytes.Index(b, quotedPlaceholder)
	if i < 0 { // the result was replaced on its way out: nothing to fill in
		return b, nil
	}
	out := make([]byte, 0, len(b)+len(r.text)+len(r.text)/8+16)
	out = append(out, b[:i]...)
	out = jsonenc.AppendQuoted(out, r.text)
	return append(out, b[i+len(quotedPlaceholder):]...), nil
}
