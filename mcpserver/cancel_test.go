package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// Cancellation reaches PostgreSQL: a notifications/cancelled for the
// call, or a DELETE of its session, stops the statement in the database.
// Cancels sent from another session (or for ids that do not exist) get
// the same 202 and cancel nothing. The count is held up by a lock the
// test holds on Big (pgtest.LockClass), so it cannot end on its own and
// no outcome depends on how fast the machine is.
func TestCancelReachesDatabase(t *testing.T) {
	ctx := context.Background()
	st, err := postgres.Create(ctx, pgtest.Schema(t, "cancel"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sch := parse.NewSchema("Big")
	sch.Fields["title"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, "Big", []parse.Object{{"objectId": "b000000001", "title": "one"}, {"objectId": "b000000002", "title": "two"}}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Timeouts: map[string]time.Duration{"count_objects": 5 * time.Minute},
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := mount(t, mcpserver.HandlerOptions{Server: srv})

	slow := &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Big"}}
	waitActive := func(t *testing.T, want int) { t.Helper(); pgtest.WaitActive(t, st, "Big", want) }
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
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	// start locks Big (until the subtest ends) and runs the count, which
	// waits for the lock.
	start := func(t *testing.T, cs *mcp.ClientSession) (release, cancel context.CancelFunc, done chan outcome) {
		release = pgtest.LockClass(t, st, "Big")
		cctx, cancel := context.WithCancel(ctx)
		t.Cleanup(cancel)
		done = make(chan outcome, 1)
		go func() {
			res, err := cs.CallTool(cctx, slow)
			done <- outcome{res, err}
		}()
		waitActive(t, 1)
		return release, cancel, done
	}

	t.Run("notifications/cancelled", func(t *testing.T) {
		cs := open(t, "alice-token")
		_, cancel, done := start(t, cs)
		cancel() // the SDK client sends notifications/cancelled
		if o := <-done; o.err == nil {
			t.Fatal("cancelled call returned no error")
		}
		waitActive(t, 0) // while the lock is still held: the statement was stopped
		// The session goes on.
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("after a cancel: %v", err)
		}
	})

	t.Run("spoofed cancel", func(t *testing.T) {
		alice := open(t, "alice-token")
		release, _, done := start(t, alice)
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
		// Bob's session has handled his cancels once it answers a request
		// sent after them.
		if r := raw(t, http.MethodPost, url, "bob-token", bob, `{"jsonrpc":"2.0","id":77,"method":"ping"}`); r.status != http.StatusOK {
			t.Fatalf("bob's ping: %d %s", r.status, r.body)
		}
		// Alice's count, let go, ends with its answer: nothing cancelled it.
		release()
		o := <-done
		if o.err != nil || o.res.IsError {
			t.Fatalf("a cancel from another session ended alice's call: %v %+v", o.err, o.res)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(o.res.Content[0].(*mcp.TextContent).Text), &out); err != nil || out["count"] != 2.0 {
			t.Fatalf("alice's count: %v %v", out, err)
		}
	})

	t.Run("DELETE", func(t *testing.T) {
		cs := open(t, "alice-token")
		_, _, done := start(t, cs)
		deleted := make(chan rawResp, 1)
		go func() { deleted <- raw(t, http.MethodDelete, url, "alice-token", cs.ID(), "") }()
		// The statement stops while the lock is still held (the SDK alone
		// would wait for it to finish before closing the session).
		waitActive(t, 0)
		if r := <-deleted; r.status != http.StatusNoContent {
			t.Fatalf("DELETE: %d %s", r.status, r.body)
		}
		<-done // the call ends with its session
	})
}
