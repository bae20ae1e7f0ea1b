package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// clientFrom is an HTTP client whose connections leave from ip (any
// 127.0.0.0/8 address works on Linux's loopback): distinct clients of
// one load balancer on one machine.
func clientFrom(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
}

// Behind HAProxy (option forwardfor) with --trusted-proxies, the pre-auth
// limit counts each client on its own: one noisy client gets 429 while
// another keeps getting answers through the same balancer, and the audit
// event of the other's call names its own address.
func TestPreAuthLimitPerClientBehindProxy(t *testing.T) {
	c := startCluster(t, "--trusted-proxies", "127.0.0.1/32", "--preauth-limit", "10/m", "--rate-limit", "0", "--audit", "stderr")
	tools := strings.TrimSuffix(c.lb, "/mcp") + "/tools"
	get := func(hc *http.Client) int {
		resp, err := hc.Get(tools)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	noisy := clientFrom("127.0.0.2")
	limited := false
	for i := 0; i < 100 && !limited; i++ { // 10/m on each instance: 21 requests at most
		switch code := get(noisy); code {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			limited = true
		default:
			t.Fatalf("noisy request %d: %d", i, code)
		}
	}
	if !limited {
		t.Fatal("the noisy client was never limited")
	}

	polite := clientFrom("127.0.0.3")
	for i := range 4 {
		if code := get(polite); code != http.StatusOK {
			t.Fatalf("polite request %d through the same balancer: %d, want 200 (one bucket for every client?)", i, code)
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "polite", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: c.lb, HTTPClient: polite, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if err := count(cs); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	for _, s := range []*server{c.a, c.b} { // their logs are complete once they stopped
		s.cmd.Process.Signal(os.Interrupt)
		s.cmd.Wait()
	}
	for _, s := range []*server{c.a, c.b} {
		for _, line := range strings.Split(s.stderr.String(), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) != nil || ev["msg"] != "tool_call" {
				continue
			}
			if ev["client_addr"] != "127.0.0.3" {
				t.Errorf("audit event %v: client_addr %v, want 127.0.0.3", line, ev["client_addr"])
			}
			return
		}
	}
	t.Errorf("no audit event\nA:\n%s\nB:\n%s", c.a.stderr, c.b.stderr)
}
