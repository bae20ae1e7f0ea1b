package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bytes of an encoded result are the bytes the SDK writes for the same
// result with the text in its text block, whatever the text holds.
func TestEncodedResultSameBytesAsSDK(t *testing.T) {
	for _, text := range []string{
		``, `{}`, `{"a":"<b> & \"c\" \\ é \u2028 \u0001","n":[1,2.5,null]}`, "not json \xff \x00",
		`{"trap":"` + textPlaceholder + `"}`,
	} {
		got := encodeOnce(t, text, false)
		want, err := json.Marshal(&mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{&mcp.TextContent{Text: text}}})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("text %q:\n got %s\nwant %s", text, got, want)
		}
	}
}

// A structured result (a tool with an output schema) is the same JSON
// text sent twice, escaped in the text block and raw as structuredContent:
// the bytes the SDK writes for it, from one encoding.
func TestEncodedStructuredResultSameBytesAsSDK(t *testing.T) {
	for _, text := range []string{
		`{}`, `{"a":"<b> & \"c\" \\ é \u2028 \u0001","n":[1,2.5,null]}`,
		`{"trap":"` + textPlaceholder + `","and":"` + string(quotedStructured[1:len(quotedStructured)-1]) + `"}`,
	} {
		got := encodeOnce(t, text, true)
		want, err := json.Marshal(&mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: json.RawMessage(text)})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("text %q:\n got %s\nwant %s", text, got, want)
		}
	}
}

// encodeOnce is the wire form of a result whose JSON text is text, as
// sendEncoded writes it.
func encodeOnce(t *testing.T, text string, structured bool) []byte {
	t.Helper()
	slot := &encodedSlot{}
	ctx := context.WithValue(context.Background(), encodedSlotKey{}, slot)
	r := textResult(ctx, []byte(text), structured)
	r.Meta = mcp.Meta{"k": "v"}
	got, err := json.Marshal(&encodedResult{CallToolResult: r, text: slot.text})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Without a slot (the handler called outside the server's middleware) the
// text is set directly.
func TestTextResultWithoutSlot(t *testing.T) {
	r := textResult(context.Background(), []byte(`{"x":1}`), true)
	if got := r.Content[0].(*mcp.TextContent).Text; got != `{"x":1}` {
		t.Fatalf("text %q", got)
	}
	if got, _ := r.StructuredContent.(json.RawMessage); string(got) != `{"x":1}` {
		t.Fatalf("structuredContent %s", got)
	}
}
