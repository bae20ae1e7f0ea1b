package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/federation/broker"
	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// TestFederationHealthDegraded: while the platform cannot reach its
// broker, /health stays 200 (the server's own tools work) and says the
// federation is degraded and why; once connected it is "ok" again.
func TestFederationHealthDegraded(t *testing.T) {
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	p, err := federation.Connect(context.Background(), federation.Options{ConnOptions: federation.ConnOptions{Broker: fmt.Sprintf("mqtt://127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Federation: p, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		return agent.New(agent.Readonly, master), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httpServer(t, srv)
	code, h, _ := getJSON(t, ts.URL+"/health")
	if fed, _ := h["federation"].(string); code != 200 || h["status"] != "degraded" || !strings.Contains(fed, "unavailable") {
		t.Fatalf("/health without the broker: %d %v", code, h)
	}
	b, err := broker.Start(broker.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := p.Ready(fedBound(t)); err != nil {
		t.Fatal(err)
	}
	if code, h, _ := getJSON(t, ts.URL+"/health"); code != 200 || h["status"] != "ok" || h["federation"] != nil {
		t.Fatalf("/health once connected: %d %v", code, h)
	}
}
