package subscribe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parsemcp/parsemcp/internal/testing/redistest"
)

func quietLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startRedis starts a Redis notifier on channel with its own named client
// and waits until it is subscribed.
func startRedis(t *testing.T, channel, clientName string) (Notifier, *inbox) {
	t.Helper()
	n := NewRedis(redistest.Client(t, clientName), channel, quietLog())
	t.Cleanup(func() { n.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := WaitReady(ctx, n); err != nil {
		t.Fatalf("notifier not subscribed: %v", err)
	}
	b := &inbox{}
	n.Listen(b.add)
	return n, b
}

// Two instances on one channel: what either publishes reaches both,
// exactly once each.
func TestRedisNotifierFanOut(t *testing.T) {
	channel := redistest.Name("parsemcp-test-subscribe-")
	a, inA := startRedis(t, channel, redistest.Name("parsemcp-test-a-"))
	b, inB := startRedis(t, channel, redistest.Name("parsemcp-test-b-"))
	ctx := context.Background()

	payload := []byte("{\"class\":\"Ticket\",\"op\":\"update\"}\x00\xff")
	const n = 20
	for i := range n {
		if err := a.Publish(ctx, Message{ID: fmt.Sprint("a-", i), Payload: payload}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Publish(ctx, Message{ID: "from-b"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, Message{ID: "a-end"}); err != nil {
		t.Fatal(err)
	}
	// The barriers: a publisher hands its own message to its listeners
	// at once, so each instance waits for one the other published last.
	// Redis delivers in publishing order: once A has from-b, it has
	// processed (and skipped) its own echoes of a-0…a-19; once B has
	// a-end, it has processed a-0…a-19 and its own echo of from-b.
	waitFor(t, 5*time.Second, "from-b on A and a-end on B", func() bool { return inA.count("from-b") == 1 && inB.count("a-end") == 1 })
	if inB.count("from-b") != 1 {
		t.Fatalf("from-b delivered %d times on B, want once", inB.count("from-b"))
	}
	for i := range n {
		id := fmt.Sprint("a-", i)
		if ca, cb := inA.count(id), inB.count(id); ca != 1 || cb != 1 {
			t.Fatalf("%s delivered %d times on A, %d on B; want once each", id, ca, cb)
		}
	}
	if m, _ := inB.find("a-7"); string(m.Payload) != string(payload) {
		t.Fatalf("payload %q, want %q", m.Payload, payload)
	}
	if inA.count(ResyncID)+inB.count(ResyncID) != 0 {
		t.Fatal("resync without a reconnect")
	}

	// A message with an empty ID and payload is still a message.
	if err := a.Publish(ctx, Message{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the empty message on B", func() bool { return inB.count("") == 1 })
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, Message{ID: "late"}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Publish after Close: %v", err)
	}
}

// When the subscriber's connection drops, the notifier reconnects, tells
// its listeners to resync, and messages flow again both ways.
func TestRedisNotifierReconnect(t *testing.T) {
	channel := redistest.Name("parsemcp-test-subscribe-")
	nameA := redistest.Name("parsemcp-test-a-")
	a, inA := startRedis(t, channel, nameA)
	b, inB := startRedis(t, channel, redistest.Name("parsemcp-test-b-"))
	admin := redistest.Client(t, "")
	ctx := context.Background()

	if err := b.Publish(ctx, Message{ID: "before"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "before on A", func() bool { return inA.count("before") == 1 })

	for round := 1; round <= 2; round++ {
		if n := redistest.KillPubSub(t, admin, nameA); n != 1 {
			t.Fatalf("killed %d pub/sub connections of A, want 1", n)
		}
		waitFor(t, 10*time.Second, "the resync message on A", func() bool { return inA.count(ResyncID) == round })
		if m, _ := inA.find(ResyncID); len(m.Payload) != 0 {
			t.Fatalf("resync payload %q", m.Payload)
		}
		// After the resync the subscription is live again: later publishes
		// arrive, in both directions.
		id := fmt.Sprint("after-", round)
		if err := b.Publish(ctx, Message{ID: id + "-b"}); err != nil {
			t.Fatal(err)
		}
		if err := a.Publish(ctx, Message{ID: id + "-a"}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 5*time.Second, id+" on both", func() bool {
			return inA.count(id+"-b") == 1 && inB.count(id+"-a") == 1 && inA.count(id+"-a") == 1
		})
	}
	if inB.count(ResyncID) != 0 {
		t.Fatal("B resynced though its connection was not touched")
	}
}

// Without Redis: Publish still reaches the local listeners and reports the
// error; the subscriber keeps retrying; Close returns promptly.
func TestRedisNotifierUnreachable(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	defer c.Close()
	n := NewRedis(c, "nowhere", quietLog())
	var in inbox
	n.Listen(in.add)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := WaitReady(ctx, n); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitReady without Redis: %v", err)
	}
	err := n.Publish(context.Background(), Message{ID: "x"})
	if err == nil || !strings.Contains(err.Error(), `Redis channel "nowhere"`) {
		t.Fatalf("Publish without Redis: %v", err)
	}
	if in.count("x") != 1 {
		t.Fatal("the local listener missed the message")
	}
	done := make(chan struct{})
	go func() { n.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hangs")
	}
}

// A malformed frame on the channel (another program, another version) is
// dropped, and the subscriber carries on.
func TestRedisNotifierMalformed(t *testing.T) {
	channel := redistest.Name("parsemcp-test-subscribe-")
	_, in := startRedis(t, channel, redistest.Name("parsemcp-test-a-"))
	raw := redistest.Client(t, "")
	ctx := context.Background()
	for _, bad := range []string{"", "hello", "\x01\x09"} {
		if err := raw.Publish(ctx, channel, bad).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := raw.Publish(ctx, channel, encodeFrame("someone-else", Message{ID: "good"})).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the good message", func() bool { return in.count("good") == 1 })
	if got := in.ids(); len(got) != 1 {
		t.Fatalf("received %q, want only good", got)
	}
}

// Health-check pings on an idle subscription are answered: no reconnect,
// no resync, and messages still arrive.
func TestRedisNotifierIdleHealthCheck(t *testing.T) {
	oldInterval, oldHook := redisHealthInterval, redisPonged
	// The interval is also how long a ping's reply may take: long enough
	// that a loaded machine answers in time; the test waits for replies,
	// not for time to pass.
	redisHealthInterval = 250 * time.Millisecond
	var pongs atomic.Int64
	redisPonged = func() { pongs.Add(1) }
	t.Cleanup(func() { redisHealthInterval, redisPonged = oldInterval, oldHook }) // runs after the notifiers' Close
	channel := redistest.Name("parsemcp-test-subscribe-")
	_, in := startRedis(t, channel, redistest.Name("parsemcp-test-a-"))
	b, _ := startRedis(t, channel, redistest.Name("parsemcp-test-b-"))
	// Idle: wait for several ping rounds answered (both subscribers ping).
	waitFor(t, 30*time.Second, "six health-check replies", func() bool { return pongs.Load() >= 6 })
	if err := b.Publish(context.Background(), Message{ID: "after-idle"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "after-idle", func() bool { return in.count("after-idle") == 1 })
	if in.count(ResyncID) != 0 {
		t.Fatal("an idle, healthy subscription reconnected")
	}
}
