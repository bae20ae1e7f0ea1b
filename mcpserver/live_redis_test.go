package mcpserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/subscribe"
)

// namedRedis connects to the local Redis under a unique client name,
// skipping without Redis (failing in CI).
func namedRedis(t *testing.T) (*redis.Client, string) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "parsemcp-live-" + hex.EncodeToString(b[:])
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ClientName: name})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI requires Redis at 127.0.0.1:6379: %v", err)
		}
		t.Skipf("Redis not reachable at 127.0.0.1:6379 (%v)", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, name
}

// A change made through one instance reaches a subscriber of another
// through Redis alone (the two instances here do not even share a
// database), and after the subscriber's instance loses its Redis
// connection it sends a resync notification and goes on delivering.
func TestLiveAcrossInstancesThroughRedis(t *testing.T) {
	ctx := context.Background()
	channel := "parsemcp:live-test:" + strings.ReplaceAll(t.Name(), "/", "_")
	rcA, _ := namedRedis(t)
	rcB, nameB := namedRedis(t)
	admin, _ := namedRedis(t)
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
	srvB, urlB := liveServer(t, stB, &mcpserver.LiveOptions{Debounce: 100 * time.Millisecond, Notifier: nB})
	count := "parse://Ticket/count"
	w := watch(t, srvB, urlB, "alice-token")
	if err := w.subscribe(t, count); err != nil {
		t.Fatal(err)
	}
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
	w.none(t, "a row alice cannot read, written through A")

	// B loses its Redis subscription: once it is back, alice is told
	// her resource may have changed (changes may have been missed), and
	// later changes arrive again.
	if n := killPubSub(t, admin, nameB); n == 0 {
		t.Fatal("no pub/sub connection of B found to kill")
	}
	w.next(t, count) // the resync
	write(nil)
	w.next(t, count)
}

// killPubSub drops the pub/sub connections of the Redis client named
// name, as a Redis restart or a network cut would.
func killPubSub(t *testing.T, admin *redis.Client, name string) int {
	t.Helper()
	ctx := context.Background()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name="+name+" ") || !strings.Contains(line, "sub=1") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				n, err := admin.ClientKillByFilter(ctx, "ID", id, "TYPE", "pubsub").Result()
				if err != nil {
					t.Fatal(err)
				}
				killed += int(n)
			}
		}
	}
	return killed
}
