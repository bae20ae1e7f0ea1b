package ratelimit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/parsemcp/parsemcp/internal/testing/redistest"
	"github.com/parsemcp/parsemcp/ratelimit"
)

// start is a fake time 20 s into a minute window.
var start = time.Date(2026, 3, 1, 12, 0, 20, 0, time.UTC)

type clocked struct {
	ratelimit.Limiter
	clock *clockwork.FakeClock
}

// limiters builds the same rate on both backends, each reading a fake
// clock of its own set at start.
func limiters(t *testing.T, n int, window time.Duration) map[string]clocked {
	t.Helper()
	lc, rc := clockwork.NewFakeClockAt(start), clockwork.NewFakeClockAt(start)
	l, err := ratelimit.NewLocal(n, window, ratelimit.WithClock(lc))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ratelimit.NewRedis(redistest.Client(t, ""), prefix(), n, window, ratelimit.WithClock(rc))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]clocked{"local": {l, lc}, "redis": {r, rc}}
}

func prefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "parsemcp-test-rl-" + hex.EncodeToString(b[:])
}

// Exactly N per window: 3/m admits 3 of 10 immediate calls, says when the
// window ends, and admits 3 more in the next window; keys count apart.
func TestExactlyNPerWindow(t *testing.T) {
	ctx := context.Background()
	for name, l := range limiters(t, 3, time.Minute) {
		clock := l.clock
		t.Run(name, func(t *testing.T) {
			admitted := 0
			for range 10 {
				ok, retry, err := l.Allow(ctx, "bob")
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					admitted++
					continue
				}
				if retry != 40*time.Second {
					t.Fatalf("retry after %s, want the 40 s left in the window", retry)
				}
			}
			if admitted != 3 {
				t.Fatalf("admitted %d of 10, want 3", admitted)
			}
			if ok, _, _ := l.Allow(ctx, "alice"); !ok {
				t.Fatal("another key has its own count")
			}
			clock.Advance(39*time.Second + 999*time.Millisecond) // the last millisecond of the window
			if ok, retry, _ := l.Allow(ctx, "bob"); ok || retry != time.Millisecond {
				t.Fatalf("last millisecond: ok=%v retry=%s", ok, retry)
			}
			clock.Advance(time.Millisecond) // the next window
			for i := range 4 {
				ok, _, _ := l.Allow(ctx, "bob")
				if ok != (i < 3) {
					t.Fatalf("next window, call %d: ok=%v", i+1, ok)
				}
			}
		})
	}
}

// Concurrent callers cannot overshoot.
func TestExactlyNConcurrently(t *testing.T) {
	for name, l := range limiters(t, 25, time.Second) {
		t.Run(name, func(t *testing.T) {
			var admitted atomic.Int64
			var wg sync.WaitGroup
			for range 200 {
				wg.Go(func() {
					if ok, _, _ := l.Allow(context.Background(), "k"); ok {
						admitted.Add(1)
					}
				})
			}
			wg.Wait()
			if admitted.Load() != 25 {
				t.Fatalf("admitted %d of 200 concurrent calls, want 25", admitted.Load())
			}
		})
	}
}

// Windows and counts are validated: no window under a millisecond (the
// Redis limiter divided by zero), no fraction of one, no count under 1.
func TestRateValidated(t *testing.T) {
	for _, c := range []struct {
		n      int
		window time.Duration
	}{{3, 0}, {3, 500 * time.Microsecond}, {3, -time.Second}, {3, 1500 * time.Microsecond}, {0, time.Second}, {-1, time.Minute}} {
		if _, err := ratelimit.NewLocal(c.n, c.window); err == nil {
			t.Errorf("NewLocal(%d, %s) accepted", c.n, c.window)
		}
		if _, err := ratelimit.NewRedis(nil, "p", c.n, c.window); err == nil {
			t.Errorf("NewRedis(%d, %s) accepted", c.n, c.window)
		}
	}
	if _, err := ratelimit.NewLocal(1, time.Millisecond); err != nil {
		t.Fatal(err)
	}
}

// Two Redis limiters (two server instances) share one count per key.
func TestRedisShared(t *testing.T) {
	c := redistest.Client(t, "")
	clock := clockwork.NewFakeClockAt(start)
	p := prefix()
	a, _ := ratelimit.NewRedis(c, p, 4, time.Minute, ratelimit.WithClock(clock))
	b, _ := ratelimit.NewRedis(c, p, 4, time.Minute, ratelimit.WithClock(clock))
	admitted := 0
	for i := range 10 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if ok, _, err := l.Allow(context.Background(), "bob"); err != nil {
			t.Fatal(err)
		} else if ok {
			admitted++
		}
	}
	if admitted != 4 {
		t.Fatalf("two instances admitted %d, want 4 together", admitted)
	}
}
