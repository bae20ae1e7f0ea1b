package mcpserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

type keyTransport struct{ header, value string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(k.header, k.value)
	return http.DefaultTransport.RoundTrip(r)
}

func TestAPIKey(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	ts := httptest.NewServer(mcpserver.RequireAPIKey("s3cret-key", srv.Mux(mcpserver.HTTPOptions{})))
	defer ts.Close()
	connectWith := func(header, value string) error {
		tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp", HTTPClient: &http.Client{Transport: keyTransport{header, value}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "k", Version: "1"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			return err
		}
		defer cs.Close()
		_, err = cs.ListTools(context.Background(), nil)
		return err
	}
	if err := connectWith("X-MCP-API-Key", "s3cret-key"); err != nil {
		t.Fatalf("right key in X-MCP-API-Key: %v", err)
	}
	if err := connectWith("Authorization", "Bearer s3cret-key"); err != nil {
		t.Fatalf("right key as a bearer token: %v", err)
	}
	for _, bad := range [][2]string{{"X-MCP-API-Key", "s3cret-kez"}, {"X-MCP-API-Key", "s3cret-key-longer"}, {"X-MCP-API-Key", "s3cret"}, {"Authorization", "Basic s3cret-key"}, {"X-Other", "s3cret-key"}, {"X-MCP-API-Key", ""}} {
		if err := connectWith(bad[0], bad[1]); err == nil {
			t.Errorf("%s: %q was admitted", bad[0], bad[1])
		}
	}
	resp, err := http.Post(ts.URL+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	var body strings.Builder
	buf := make([]byte, 512)
	n, _ := resp.Body.Read(buf)
	body.Write(buf[:n])
	resp.Body.Close()
	if resp.StatusCode != 401 || !strings.Contains(body.String(), `"code":-32001`) {
		t.Fatalf("no key: %d %s", resp.StatusCode, body.String())
	}
	if resp, err := http.Get(ts.URL + "/health"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/health stays open: %v %v", resp, err)
	}
}

func TestCheckBind(t *testing.T) {
	for addr, wantErr := range map[string]bool{
		"127.0.0.1:8787": false, "localhost:0": false, "[::1]:8787": false, "127.5.5.5:1": false,
		"0.0.0.0:8787": true, ":8787": true, "[::]:8787": true, "192.168.1.10:8787": true, "example.com:80": true,
	} {
		err := mcpserver.CheckBind(addr, "")
		if got := errors.Is(err, mcpserver.ErrPublicWithoutKey); got != wantErr {
			t.Errorf("%s without a key: %v", addr, err)
		}
		if err := mcpserver.CheckBind(addr, "k"); err != nil {
			t.Errorf("%s with a key: %v", addr, err)
		}
	}
}

// The edges of the API key: every path but exactly /health needs it
// (/tools and /metrics too, and paths that only start with /health); it
// counts only in X-MCP-API-Key or as a bearer token (not another header,
// an underscore spelling of the header, a query parameter, or another
// scheme); X-MCP-API-Key, when present, is the one judged; and a refusal
// never echoes what was sent.
func TestAPIKeyEdges(t *testing.T) {
	const key = "s3cret-key"
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	ts := httptest.NewServer(mcpserver.RequireAPIKey(key, srv.Mux(mcpserver.HTTPOptions{})))
	defer ts.Close()
	do := func(method, path string, hdr ...string) (int, http.Header, string) {
		t.Helper()
		var body io.Reader
		if method == http.MethodPost {
			body = strings.NewReader(initBody)
		}
		req, err := http.NewRequest(method, ts.URL+path, body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header[hdr[i]] = []string{hdr[i+1]} // as spelled
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	refused := func(what string, status int, h http.Header, body string) {
		t.Helper()
		if status != http.StatusUnauthorized || !strings.Contains(body, `"code":-32001`) || h.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %s, want 401 with a challenge", what, status, body)
		}
		if strings.Contains(body, "s3cret") || strings.Contains(body, "wrong-value") {
			t.Errorf("%s: the refusal echoes the key: %s", what, body)
		}
	}
	// Only /health is open.
	if s, _, b := do(http.MethodGet, "/health"); s != http.StatusOK {
		t.Fatalf("/health without a key: %d %s", s, b)
	}
	for _, p := range []string{"/tools", "/metrics", "/healthz", "/health/", "/health/../tools", "/mcp?path=/health"} {
		s, h, b := do(http.MethodGet, p)
		refused("GET "+p+" without a key", s, h, b)
	}
	s, h, b := do(http.MethodPost, "/mcp")
	refused("POST /mcp without a key", s, h, b)
	// With the key, /tools and /mcp answer.
	if s, _, b := do(http.MethodGet, "/tools", "X-Mcp-Api-Key", key); s != http.StatusOK || !strings.Contains(b, `"query_class"`) {
		t.Fatalf("/tools with the key: %d %s", s, b)
	}
	if s, _, b := do(http.MethodPost, "/mcp", "Authorization", "Bearer "+key); s != http.StatusOK {
		t.Fatalf("/mcp with the key as a bearer token: %d %s", s, b)
	}
	// The key anywhere else counts for nothing.
	for _, hv := range [][2]string{
		{"X_MCP_API_Key", key}, {"X_Mcp_Api_Key", key}, {"X-Api-Key", key}, {"Api-Key", key}, {"X-Parse-Rest-Api-Key", key},
		{"X-Mcp-Api-Key", "Bearer " + key}, {"Authorization", key}, {"Authorization", "Token " + key}, {"Authorization", "Basic " + key},
		{"Authorization", "Bearer"}, {"Authorization", "Bearer "}, {"Authorization_", "Bearer " + key}, {"Cookie", "X-MCP-API-Key=" + key},
	} {
		s, h, b := do(http.MethodPost, "/mcp", hv[0], hv[1])
		refused(hv[0]+": "+hv[1], s, h, b)
		s, h, b = do(http.MethodGet, "/tools", hv[0], hv[1])
		refused("/tools with "+hv[0]+": "+hv[1], s, h, b)
	}
	s, h, b = do(http.MethodPost, "/mcp?X-MCP-API-Key="+key+"&api_key="+key)
	refused("the key in the query", s, h, b)
	// X-MCP-API-Key, present, is judged: a wrong one is not rescued by a
	// right bearer token.
	s, h, b = do(http.MethodPost, "/mcp", "X-Mcp-Api-Key", "wrong-value", "Authorization", "Bearer "+key)
	refused("a wrong X-MCP-API-Key beside a right bearer token", s, h, b)
}
