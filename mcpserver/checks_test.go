package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// Every request check answers with its exact status before any agent is
// built.
func TestHTTPRequestChecks(t *testing.T) {
	var seen []http.Header
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Agents: func(_ context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		seen = append(seen, r.Header.Clone())
		return agent.New(agent.Readonly, master), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler(mcpserver.HTTPOptions{MaxBodyBytes: 4096, AllowedOrigins: []string{"app.example.com", ".trusted.org"}, RequireHeader: "X-MCP-Client"}))
	defer ts.Close()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	deep := strings.Repeat("[", 21) + strings.Repeat("]", 21)
	ok20 := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":` + strings.Repeat(`{"a":`, 17) + `1` + strings.Repeat("}", 17) + `}}`
	for _, tc := range []struct {
		name    string
		method  string
		body    string
		headers map[string]string
		status  int
		code    float64
	}{
		{"PUT", http.MethodPut, init, nil, 405, -32600},
		{"PATCH", http.MethodPatch, init, nil, 405, -32600},
		{"text/plain", http.MethodPost, init, map[string]string{"Content-Type": "text/plain"}, 415, -32700},
		{"no content type", http.MethodPost, init, map[string]string{"Content-Type": ""}, 415, -32700},
		{"too large", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 5000) + `"}}`, nil, 413, -32700},
		{"nested 21", http.MethodPost, deep, nil, 400, -32700},
		{"nested in strings is fine", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"s":"` + strings.Repeat("[", 50) + `"}}}`, nil, 0, 0},
		{"nested 20 is fine", http.MethodPost, ok20, nil, 0, 0},
		{"not JSON", http.MethodPost, `{"jsonrpc":`, nil, 400, -32700},
		{"no jsonrpc", http.MethodPost, `{"id":1,"method":"ping"}`, nil, 400, -32600},
		{"no method", http.MethodPost, `{"jsonrpc":"2.0","id":1}`, nil, 400, -32600},
		{"array of junk", http.MethodPost, `[1,2]`, nil, 400, -32600},
		{"empty batch", http.MethodPost, `[]`, nil, 400, -32600},
		{"foreign origin", http.MethodPost, init, map[string]string{"Origin": "https://evil.example"}, 403, -32600},
		{"lookalike origin", http.MethodPost, init, map[string]string{"Origin": "https://app.example.com.evil.io"}, 403, -32600},
		{"suffix trick", http.MethodPost, init, map[string]string{"Origin": "https://eviltrusted.org"}, 403, -32600},
		{"allowed origin", http.MethodPost, init, map[string]string{"Origin": "https://app.example.com"}, 200, 0},
		{"allowed subdomain", http.MethodPost, init, map[string]string{"Origin": "https://a.b.trusted.org"}, 200, 0},
		{"missing custom header", http.MethodPost, init, map[string]string{"X-MCP-Client": ""}, 403, -32600},
		{"bad protocol version", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, 400, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(seen)
			req, _ := http.NewRequest(tc.method, ts.URL, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("X-MCP-Client", "test")
			for k, v := range tc.headers {
				if v == "" {
					req.Header.Del(k)
				} else {
					req.Header.Set(k, v)
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if tc.status == 0 { // passes the checks: whatever the SDK answers, not a check's refusal
				if resp.StatusCode == 400 || resp.StatusCode == 403 || resp.StatusCode == 413 || resp.StatusCode == 415 {
					t.Fatalf("refused: %d %s", resp.StatusCode, body)
				}
				return
			}
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.status, body)
			}
			if tc.status != 200 && len(seen) != before {
				t.Fatalf("the agent factory ran for a refused request")
			}
			if tc.code != 0 {
				var m struct{ Error struct{ Code float64 } }
				if json.Unmarshal(body, &m) != nil || m.Error.Code != tc.code {
					t.Fatalf("body %s, want JSON-RPC code %v", body, tc.code)
				}
			}
		})
	}

	// Underscore spellings of auth headers never reach the agent factory
	// (which the HTTP handler runs once per request: sessions are bound to
	// the principal that created them).
	seen = nil
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(init))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-MCP-Client", "test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	for _, body := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`} {
		req, _ = http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-MCP-Client", "test")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		req.Header["X_Parse_Session_Token"] = []string{"r:smuggled"}
		req.Header["Authorization_"] = []string{"x"}
		req.Header["X_MCP_API_KEY"] = []string{"smuggled"}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(seen) != 3 {
		t.Fatalf("initialize, initialized and tools/list should build one agent each, built %d", len(seen))
	}
	for _, h := range seen {
		for k := range h {
			switch strings.ToLower(strings.ReplaceAll(k, "_", "-")) {
			case "x-parse-session-token", "x-mcp-api-key":
				t.Fatalf("smuggled header %q reached the agent factory", k)
			}
		}
	}
}
