package ratelimit

import (
	"context"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Local counts requests per key in memory. Keys beyond MaxKeys evict the
// least recently used count.
type Local struct {
	rate rate
	cfg  config

	mu     sync.Mutex
	counts *lru.Cache[string, *count]
}

// count is a key's requests in one window.
type count struct {
	window int64
	n      int64
}

// MaxKeys bounds the keys a Local limiter keeps.
const MaxKeys = 100_000

// NewLocal admits n requests per key in each window.
func NewLocal(n int, window time.Duration, opts ...Option) (*Local, error) {
	r, err := newRate(n, window)
	if err != nil {
		return nil, err
	}
	c, _ := lru.New[string, *count](MaxKeys)
	return &Local{rate: r, cfg: newConfig(opts), counts: c}, nil
}

// Allow counts one request for key in the current window.
func (l *Local) Allow(_ context.Context, key string) (bool, time.Duration, error) {
	window, left := l.rate.at(l.cfg.clock.Now())
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.counts.Get(key)
	if !ok {
		c = &count{}
		l.counts.Add(key, c)
	}
	if c.window != window {
		c.window, c.n = window, 0
	}
	if c.n >= l.rate.n {
		return false, left, nil
	}
	c.n++
	return true, 0, nil
}
