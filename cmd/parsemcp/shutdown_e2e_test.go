package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/store/postgres"
)

var sessionsRE = regexp.MustCompile(`(?m)^parsemcp_active_sessions (\d+)`)

// openSessions is how many MCP sessions an instance holds.
func openSessions(t *testing.T, s *server) int {
	t.Helper()
	resp, err := http.Get(strings.TrimSuffix(s.url, "/mcp") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	m := sessionsRE.FindSubmatch(body)
	if m == nil {
		t.Fatalf("no parsemcp_active_sessions in /metrics")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// sessionOn connects clients through the load balancer until one's session
// lands on want (round-robin: the second try at most); the others close.
func sessionOn(t *testing.T, c *cluster, want *server, open func() *mcp.ClientSession) *mcp.ClientSession {
	t.Helper()
	for range 4 {
		before := openSessions(t, want)
		cs := open()
		if openSessions(t, want) > before {
			return cs
		}
		cs.Close()
	}
	t.Fatal("no session landed on the instance")
	return nil
}

// SIGTERM of an instance behind HAProxy: its listening stream ends at once
// (while a call it runs is still in flight), the subscriber connects again
// through the balancer, lands on the other instance, subscribes again and
// is told of the writes made afterwards; the call in flight finishes; the
// instance logs the start and the end of its shutdown.
func TestShutdownMovesListenersToTheOtherInstance(t *testing.T) {
	url := pgtest.Schema(t, "shutdown_e2e")
	if _, stderr, code := run(t, nil, "demo", "--rows", "300", "--out", url, "-q"); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	c := startClusterOn(t, url, "--permission", "write", "--live-debounce", "100ms", "--rate-limit", "0")
	ctx := context.Background()
	const uri = "parse://Ticket/count"

	updates := make(chan string, 64)
	subscribe := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "subscriber", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
		}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.lb}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
		return cs
	}
	writer, err := connect(t, c.lb, "2026-07-28") // stateless: any running instance
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	// awaitNotified writes until the subscriber is told (its listening
	// stream opens asynchronously after initialize).
	awaitNotified := func(what string) {
		t.Helper()
		for range 10 {
			if out, isErr := callTool(t, writer, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": what}}); isErr {
				t.Fatalf("%s: create_object: %v", what, out)
			}
			select {
			case got := <-updates:
				if got != uri {
					t.Fatalf("%s: notification for %s", what, got)
				}
				return
			case <-time.After(time.Second): // bounds the wait for this write only
			}
		}
		t.Fatalf("%s: the subscriber was not told\nA:\n%s\nB:\n%s", what, c.a.stderr, c.b.stderr)
	}

	victim, other := c.a, c.b
	sub := sessionOn(t, c, victim, subscribe)
	defer sub.Close()
	awaitNotified("before the shutdown")
	subEnded := make(chan error, 1)
	go func() { subEnded <- sub.Wait() }()

	// A call in flight on the victim: a count that waits on a lock the
	// test holds. Its client, like the subscriber, retries a broken
	// listening stream as the SDK does by default: its session ends once
	// the call is answered and its stream closed.
	caller := sessionOn(t, c, victim, func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: c.lb}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	})
	defer caller.Close()
	st, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	release := pgtest.LockClass(t, st, "Ticket")
	called := make(chan error, 1)
	go func() { called <- count(caller) }()
	pgtest.WaitActive(t, st, "Ticket", 1)

	if err := victim.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The listening stream ends while the call still runs (the lock is
	// held): the instance does not keep it for the grace period.
	select {
	case err := <-subEnded:
		t.Logf("the subscriber's session ended: %v", err)
	case err := <-called:
		t.Fatalf("the call ended (%v) before the listening stream was closed\n%s", err, victim.stderr)
	case <-time.After(time.Minute): // bounds a hang only
		t.Fatalf("the listening stream stayed open\n%s", victim.stderr)
	}
	release()
	select {
	case err := <-called:
		if err != nil {
			t.Fatalf("the call in flight at SIGTERM failed: %v\n%s", err, victim.stderr)
		}
	case <-time.After(time.Minute): // bounds a hang only
		t.Fatal("the call in flight never returned")
	}
	exited := make(chan error, 1)
	go func() { exited <- victim.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve exited: %v\n%s", err, victim.stderr)
		}
	case <-time.After(time.Minute): // bounds a hang only
		t.Fatal("the instance did not stop")
	}
	logs := victim.stderr.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`msg="shutting down".* sessions=\d+ streams=[1-9]\d* calls_in_flight=1`),
		regexp.MustCompile(`msg="shutdown complete".* calls_cancelled=0`),
	} {
		if !want.MatchString(logs) {
			t.Errorf("the instance's log has no line %s:\n%s", want, logs)
		}
	}

	// The client connects again, as it would on a broken session: the
	// balancer sends it to the running instance.
	for len(updates) > 0 { // the old session's, if any
		<-updates
	}
	before := openSessions(t, other)
	moved := subscribe()
	defer moved.Close()
	if openSessions(t, other) <= before {
		t.Fatal("the new session is not on the running instance")
	}
	awaitNotified("after the shutdown")
}
