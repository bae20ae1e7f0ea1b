// Package ratelimit holds the limiters of requests per key. Both count in
// fixed windows aligned on the clock (window k covers [k·w, (k+1)·w) from
// the Unix epoch) and admit exactly N requests per key in a window: Local
// in memory, for one server instance; Redis shared by every instance using
// the same Redis and prefix, failing closed when Redis cannot be reached.
// Being aligned on the clock, the windows of several instances agree.
package ratelimit

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Limiter decides whether key may make one more request now. When it may
// not, retryAfter says when to try again. An error means the limiter could
// not decide; a fail-closed limiter reports that as a refusal instead.
type Limiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// MinWindow is the shortest window a limiter accepts; windows are whole
// milliseconds.
const MinWindow = time.Millisecond

// Option configures a limiter.
type Option func(*config)

type config struct {
	clock clockwork.Clock
}

// WithClock makes the limiter read the time from c (tests pass a fake
// clock) instead of the system clock.
func WithClock(c clockwork.Clock) Option { return func(o *config) { o.clock = c } }

func newConfig(opts []Option) config {
	c := config{clock: clockwork.NewRealClock()}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// rate is n requests per window.
type rate struct {
	n      int64
	window int64 // milliseconds
}

func newRate(n int, window time.Duration) (rate, error) {
	if n < 1 {
		return rate{}, fmt.Errorf("ratelimit: %d requests per window: want at least 1", n)
	}
	if window < MinWindow || window%time.Millisecond != 0 {
		return rate{}, fmt.Errorf("ratelimit: window %s: want a whole number of milliseconds, at least %s", window, MinWindow)
	}
	return rate{n: int64(n), window: window.Milliseconds()}, nil
}

// at returns the index of the window holding t and the time left until
// that window ends (at least 1 ms).
func (r rate) at(t time.Time) (index int64, left time.Duration) {
	ms := t.UnixMilli()
	index = ms / r.window
	if ms < 0 && ms%r.window != 0 {
		index-- // floor, for times before the epoch
	}
	return index, time.Duration((index+1)*r.window-ms) * time.Millisecond
}
