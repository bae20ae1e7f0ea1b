package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/internal/testing/redistest"
)

// Two `parsemcp serve` processes share one PostgreSQL database and Redis:
// a client subscribed on instance B is told about a row written through
// instance A, and about a row written by plain SQL while B's change-feed
// connection was cut (B reconnects and catches up).
func TestLiveAcrossServeProcesses(t *testing.T) {
	redistest.Client(t, "") // skips without Redis (fails in CI)
	url := pgtest.Schema(t, "live_e2e")
	if _, stderr, code := run(t, nil, "demo", "--rows", "300", "--out", url, "-q"); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	if _, stderr, code := run(t, nil, "migrate", "--store", url); code != 0 {
		t.Fatalf("migrate: %s", stderr)
	}
	writeEnv := []string{"PARSEMCP_ALLOW_WRITE_TOOLS=true", "PARSEMCP_ALLOW_RAW_CRUD=true"}
	a := startServe(t, writeEnv, "--store", url, "--redis", "redis://"+redistest.Addr()+"/0", "--permission", "write", "--rate-limit", "0")
	b := startServe(t, nil, "--store", url, "--redis", "redis://"+redistest.Addr()+"/0", "--rate-limit", "0", "--live-debounce", "100ms")
	ctx := context.Background()

	const uri = "parse://Ticket/count"
	_, updates := subscribeWatcher(t, b.url, uri)
	writer, err := mcp.NewClient(&mcp.Implementation{Name: "writer", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: a.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()

	// Each write is retried until its notification comes: the watcher's
	// listening stream opens asynchronously after initialize.
	await := func(what string, write func()) {
		t.Helper()
		for range 10 {
			write()
			select {
			case got := <-updates:
				if got != uri {
					t.Fatalf("%s: notification for %s", what, got)
				}
				return
			case <-time.After(time.Second):
			}
		}
		t.Fatalf("%s: no notification on instance B\nA:\n%s\nB:\n%s", what, a.stderr, b.stderr)
	}
	await("write through A", func() {
		if out, isErr := callTool(t, writer, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "from A"}}); isErr {
			t.Fatalf("create_object on A: %v", out)
		}
	})

	// Cut every change-feed connection, and write by plain SQL while
	// they reconnect: nothing is lost.
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var killed int
	if err := conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = 'parsemcp-changefeed'`).Scan(&killed); err != nil || killed < 2 {
		t.Fatalf("terminated %d change-feed connections (%v), want both instances'", killed, err)
	}
	n := 0
	await("write by SQL during the reconnect", func() {
		n++
		id := "sqlrow" + string(rune('a'+n))
		if _, err := conn.Exec(ctx, `INSERT INTO "Ticket" ("objectId", "createdAt", "updatedAt", "title") VALUES ($1, now(), now(), 'by SQL')`, id); err != nil {
			t.Fatal(err)
		}
	})
}

// `parsemcp serve --demo` and two real clients: the count one subscribed
// to is updated live while the other writes.
func TestServeDemoLiveCount(t *testing.T) {
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "HOME=" + cache, "PARSEMCP_ALLOW_WRITE_TOOLS=true", "PARSEMCP_ALLOW_RAW_CRUD=true"}
	s := startServe(t, env, "--demo", "--demo-rows", "300", "--permission", "write", "--rate-limit", "0")
	ctx := context.Background()
	updates := make(chan string, 64)
	watcher, err := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer watcher.Close()
	const uri = "parse://Ticket/count"
	read := func() string {
		r, err := watcher.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			t.Fatal(err)
		}
		return r.Contents[0].Text
	}
	before := read()
	if err := watcher.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	writer, err := mcp.NewClient(&mcp.Implementation{Name: "writer", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	for i := 0; ; i++ {
		if out, isErr := callTool(t, writer, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "live"}}); isErr {
			t.Fatalf("create_object: %v", out)
		}
		select {
		case got := <-updates:
			if got != uri {
				t.Fatalf("notification for %s", got)
			}
			if after := read(); after == before {
				t.Fatalf("notified, but the count reads the same: %s", after)
			}
			return
		case <-time.After(time.Second):
			if i == 9 {
				t.Fatalf("no notification\n%s", s.stderr)
			}
		}
	}
}

// subscribeWatcher connects a client to endpoint (2025-11-25, a stateful
// session), subscribes it to uri, and returns the URIs of the
// resources/updated notifications it receives; the session closes when the
// test ends.
func subscribeWatcher(t *testing.T, endpoint, uri string) (*mcp.ClientSession, <-chan string) {
	t.Helper()
	ctx := context.Background()
	updates := make(chan string, 64)
	watcher, err := mcp.NewClient(&mcp.Implementation{Name: "watcher", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updates <- r.Params.URI },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = watcher.Close() })
	if err := watcher.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	return watcher, updates
}
