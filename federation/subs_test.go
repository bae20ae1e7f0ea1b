package federation

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// waitUnsub waits until the broker saw client unsubscribe topic.
func waitUnsub(t *testing.T, h *subHook, client, topic string) {
	t.Helper()
	ctx := bound(t)
	for h.count(h.unsubs, client, topic) == 0 {
		select {
		case <-h.events:
		case <-ctx.Done():
			t.Fatalf("the broker never saw %s unsubscribe %s", client, topic)
		}
	}
}

func TestResponseSubscriptionsReuseExtendExpire(t *testing.T) {
	b, hook := testBroker(t)
	clock := newFakeClock()
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	startAgent(t, conn, d1, echoTools(t))
	pc := conn
	pc.ClientID = "platform-subs"
	p := startPlatform(t, Options{ConnOptions: pc, now: clock.now})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	call := func(user, session string) {
		t.Helper()
		if _, err := p.Call(bound(t), Caller{User: user, Session: session}, "device-d1__echo", json.RawMessage(`{"text":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	s1 := p.topics.Response("u1", "s1", d1)
	s2 := p.topics.Response("u1", "s2", d1)
	for range 3 {
		call("u1", "s1")
	}
	if n := hook.count(hook.subs, "platform-subs", s1); n != 1 {
		t.Fatalf("three calls for one (user, session, entity) subscribed %d times, want 1", n)
	}
	call("u1", "s2")
	if n := hook.count(hook.subs, "platform-subs", s2); n != 1 {
		t.Fatalf("a second session subscribed %d times, want 1", n)
	}
	for _, f := range hook.subs["platform-subs"] {
		if f != p.topics.PresenceFilter() && (slices.Contains([]byte(f), '+') || slices.Contains([]byte(f), '#')) {
			t.Fatalf("response subscription %q is a wildcard", f)
		}
	}

	// Reuse extends the TTL.
	t0 := clock.now()
	if got := p.subs.expiry(s1); !got.Equal(t0.Add(DefaultSubscriptionTTL)) {
		t.Fatalf("expiry = %v, want %v", got, t0.Add(DefaultSubscriptionTTL))
	}
	clock.advance(23 * time.Hour)
	call("u1", "s1")
	if got := p.subs.expiry(s1); !got.Equal(t0.Add(47 * time.Hour)) {
		t.Fatalf("expiry after reuse = %v, want %v", got, t0.Add(47*time.Hour))
	}
	if n := hook.count(hook.subs, "platform-subs", s1); n != 1 {
		t.Fatalf("reuse re-subscribed (%d subscriptions)", n)
	}

	// Past s2's TTL: s2 is unsubscribed on the broker, s1 (extended) is kept.
	clock.advance(2 * time.Hour)
	p.subs.expire()
	waitUnsub(t, hook, "platform-subs", s2)
	p.subs.drain()
	held := p.subs.held()
	if slices.Contains(held, s2) || !slices.Contains(held, s1) {
		t.Fatalf("held after expiry = %v", held)
	}
	if hook.count(hook.unsubs, "platform-subs", s1) != 0 {
		t.Fatal("the extended subscription was unsubscribed")
	}
	// A later call on s2 subscribes again.
	call("u1", "s2")
	if n := hook.count(hook.subs, "platform-subs", s2); n != 2 {
		t.Fatalf("s2 subscriptions = %d, want 2", n)
	}
}

func TestResponseSubscriptionsLRUOverflowUnsubscribes(t *testing.T) {
	b, hook := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	startAgent(t, conn, d1, echoTools(t))
	pc := conn
	pc.ClientID = "platform-lru"
	p := startPlatform(t, Options{ConnOptions: pc, MaxSubscriptions: 2})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	for _, s := range []string{"a", "b", "c"} {
		if _, err := p.Call(bound(t), Caller{User: "u", Session: s}, "device-d1__echo", json.RawMessage(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	// The catalog topic was least recently used, then a: both dropped.
	waitUnsub(t, hook, "platform-lru", p.topics.Response("u", "a", d1))
	p.subs.drain()
	if held := p.subs.held(); len(held) != 2 || !slices.Contains(held, p.topics.Response("u", "c", d1)) {
		t.Fatalf("held = %v", held)
	}
}
