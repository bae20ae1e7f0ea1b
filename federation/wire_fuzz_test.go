package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The fuzz targets feed the decoders of everything that arrives over the
// broker (requests at an agent; responses, tool lists and presence at the
// platform) with arbitrary bytes: they never panic, an oversized payload
// is always ErrPayloadTooLarge, anything else refused is ErrMalformed, and
// what they accept is what the wire format promises. The seeds are the
// messages the federation sends and the hostile ones drop_test publishes.
// Run one with, e.g., go test ./federation -run '^$' -fuzz FuzzDecodeRequest -fuzztime 30s.

// fuzzMax is the payload limit the targets decode under: small, so the
// fuzzer reaches the oversize path too.
const fuzzMax = 512

func addSeeds(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{"", "{not json", "null", "[]", `"x"`, strings.Repeat("[", 600), `{"id":"x"}{"id":"y"}`, "{\"id\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
}

// checkDecodeErr checks the classification of a decoder's refusal.
func checkDecodeErr(t *testing.T, b []byte, err error) {
	t.Helper()
	switch {
	case len(b) > fuzzMax:
		if !errors.Is(err, ErrPayloadTooLarge) {
			t.Fatalf("%d bytes over a %d-byte limit: %v", len(b), fuzzMax, err)
		}
	case err != nil && !errors.Is(err, ErrMalformed):
		t.Fatalf("refused as neither malformed nor too large: %v", err)
	}
}

func FuzzDecodeRequest(f *testing.F) {
	addSeeds(f,
		`{"id":"0123abcd","method":"tools/list","caller":{"user":"_platform","session":"catalog"},"timeout_ms":10000}`,
		`{"id":"c1","method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}},"caller":{"user":"u1","session":"s1","team":"t1","read_only":true},"timeout_ms":5}`,
		`{"id":"c2","method":"notifications/cancelled","params":{"requestId":"c1"},"caller":{"user":"u1","session":"s1"}}`,
		`{"id":"../..","method":"tools/call"}`,
		`{"id":"c3","method":"tools/destroy"}`,
		`{"id":"c4","method":"tools/call","params":"not an object","timeout_ms":-1}`,
	)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRequest(b, fuzzMax)
		checkDecodeErr(t, b, err)
		if err != nil {
			return
		}
		if !validCorrID(r.ID) {
			t.Fatalf("accepted id %q", r.ID)
		}
		// What an agent does next with the params (ServeAgent).
		switch r.Method {
		case MethodCallTool:
			var cp callParams
			_ = json.Unmarshal(r.Params, &cp)
		case MethodCancel:
			var cp cancelParams
			_ = json.Unmarshal(r.Params, &cp)
		case MethodListTools:
		default:
			t.Fatalf("accepted method %q", r.Method)
		}
		// An accepted request survives a round trip.
		again, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		if r2, err := decodeRequest(again, len(again)); err != nil || r2.ID != r.ID || r2.Method != r.Method {
			t.Fatalf("round trip: %v %+v", err, r2)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	addSeeds(f,
		`{"id":"0123abcd","result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"id":"0123abcd","result":{"content":[{"type":"text","text":"no"}],"isError":true}}`,
		`{"id":"0123abcd","error":{"code":"agent_error","message":"tools/call: bad params"}}`,
		`{"id":"0123abcd","result":{"tools":[{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},{"name":"bad name!"},{"name":"x","inputSchema":{"type":"string"}}]}}`,
		`{"id":"abc","result":{},"error":{"code":"x","message":"y"}}`,
		`{"id":"abc"}`,
		`{"id":"abc","result":{"content":null}}`,
	)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeResponse(b, fuzzMax)
		checkDecodeErr(t, b, err)
		if err != nil {
			return
		}
		if (r.Error == nil) == (len(r.Result) == 0) {
			t.Fatalf("accepted a response with both or neither of result and error: %s", b)
		}
		if r.Error != nil {
			return
		}
		// The two things a result can be: a tool result (Call) and a
		// tool list (fetchTools).
		if _, _, err := checkCallResult(r.Result); err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("tool result refused as not malformed: %v", err)
		}
		tools, _, _, err := decodeToolList(r.Result, 3)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("tool list refused as not malformed: %v", err)
			}
			return
		}
		if len(tools) > 3 {
			t.Fatalf("%d tools past a limit of 3", len(tools))
		}
		for _, tl := range tools {
			if !validRemoteToolName(tl.Name) {
				t.Fatalf("accepted tool name %q", tl.Name)
			}
			name := ExposedName(d1, tl.Name)
			if len(name) > 64 || !strings.Contains(name, "-") {
				t.Fatalf("exposed name %q", name)
			}
			_ = tl.Annotations.ReadOnly()
			_ = tl.Annotations.Destructive()
		}
	})
}

func FuzzDecodePresence(f *testing.F) {
	tp := Topics{Platform: "p1"}
	for _, s := range []struct{ topic, payload string }{
		{tp.Presence(Entity{Type: "device", ID: "d1"}), `{"status":"online","revision":"r1","name":"Device one"}`},
		{tp.Presence(Entity{Type: "mcp", ID: "everything", Team: "t1"}), `{"status":"offline"}`},
		{tp.Presence(Entity{Type: "device", ID: "d9"}), `{"status":"dancing"}`},
		{tp.base() + "/agents/+/#/x", `{"status":"online"}`},
		{tp.base() + "/agents/a/b", ``},
	} {
		f.Add(s.topic, []byte(s.payload))
	}
	f.Fuzz(func(t *testing.T, topic string, b []byte) {
		if e, ok := tp.ParsePresence(topic); ok {
			if err := e.Validate(); err != nil {
				t.Fatalf("presence topic %q gave an invalid entity: %v", topic, err)
			}
			if tp.Presence(e) != topic {
				t.Fatalf("presence topic %q read as %+v, which names %q", topic, e, tp.Presence(e))
			}
		}
		p, err := decodePresence(b, fuzzMax)
		checkDecodeErr(t, b, err)
		if err == nil && p.Status != "online" && p.Status != "offline" {
			t.Fatalf("accepted status %q", p.Status)
		}
	})
}

// FuzzRemoteToolList feeds tool lists to the platform's decoder and
// hands every tool it keeps to the MCP SDK, as the server does: nothing
// an agent lists may panic the SDK (its AddTool panics on a schema it
// cannot take), and a kept tool checks any arguments without panicking.
// CI runs it for a bounded time (.ci/run).
func FuzzRemoteToolList(f *testing.F) {
	for _, s := range []string{
		`{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"annotations":{"readOnlyHint":true}}]}`,
		`{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"x":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"integer","minimum":1}}},"outputSchema":{"type":"object"}}]}`,
		`{"tools":[{"name":"h","inputSchema":{"type":"object","properties":{"x":{"type":"string","x-mcp-header":"X-Thing"}}}}]}`,
		`{"tools":[{"name":"h","inputSchema":{"type":"object","properties":{"x":{"type":"object","x-mcp-header":""}}}}]}`,
		`{"tools":[{"name":"d","inputSchema":{"type":"object","properties":{"x":` + strings.Repeat(`{"items":`, 40) + `{}` + strings.Repeat(`}`, 40) + `}}}]}`,
		`{"tools":[{"name":"o","inputSchema":{"type":"object"},"outputSchema":[]}]}`,
		`{"tools":[{"name":"n","inputSchema":null,"outputSchema":null}]}`,
		`{"tools":[{"name":"p","inputSchema":{"type":"object","patternProperties":{"(":{}}}}]}`,
	} {
		f.Add([]byte(s), []byte(`{"x":1}`))
	}
	f.Fuzz(func(t *testing.T, list, args []byte) {
		tools, _, _, err := decodeToolList(list, 5)
		if err != nil {
			return
		}
		srv := mcp.NewServer(&mcp.Implementation{Name: "fuzz", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
		for _, tl := range tools {
			mt := &mcp.Tool{Name: ExposedName(d1, tl.Name), Title: tl.Title, Description: tl.Description, InputSchema: tl.InputSchema}
			if len(tl.OutputSchema) > 0 {
				mt.OutputSchema = tl.OutputSchema
			}
			func() {
				defer func() {
					if p := recover(); p != nil && !strings.Contains(fmt.Sprint(p), "x-mcp-header") {
						t.Fatalf("the SDK refused a tool the federation kept: %v\n%s", p, list)
					}
				}()
				srv.AddTool(mt, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
			}()
			_ = tl.CheckArguments(args)
		}
	})
}
