package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store"
)

// resultServer is a read-only master server over st with the given result
// content and response budget (0: the default).
func resultServer(t *testing.T, st store.Store, rc mcpserver.ResultContent, budget int) *mcpserver.Server {
	t.Helper()
	return analystServer(t, mcpserver.Options{Store: st, ResultContent: rc, MaxResponseBytes: budget})
}

// textOf is the text of a result's single text block.
func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("want 1 content block, got %d", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content block %T", res.Content[0])
	}
	return tc.Text
}

// Options.ResultContent at every protocol era, through the Go SDK client:
// what tools/list declares and what a tools/call returns. Sessions older
// than 2025-06-18 get the JSON as text and no output schema whatever the
// mode. From 2025-06-18 on: both (and the zero value) declare output
// schemas and send the JSON as text and as structuredContent; text
// declares none and sends text alone; structured declares them and sends
// structuredContent with a one-line note as its text block.
func TestResultContentModes(t *testing.T) {
	st := fixtureStore(t)
	args := map[string]any{"class_name": "Ticket", "limit": 2, "order": "objectId"}
	for _, rc := range []mcpserver.ResultContent{"", mcpserver.ResultBoth, mcpserver.ResultText, mcpserver.ResultStructured} {
		srv := resultServer(t, st, rc, 0)
		for _, v := range protocolVersions {
			t.Run(fmt.Sprintf("%q/%s", rc, v), func(t *testing.T) {
				cs := connect(t, srv, v)
				modern := v >= "2025-06-18"
				wantSchema := modern && rc != mcpserver.ResultText
				lr, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, tl := range lr.Tools {
					if got := tl.OutputSchema != nil; got != wantSchema {
						t.Errorf("%s: outputSchema declared %v, want %v", tl.Name, got, wantSchema)
					}
				}
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query_class", Arguments: args})
				if err != nil || res.IsError {
					t.Fatalf("%v %+v", err, res)
				}
				text := textOf(t, res)
				switch {
				case !modern || rc == mcpserver.ResultText:
					if res.StructuredContent != nil {
						t.Fatalf("structuredContent sent: %v", res.StructuredContent)
					}
					var page map[string]any
					if err := json.Unmarshal([]byte(text), &page); err != nil || len(page["results"].([]any)) != 2 {
						t.Fatalf("text block %d bytes: %.200s", len(text), text)
					}
				case rc == mcpserver.ResultStructured:
					if text != mcpserver.StructuredOnlyNote {
						t.Fatalf("text block of %d bytes, want the note: %.200s", len(text), text)
					}
					sc, _ := res.StructuredContent.(map[string]any)
					if rows, _ := sc["results"].([]any); len(rows) != 2 {
						t.Fatalf("structuredContent: %v", res.StructuredContent)
					}
				default: // both
					if res.StructuredContent == nil {
						t.Fatal("no structuredContent")
					}
					if d := cmp.Diff(decodeText(t, res), res.StructuredContent); d != "" {
						t.Fatalf("structuredContent differs from the text (-text +structured):\n%s", d)
					}
				}
				// An error result is text alone in every mode.
				bad, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query_class", Arguments: map[string]any{"class_name": "Ticket", "limit": 0}})
				if err != nil || !bad.IsError || bad.StructuredContent != nil || !strings.Contains(textOf(t, bad), "invalid_argument") {
					t.Fatalf("error result: %v %+v", err, bad)
				}
			})
		}
	}
}

// A value other than both, text or structured is refused at New.
func TestResultContentRefused(t *testing.T) {
	for _, bad := range []mcpserver.ResultContent{"json", "Both", " text", "none"} {
		_, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), ResultContent: bad,
			Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
				return agent.New(agent.Readonly, master), nil
			}})
		if err == nil || !strings.Contains(err.Error(), "want both, text or structured") {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, s := range []string{"", "both", "text", "structured"} {
		if _, err := mcpserver.ParseResultContent(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}

// In both mode the response budget holds both copies of a result, the
// bytes the client receives: a page is cut where its text and its
// structuredContent together pass the budget, which is exactly the page
// a text-only session gets from half the budget. A session that gets one
// copy (older protocols, text mode, structured mode) keeps the whole
// budget for it, and a refusal counts both copies.
func TestResultBudgetCountsEveryCopy(t *testing.T) {
	st := docStore(t)
	const budget = 3000
	args := map[string]any{"class_name": "Doc", "limit": 30, "order": "objectId", "keys": []string{"title"}}
	page := func(cs *mcp.ClientSession) (text string, sc []byte, rows int) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query_class", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%v %+v", err, res)
		}
		var p map[string]any
		body := textOf(t, res)
		if res.StructuredContent != nil {
			sc, _ = json.Marshal(res.StructuredContent)
		}
		if body == mcpserver.StructuredOnlyNote {
			body = string(sc)
		}
		if err := json.Unmarshal([]byte(body), &p); err != nil {
			t.Fatal(err)
		}
		if p["truncated"] != true || p["rows_left_out"] == nil {
			t.Fatalf("page not cut: %.300s", body)
		}
		return textOf(t, res), sc, len(p["results"].([]any))
	}
	both := resultServer(t, st, mcpserver.ResultBoth, budget)
	halfText := resultServer(t, st, mcpserver.ResultText, budget/2)
	text, sc, n := page(connect(t, both, ""))
	if got := len(text) + len(sc); got > budget {
		t.Fatalf("both copies: %d + %d = %d bytes, over the %d-byte budget", len(text), len(sc), got, budget)
	}
	if half, _, _ := page(connect(t, halfText, "")); half != text {
		t.Fatalf("both mode at %d is not the text page at %d:\n%s\n%s", budget, budget/2, text, half)
	}
	for _, c := range []struct {
		name    string
		srv     *mcpserver.Server
		version string
	}{
		{"both, 2025-03-26", both, "2025-03-26"},
		{"text", resultServer(t, st, mcpserver.ResultText, budget), ""},
		{"structured", resultServer(t, st, mcpserver.ResultStructured, budget), ""},
	} {
		one, sc1, n1 := page(connect(t, c.srv, c.version))
		if c.name == "structured" {
			one = string(sc1)
		}
		if len(one) > budget || n1 <= n {
			t.Errorf("%s: %d rows in %d bytes, want more than both mode's %d within %d", c.name, n1, len(one), n, budget)
		}
	}

	// A result that cannot be cut: refused for its two copies.
	cs := connect(t, resultServer(t, st, mcpserver.ResultBoth, 30_000), "")
	e := fails(t, cs, "get_object", map[string]any{"class_name": "Doc", "object_id": "doc0000001"}, "too_large")
	d := e["details"].(map[string]any)
	if d["copies"] != 2.0 || d["result_bytes"].(float64) <= 30_000 || !strings.Contains(e["error"].(string), "sent 2 times") {
		t.Fatalf("refusal: %v", e)
	}
	legacy := connect(t, resultServer(t, st, mcpserver.ResultBoth, 30_000), "2025-03-26")
	ok(t, legacy, "get_object", map[string]any{"class_name": "Doc", "object_id": "doc0000001"})
}
