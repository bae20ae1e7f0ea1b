package ratelimit

import (
	"context"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/time/rate"
)

// Local is a token bucket per key, in memory. Keys beyond MaxKeys evict
// the least recently used bucket.
type Local struct {
	perSecond rate.Limit
	burst     int
	buckets   *lru.Cache[string, *rate.Limiter]
}

// MaxKeys bounds the buckets a Local limiter keeps.
const MaxKeys = 100_000

// NewLocal allows perSecond requests per key on average, burst at once.
func NewLocal(perSecond float64, burst int) *Local {
	c, _ := lru.New[string, *rate.Limiter](MaxKeys)
	return &Local{perSecond: rate.Limit(perSecond), burst: max(burst, 1), buckets: c}
}

// Allow takes one token from key's bucket.
func (l *Local) Allow(_ context.Context, key string) (bool, time.Duration, error) {
	b, ok := l.buckets.Get(key)
	if !ok {
		b = rate.NewLimiter(l.perSecond, l.burst)
		if prev, found, _ := l.buckets.PeekOrAdd(key, b); found {
			b = prev
		}
	}
	r := b.Reserve()
	if d := r.Delay(); d > 0 {
		r.Cancel()
		return false, d, nil
	}
	return true, 0, nil
}
