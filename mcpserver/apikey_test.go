package mcpserver_test

import (
	"context"
	"errors"
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
