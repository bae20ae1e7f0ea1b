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
		got := encodeOnce(t, text, true, false)
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
// text sent twice, escaped in the text block and raw as structuredContent;
// a structured-only one (ResultStructured) carries it once, as
// structuredContent, with the note as its text block. Either is the bytes
// the SDK writes for it, from one encoding.
func TestEncodedStructuredResultSameBytesAsSDK(t *testing.T) {
	for _, inText := range []bool{true, false} {
		for _, text := range []string{
			`{}`, `{"a":"<b> & \"c\" \\ é \u2028 \u0001","n":[1,2.5,null]}`,
			`{"trap":"` + textPlaceholder + `","and":"` + string(quotedStructured[1:len(quotedStructured)-1]) + `"}`,
		} {
			block := StructuredOnlyNote
			if inText {
				block = text
			}
			got := encodeOnce(t, text, inText, true)
			want, err := json.Marshal(&mcp.CallToolResult{Meta: mcp.Meta{"k": "v"}, Content: []mcp.Content{&mcp.TextContent{Text: block}}, StructuredContent: json.RawMessage(text)})
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("text %q (in the text block: %v):\n got %s\nwant %s", text, inText, got, want)
			}
		}
	}
	// Neither copy asked for: the text block carries the result.
	r := textResult(context.Background(), []byte(`{"x":1}`), false, false)
	if got := r.Content[0].(*mcp.TextContent).Text; got != `{"x":1}` || r.StructuredContent != nil {
		t.Fatalf("text %q, structuredContent %v", got, r.StructuredContent)
	}
}

// encodeOnce is the wire form of a result whose JSON text is text, as
// sendEncoded writes it.
func encodeOnce(t *testing.T, text string, inText, structured bool) []byte {
	t.Helper()
	slot := &encodedSlot{}
	ctx := context.WithValue(context.Background(), encodedSlotKey{}, slot)
	r := textResult(ctx, []byte(text), inText, structured)
	r.Meta = mcp.Meta{"k": "v"}
	er := &encodedResult{CallToolResult: r, text: slot.text}
	got, err := json.Marshal(er)
	if err != nil {
		t.Fatal(err)
	}
	appendsAsMarshals(t, er)
	return got
}

// appendsAsMarshals checks that r appended to a response's head is that
// head followed by what r.MarshalJSON returns.
func appendsAsMarshals(t *testing.T, r *encodedResult) {
	t.Helper()
	marshaled, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	head := `{"jsonrpc":"2.0","id":1,"result":`
	got, err := r.AppendJSON([]byte(head))
	if err != nil {
		t.Fatal(err)
	}
	if want := head + string(marshaled); string(got) != want {
		t.Fatalf("appended:\n got %s\nwant %s", got, want)
	}
}

// A result whose placeholders were replaced on its way out (nothing to
// fill in) is appended as the SDK marshals it.
func TestEncodedResultReplaced(t *testing.T) {
	r := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "replaced"}}, IsError: true}
	want, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	er := &encodedResult{CallToolResult: r, text: []byte(`{"x":1}`)}
	if got, err := er.MarshalJSON(); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %s (%v), want %s", got, err, want)
	}
	appendsAsMarshals(t, er)
}

// Without a slot (the handler called outside the server's middleware) the
// text is set directly.
func TestTextResultWithoutSlot(t *testing.T) {
	r := textResult(context.Background(), []byte(`{"x":1}`), true, true)
	if got := r.Content[0].(*mcp.TextContent).Text; got != `{"x":1}` {
		t.Fatalf("text %q", got)
	}
	if got, _ := r.StructuredContent.(json.RawMessage); string(got) != `{"x":1}` {
		t.Fatalf("structuredContent %s", got)
	}
}

// The text sent raw as structuredContent is not checked by the SDK
// (AppendsValidJSON), so test binaries check it: invalid text there is a
// bug of the server's encoders and stops the test. As text only, escaped,
// any text is valid.
func TestEncodedResultInvalidTextCaught(t *testing.T) {
	for _, inText := range []bool{true, false} {
		slot := &encodedSlot{}
		ctx := context.WithValue(context.Background(), encodedSlotKey{}, slot)
		r := textResult(ctx, []byte(`{"a":`), inText, true)
		er := &encodedResult{CallToolResult: r, text: slot.text}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("in the text block too: %v: invalid structured text appended without a panic", inText)
				}
			}()
			_, _ = er.AppendJSON(nil)
		}()
	}
	encodeOnce(t, `{"a":`, true, false)
}
