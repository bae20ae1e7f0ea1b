package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/testing/redistest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/subscribe"
)

// A change made through one instance reaches a subscriber of another
// through Redis alone (the two instances here do not even share a
// database), and after the subscriber's instance loses its Redis
// connection it sends a resync notification and goes on delivering.
func TestLiveAcrossInstancesThroughRedis(t *testing.T) {
	ctx := context.Background()
	channel := "parsemcp:live-test:" + strings.ReplaceAll(t.Name(), "/", "_")
	nameB := redistest.Name("parsemcp-live-b-")
	rcA := redistest.Client(t, redistest.Name("parsemcp-live-a-"))
	rcB := redistest.Client(t, nameB)
	admin := redistest.Client(t, "")
	nA := subscribe.NewRedis(rcA, channel, nil)
	nB := subscribe.NewRedis(rcB, channel, nil)
	t.Cleanup(func() { nA.Close(); nB.Close() })
	for _, n := range []subscribe.Notifier{nA, nB} {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := subscribe.WaitReady(wctx, n); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	stA, stB := fixtureStore(t), fixtureStore(t)
	_, _ = liveServer(t, stA, &mcpserver.LiveOptions{Debounce: 100 * time.Millisecond, Notifier: nA})
	srvB, urlB := liveServer(t, stB, &mcpserver.LiveOptions{Debounce: 100 * time.Millisecond, Notifier: nB, Senders: 1})
	count := "parse://Ticket/count"
	w := watch(t, srvB, urlB, "alice-token")
	if err := w.subscribe(t, count); err != nil {
		t.Fatal(err)
	}
	change := barrier(t, stA, w) // through A and Redis too
	write := func(acl map[string]any) {
		t.Helper()
		obj := parse.Object{"title": "through A"}
		if acl != nil {
			obj["ACL"] = acl
		}
		if err := stA.Create(ctx, "Ticket", []parse.Object{obj}); err != nil {
			t.Fatal(err)
		}
	}
	write(nil)
	w.next(t, count)
	// Visibility is decided on B for B's subscriber: a row alice cannot
	// read says nothing to her.
	write(aclFor(bob))
	quiet(t, "a row alice cannot read, written through A", change, w)
	if err := w.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: barrierURI}); err != nil { // the resync would name it too
		t.Fatal(err)
	}

	// B loses its Redis subscription: once it is back, alice is told
	// her resource may have changed (changes may have been missed), and
	// later changes arrive again.
	if n := redistest.KillPubSub(t, admin, nameB); n == 0 {
		t.Fatal("no pub/sub connection of B found to kill")
	}
	w.next(t, count) // the resync
	write(nil)
	w.next(t, count)
}
