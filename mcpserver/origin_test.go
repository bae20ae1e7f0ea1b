package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// Without an allowlist, a browser Origin passes only for the server's own
// host and for loopback origins; with one, listed origins also get CORS
// headers and their preflights are answered.
func TestOriginRule(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	open := httptest.NewServer(srv.Handler(mcpserver.HTTPOptions{}))
	defer open.Close()
	listed := httptest.NewServer(srv.Handler(mcpserver.HTTPOptions{AllowedOrigins: []string{"app.example.com"}, RequireHeader: "X-MCP-Client"}))
	defer listed.Close()
	send := func(url, method, origin string, extra ...string) *http.Response {
		req, _ := http.NewRequest(method, url, strings.NewReader(initBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("X-MCP-Client", "t")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		for i := 0; i+1 < len(extra); i += 2 {
			req.Header.Set(extra[i], extra[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	self := strings.Replace(open.URL, "127.0.0.1", "localhost", 1) // a loopback origin on another port is not "self", but loopback
	for _, c := range []struct {
		name, origin string
		status       int
	}{
		{"no origin (native client)", "", 200},
		{"own host", open.URL, 200},
		{"loopback origin", "http://localhost:6274", 200},
		{"loopback IP origin", "http://127.0.0.1:3000", 200},
		{"loopback spelled as host", self, 200},
		{"foreign origin", "https://evil.example", 403},
		{"foreign origin naming our port", "http://evil.example:" + strings.Split(open.URL, ":")[2], 403},
		{"null origin", "null", 403},
		{"non-web scheme", "file://localhost", 403},
	} {
		if resp := send(open.URL, http.MethodPost, c.origin); resp.StatusCode != c.status {
			t.Errorf("no allowlist, %s: %d, want %d", c.name, resp.StatusCode, c.status)
		}
	}
	// With an allowlist: listed origins get CORS, others (loopback too) are refused.
	resp := send(listed.URL, http.MethodPost, "https://app.example.com")
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Mcp-Session-Id") || resp.Header.Get("Vary") != "Origin" {
		t.Fatalf("listed origin: %d %v", resp.StatusCode, resp.Header)
	}
	if resp := send(listed.URL, http.MethodPost, "http://localhost:6274"); resp.StatusCode != 403 {
		t.Fatalf("loopback origin with an allowlist: %d", resp.StatusCode)
	}
	if resp := send(listed.URL, http.MethodPost, listed.URL); resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("own host with an allowlist: %d %v", resp.StatusCode, resp.Header)
	}
	pre := send(listed.URL, http.MethodOptions, "https://app.example.com", "Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "content-type, mcp-session-id, x-mcp-client")
	if pre.StatusCode != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Mcp-Session-Id") || !strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "X-MCP-Client") {
		t.Fatalf("preflight: %d %v", pre.StatusCode, pre.Header)
	}
	if pre := send(listed.URL, http.MethodOptions, "https://evil.example", "Access-Control-Request-Method", "POST"); pre.StatusCode != 403 || pre.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from a foreign origin: %d %v", pre.StatusCode, pre.Header)
	}
	if resp := send(open.URL, http.MethodOptions, ""); resp.StatusCode != 405 {
		t.Fatalf("OPTIONS without a preflight: %d", resp.StatusCode)
	}
}

// /health tells a load balancer whether the store answers, and nothing
// about the build.
func TestHealthMinimal(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	ts := httptest.NewServer(srv.Mux(mcpserver.HTTPOptions{}))
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `{"status":"ok"}` {
		t.Fatalf("/health: %d %s", resp.StatusCode, body)
	}
}

// Answers that depend on the agent are marked private; only what is the
// same for every agent stays public.
func TestCacheScope(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob})
	url := mount(t, mcpserver.HandlerOptions{Server: srv})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "cache", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: "bob-token"}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	scope := func(r any) string {
		b, _ := json.Marshal(r)
		var m struct {
			CacheScope string `json:"cacheScope"`
		}
		_ = json.Unmarshal(b, &m)
		return m.CacheScope
	}
	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://Ticket/count"})
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		got, want string
	}{
		"tools/list": {scope(tl), "private"}, "resources/list": {scope(rl), "private"}, "resources/read": {scope(rr), "private"},
		"resources/templates/list": {scope(tpl), "public"}, "prompts/list": {scope(pl), "public"},
	} {
		if c.got != c.want {
			t.Errorf("%s: cacheScope %q, want %q", name, c.got, c.want)
		}
	}
}
