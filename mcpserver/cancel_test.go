package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// Cancellation reaches PostgreSQL: a notifications/cancelled for the
// call, or a DELETE of its session, stops the statement in the database.
// Cancels sent from another session (or for ids that do not exist) get
// the same 202 and cancel nothing.
func TestCancelReachesDatabase(t *testing.T) {
	ctx := context.Background()
	st, err := postgres.Create(ctx, pgtest.Schema(t, "cancel"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, where := pgtest.SlowClass(t, st) // uncancelled, its count runs for tens of seconds
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Timeouts: map[string]time.Duration{"count_objects": 5 * time.Minute},
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := mount(t, mcpserver.HandlerOptions{Server: srv})

	slow := &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Big", "where": where}}
	active := func(t *testing.T) int { return pgtest.ActiveCounts(t, st) }
	waitActive := func(t *testing.T, want int, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for active(t) != want {
			if time.Now().After(deadline) {
				t.Fatalf("active statements on Big: %d, want %d", active(t), want)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	open := func(t *testing.T, token string) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "cancel", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: token}}, DisableStandaloneSSE: true},
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	start := func(t *testing.T, cs *mcp.ClientSession) (context.CancelFunc, chan error) {
		cctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(cctx, slow)
			done <- err
		}()
		waitActive(t, 1, 20*time.Second)
		return cancel, done
	}

	t.Run("notifications/cancelled", func(t *testing.T) {
		cs := open(t, "alice-token")
		cancel, done := start(t, cs)
		cancel() // the SDK client sends notifications/cancelled
		if err := <-done; err == nil {
			t.Fatal("cancelled call returned no error")
		}
		waitActive(t, 0, 5*time.Second)
		// The session goes on.
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("after a cancel: %v", err)
		}
	})

	t.Run("spoofed cancel", func(t *testing.T) {
		alice := open(t, "alice-token")
		cancel, done := start(t, alice)
		defer func() { cancel(); <-done; waitActive(t, 0, 5*time.Second) }()
		bob := initSession(t, url, "bob-token")
		for id := range 10 { // whatever alice's request id is, bob names it
			body := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"spoof"}}`, id)
			if r := raw(t, http.MethodPost, url, "bob-token", bob, body); r.status != http.StatusAccepted {
				t.Fatalf("cancel of id %d from another session: %d %s", id, r.status, r.body)
			}
			// In alice's session, with bob's credentials: refused as unknown.
			if r := raw(t, http.MethodPost, url, "bob-token", alice.ID(), body); r.status != http.StatusNotFound {
				t.Fatalf("cancel in alice's session by bob: %d %s", r.status, r.body)
			}
		}
		for _, id := range []string{`"no-such-id"`, `123456`, `null`} {
			body := `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":` + id + `}}`
			if r := raw(t, http.MethodPost, url, "bob-token", bob, body); r.status != http.StatusAccepted {
				t.Fatalf("cancel of unknown id %s: %d %s", id, r.status, r.body)
			}
		}
		time.Sleep(300 * time.Millisecond)
		if active(t) != 1 {
			t.Fatal("a cancel from another session stopped alice's statement")
		}
		select {
		case err := <-done:
			t.Fatalf("alice's call ended: %v", err)
		default:
		}
	})

	t.Run("DELETE", func(t *testing.T) {
		cs := open(t, "alice-token")
		cancel, done := start(t, cs)
		defer cancel()
		deleted := make(chan rawResp, 1)
		go func() { deleted <- raw(t, http.MethodDelete, url, "alice-token", cs.ID(), "") }()
		// The statement stops while the DELETE is answered (the SDK alone
		// would wait for it to finish, tens of seconds later).
		waitActive(t, 0, 5*time.Second)
		if r := <-deleted; r.status != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", r.status, r.body)
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the call did not end with its session")
		}
	})
}
