package mcpserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/internal/selfcheck"
)

// A tool's result travels as JSON text inside a text content block, and,
// for a tool that declares an output schema, as that same JSON in
// structuredContent. The SDK would encode the text a second time
// (TextContent.MarshalJSON escapes it into a JSON string) and then scan it
// once more when CallToolResult.MarshalJSON embeds the block; both passes
// over a large find page cost more than running its SQL
// (docs/PERFORMANCE.md). So the result is encoded once, by us, and its
// bytes are written straight into the result's, as the text block's
// escaped string and as structuredContent's raw value:
//
//   - sendEncoded, the outermost receiving middleware, gives each
//     tools/call an encodedSlot in its context;
//   - successResult leaves the result's JSON text in the slot and puts
//     placeholders in the text block and in structuredContent (only in
//     the one that carries the result under Options.ResultContent text or
//     structured: resultcontent.go);
//   - sendEncoded wraps the *mcp.CallToolResult in an encodedResult, whose
//     MarshalJSON is the SDK's own encoding of the result (placeholders,
//     every other field as the SDK writes it; CallToolResult.AppendJSON,
//     go-sdk patch 16) with the placeholders replaced by the text, escaped
//     once and raw once.
//
// The wire bytes are exactly what the SDK would have written. As
// encodedResult appends its JSON (AppendJSON) and promises it is valid
// (AppendsValidJSON), the SDK's JSON-RPC layer writes the response around
// it in the same buffer without scanning it again (go-sdk patches 2, 3,
// 12, 16 and 17, PATCHES.md).
// Without sendEncoded in the chain (a handler called some other way)
// successResult sets the text and structuredContent itself.

type encodedSlotKey struct{}

// encodedSlot holds a tool result's JSON text between successResult and
// sendEncoded.
type encodedSlot struct{ text []byte }

// textPlaceholder marks the text block whose text is in the slot, and
// structuredPlaceholder the structuredContent that is that text. The
// random part keeps a value that happens to hold the prefix from being
// taken for one.
var (
	textPlaceholder, quotedPlaceholder = placeholder("text")
	_, quotedStructured                = placeholder("structured")
)

func placeholder(kind string) (string, []byte) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	p := "parsemcp-encoded-" + kind + "-" + hex.EncodeToString(b[:])
	return p, []byte(`"` + p + `"`)
}

// sendEncoded is the receiving middleware that sends tool results'
// text encoded once (see above).
func sendEncoded(next Handler) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		if r.Method != "tools/call" {
			return next(ctx, r)
		}
		slot := &encodedSlot{}
		res, err := next(context.WithValue(ctx, encodedSlotKey{}, slot), r)
		if err != nil || slot.text == nil {
			return res, err
		}
		if r, ok := res.(*mcp.CallToolResult); ok && r != nil {
			return &encodedResult{CallToolResult: r, text: slot.text}, nil
		}
		return res, err
	}
}

// textResult is a successful result of JSON text b: its text block's
// text is b when text (StructuredOnlyNote otherwise), and its
// structuredContent is b when structured. The copies of b are
// placeholders when the call has a slot, b itself otherwise.
func textResult(ctx context.Context, b []byte, text, structured bool) *mcp.CallToolResult {
	if !text && !structured { // no copy would carry the result
		text = true
	}
	slot, ok := ctx.Value(encodedSlotKey{}).(*encodedSlot)
	if ok && slot.text == nil {
		slot.text = b
	} else {
		ok = false
	}
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: StructuredOnlyNote}}}
	switch {
	case text && ok:
		r.Content[0].(*mcp.TextContent).Text = textPlaceholder
	case text:
		r.Content[0].(*mcp.TextContent).Text = string(b)
	}
	switch {
	case structured && ok:
		r.StructuredContent = json.RawMessage(quotedStructured)
	case structured:
		r.StructuredContent = json.RawMessage(b)
	}
	return r
}

// encodedResult is a tool result whose text block's text is sent as it
// is in text (JSON text, escaped here into the block's string).
type encodedResult struct {
	*mcp.CallToolResult
	text []byte
}

func (r *encodedResult) MarshalJSON() ([]byte, error) { return r.AppendJSON(nil) }

// AppendsValidJSON is encodedResult's promise to the SDK's JSON-RPC layer
// (go-sdk patch 17) that AppendJSON appends valid JSON text, so that the
// layer sends it without scanning it again: the envelope is the SDK's
// own encoding, the escaped copy is a JSON string whatever the text, and
// the text, sent raw as structuredContent, is what the server's encoders
// wrote (jsonenc, the stores' JSON rows, the response cap's copies),
// valid by construction. Test binaries check the text on every call
// (selfcheck.On).
func (*encodedResult) AppendsValidJSON() {}

// AppendJSON appends to dst what MarshalJSON returns. The SDK's JSON-RPC
// layer (go-sdk patch 12) appends a result that has this method right
// after the response's head, so the response is written in one buffer
// instead of copied into a second one.
func (r *encodedResult) AppendJSON(dst []byte) ([]byte, error) {
	// The envelope is small (placeholders where the text goes), so it is
	// written in a buffer on the stack.
	var scratch [512]byte
	b, err := r.CallToolResult.AppendJSON(scratch[:0])
	if err != nil {
		return nil, err
	}
	// The SDK writes content before structuredContent; either may be
	// absent (a structured-only result has no text placeholder, a text
	// result no structured one, a result replaced on its way out
	// neither).
	i := bytes.Index(b, quotedPlaceholder)
	rest := b
	if i >= 0 {
		rest = b[i+len(quotedPlaceholder):]
	}
	j := bytes.Index(rest, quotedStructured)
	if i < 0 && j < 0 { // nothing to fill in
		return append(dst, b...), nil
	}
	// Room for both copies and what follows the result (the response's
	// closing brace): the escaped one grows by a byte for each quote and
	// backslash (and by five for the rarer <, > and &, which the slack
	// covers), so the buffer is not copied as it fills.
	escapes := bytes.Count(r.text, []byte{'"'}) + bytes.Count(r.text, []byte{'\\'})
	out := slices.Grow(dst, len(b)+2*len(r.text)+escapes+len(r.text)/32+16)
	if i >= 0 {
		out = append(out, b[:i]...)
		out = jsonenc.AppendQuoted(out, r.text)
	}
	if j >= 0 {
		if selfcheck.On() && !json.Valid(r.text) {
			panic(fmt.Sprintf("mcpserver: a tool result's JSON text, sent as structuredContent unchecked, is not valid JSON: %.200q", r.text))
		}
		out = append(out, rest[:j]...)
		out = append(out, r.text...)
		rest = rest[j+len(quotedStructured):]
	}
	return append(out, rest...), nil
}
