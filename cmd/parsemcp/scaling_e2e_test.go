package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/internal/testing/haproxy"
	"github.com/parsemcp/parsemcp/internal/testing/redistest"
)

// cluster is two serve instances sharing a store and a Redis, behind a
// real HAProxy that routes a session's requests to the instance that
// created it (sticky by Mcp-Session-Id) and the rest round-robin.
type cluster struct {
	a, b *server
	lb   string // the load balancer's MCP URL
}

func startCluster(t *testing.T, args ...string) *cluster {
	t.Helper()
	return startClusterOn(t, "", args...)
}

// startClusterOn is startCluster on the store URL st ("": a SQLite copy
// of the fixture).
func startClusterOn(t *testing.T, st string, args ...string) *cluster {
	t.Helper()
	bin, err := haproxy.Find()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("haproxy is required in CI (.ci/run installs it)")
		}
		t.Skip("SKIP: " + err.Error())
	}
	redistest.Client(t, "") // skips without Redis, except in CI
	if st == "" {
		st = "sqlite:" + fixtureDB(t)
	}
	common := append([]string{"--store", st, "--redis", "redis://" + redistest.Addr() + "/0", "--redis-prefix", redistest.Name("scale-")}, args...)
	env := []string{"PARSEMCP_ALLOW_WRITE_TOOLS=true", "PARSEMCP_ALLOW_RAW_CRUD=true"}
	c := &cluster{a: startServe(t, env, common...), b: startServe(t, env, common...)}
	port, err := freeport.Get()
	if err != nil {
		t.Fatal(err)
	}
	hostOf := func(s *server) string { return strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/mcp") }
	cmd, err := haproxy.Start(bin, t.TempDir(), port, hostOf(c.a), hostOf(c.b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	c.lb = "http://" + addr + "/mcp"
	return c
}

var metricRE = regexp.MustCompile(`(?m)^parsemcp_tool_calls_total\{[^}]*\} (\d+)`)

// toolCalls is how many tool calls an instance has answered.
func toolCalls(t *testing.T, s *server) int {
	resp, err := http.Get(strings.TrimSuffix(s.url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	n := 0
	for _, m := range metricRE.FindAllStringSubmatch(string(body), -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

func connect(t *testing.T, url, version string) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "scale", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
}

func count(cs *mcp.ClientSession) error {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("tool error: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	return nil
}

func TestTwoInstancesBehindALoadBalancer(t *testing.T) {
	c := startCluster(t, "--permission", "write", "--live-debounce", "100ms")

	t.Run("stateful sessions stick to their instance", func(t *testing.T) {
		before := toolCalls(t, c.a) + toolCalls(t, c.b)
		var sessions []*mcp.ClientSession
		for range 6 {
			cs, err := connect(t, c.lb, "2025-11-25")
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			sessions = append(sessions, cs)
		}
		for round := range 3 {
			for i, cs := range sessions {
				if err := count(cs); err != nil {
					t.Fatalf("round %d, session %d: %v", round, i, err)
				}
			}
		}
		if got := toolCalls(t, c.a) + toolCalls(t, c.b) - before; got != 18 {
			t.Errorf("%d calls answered, want 18", got)
		}
	})

	t.Run("2026-07-28 requests go to any instance", func(t *testing.T) {
		a0, b0 := toolCalls(t, c.a), toolCalls(t, c.b)
		cs, err := connect(t, c.lb, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		for i := range 8 {
			if err := count(cs); err != nil {
				t.Fatalf("call %d: %v", i, err)
			}
		}
		if da, db := toolCalls(t, c.a)-a0, toolCalls(t, c.b)-b0; da == 0 || db == 0 || da+db != 8 {
			t.Errorf("calls per instance: %d and %d, want both used, 8 in all", da, db)
		}
	})

	t.Run("a subscriber is told of writes through either instance", func(t *testing.T) {
		const uri = "parse://Ticket/count"
		_, updates := subscribeWatcher(t, c.lb, uri)
		// A stateless writer: its writes alternate between the instances.
		writer, err := connect(t, c.lb, "2026-07-28")
		if err != nil {
			t.Fatal(err)
		}
		defer writer.Close()
		a0, b0 := toolCalls(t, c.a), toolCalls(t, c.b)
		notified := 0
		for i := 0; i < 20 && notified < 2; i++ { // the listening stream opens asynchronously: retry
			if out, isErr := callTool(t, writer, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "scale"}}); isErr {
				t.Fatalf("create_object: %v", out)
			}
			select {
			case got := <-updates:
				if got != uri {
					t.Fatalf("notification for %s", got)
				}
				notified++
			case <-time.After(time.Second): // bounds the wait for this write only
			}
		}
		if notified < 2 {
			t.Fatalf("the subscriber was told of %d writes", notified)
		}
		if toolCalls(t, c.a) == a0 || toolCalls(t, c.b) == b0 {
			t.Errorf("the writes did not go through both instances")
		}
	})

	t.Run("an instance stops mid-load and its clients reconnect to the other", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		var stopOnce sync.Once
		var reconnects atomic.Int32
		for i := range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A client whose session (or handshake) was on the stopped
				// instance sees an error, and connects again: the load
				// balancer sends it to the other.
				var cs *mcp.ClientSession
				failures, ok := 0, 0
				for ok < 10 {
					var err error
					if cs == nil {
						cs, err = connect(t, c.lb, "2025-11-25")
					}
					if err == nil {
						err = count(cs)
					}
					if err != nil {
						if cs != nil {
							cs.Close()
							cs = nil
						}
						reconnects.Add(1)
						if failures++; failures > 3 {
							errs <- fmt.Errorf("client %d: still failing after %d reconnects: %v", i, failures-1, err)
							return
						}
						continue
					}
					ok++
					if ok == 3 {
						stopOnce.Do(func() { c.a.cmd.Process.Signal(os.Interrupt); c.a.cmd.Wait() })
					}
				}
				cs.Close()
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if reconnects.Load() == 0 {
			t.Error("no client had to reconnect: were all sessions on the instance that kept running?")
		}
	})
}

// The rate limit is one budget across the instances (kept in Redis).
func TestRateLimitSharedAcrossInstances(t *testing.T) {
	c := startCluster(t, "--rate-limit", "5/m")
	cs, err := connect(t, c.lb, "2026-07-28")
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	ok, limited := 0, 0
	for range 8 {
		if err := count(cs); err == nil {
			ok++
		} else if strings.Contains(err.Error(), "rate_limited") {
			limited++
		} else {
			t.Fatal(err)
		}
	}
	if ok != 5 || limited != 3 {
		t.Errorf("%d calls passed and %d were rate limited, want 5 and 3 (one budget for both instances)", ok, limited)
	}
}
