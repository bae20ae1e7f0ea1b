package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

func httpServer(t *testing.T, srv *mcpserver.Server) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(srv.Mux(mcpserver.HTTPOptions{}))
	t.Cleanup(ts.Close)
	return ts
}

func TestHTTPTransport(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	ts := httpServer(t, srv)
	for _, v := range protocolVersions {
		t.Run(v, func(t *testing.T) {
			ctx := context.Background()
			client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: v})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %s, want %s", got, v)
			}
			stateless := v >= "2026-07-28"
			if (cs.ID() == "") != stateless {
				t.Fatalf("session id %q for %s (stateless=%v)", cs.ID(), v, stateless)
			}
			out := ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open"}})
			if got := ids(out["results"]); !slices.Equal(got, []string{"t000000001", "t000000003", "t000000005"}) {
				t.Fatalf("query over HTTP: %v", got)
			}
			fails(t, cs, "count_objects", map[string]any{"class_name": "Nope"}, "access_denied")
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://Ticket/count"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "parse_conventions"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestHTTPHealthAndToolCatalog(t *testing.T) {
	ts := httpServer(t, newServer(t, fixtureStore(t), agent.Readonly, master))
	get := func(path string) (int, map[string]any) {
		t.Helper()
		code, m, _ := getJSON(t, ts.URL+path)
		return code, m
	}
	code, h := get("/health")
	if code != 200 || h["status"] != "ok" {
		t.Fatalf("health: %d %v", code, h)
	}
	code, cat := get("/tools")
	if code != 200 || len(cat["tools"].([]any)) != len(builtinTools) {
		t.Fatalf("/tools: %d %v", code, cat)
	}
	_, cat = get("/tools?category=schema")
	if len(cat["tools"].([]any)) != 2 {
		t.Fatalf("/tools?category=schema: %v", cat)
	}
}

func TestHTTPUnauthorized(t *testing.T) {
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Agents: func(_ context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
		if r.Header.Get("Authorization") != "Bearer good" {
			return nil, agent.ErrUnauthorized
		}
		return agent.New(agent.Readonly, master), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httpServer(t, srv)
	resp, err := http.Get(ts.URL + "/tools")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/tools without a token: %d", resp.StatusCode)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err == nil {
		cs.Close()
		t.Fatal("initialize without a token must be refused")
	}
	if !bytes.Contains([]byte(err.Error()), []byte("Unauthorized")) {
		t.Fatalf("initialize without a token: %v", err)
	}
}

// The non-standard top-level `category` param of tools/list, as a plain
// JSON-RPC client sends it.
func TestHTTPRawCategoryParam(t *testing.T) {
	ts := httpServer(t, newServer(t, fixtureStore(t), agent.Readonly, master))
	post := func(session string, body string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", bytes.NewBufferString(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, b
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("no session id: %d", resp.StatusCode)
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	_, body := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"category":"query"}}`)
	// The response may come as SSE: take the data line.
	if i := bytes.Index(body, []byte("data: ")); i >= 0 {
		body = body[i+6:]
		if j := bytes.IndexByte(body, '\n'); j >= 0 {
			body = body[:j]
		}
	}
	var msg struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	var names []string
	for _, tool := range msg.Result.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	if !slices.Equal(names, []string{"count_objects", "explain_query", "get_object", "get_objects", "get_sample_objects", "query_class"}) {
		t.Fatalf("tools/list {category: query}: %v", names)
	}
}
