package rawmcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/rawmcp"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// The raw client speaks each protocol era to parsemcp: a session at
// 2025-03-26 and 2025-06-18, no session at the stateless 2026-07-28; a
// call succeeds, and a ping in a session, and a bad call is not a
// result.
func TestConnectAt(t *testing.T) {
	st := fixture.Store(t, filepath.Join(t.TempDir(), "f.sqlite"))
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler(mcpserver.HTTPOptions{}))
	t.Cleanup(ts.Close)
	for _, proto := range []string{"2025-03-26", rawmcp.Protocol, rawmcp.Stateless} {
		t.Run(proto, func(t *testing.T) {
			c, err := rawmcp.ConnectAt(t.Context(), http.DefaultClient, ts.URL, nil, proto)
			if err != nil {
				t.Fatal(err)
			}
			if c.Protocol() != proto {
				t.Fatalf("protocol %q, want %q", c.Protocol(), proto)
			}
			if err := c.Call(t.Context(), "count_objects", `{"class_name":"Ticket"}`); err != nil {
				t.Fatal(err)
			}
			if err := c.Ping(t.Context()); (err != nil) != (proto == rawmcp.Stateless) {
				t.Fatalf("ping: %v", err)
			}
			if err := c.Call(t.Context(), "count_objects", `{"class_name":""}`); err == nil {
				t.Fatal("a bad call passed as a result")
			}
		})
	}
}
