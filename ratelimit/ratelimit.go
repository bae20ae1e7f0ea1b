// Package ratelimit holds the limiters: a local token bucket per key, and a
// Redis-shared one for several server instances that fails closed.
package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// Limiter decides whether key may make one more request now. When it may
// not, retryAfter says when to try again. An error means the limiter could
// not decide; a fail-closed limiter reports that as a refusal instead.
type Limiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

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

// Redis counts requests per key in fixed windows shared by every instance
// using the same Redis and prefix. When Redis cannot be reached it refuses
// (fail closed) with a random retry of 1–5 s, so clients spread their
// retries.
type Redis struct {
	client *redis.Client
	prefix string
	limit  int64
	window time.Duration
}

// NewRedis allows limit requests per key per window.
func NewRedis(client *redis.Client, prefix string, limit int, window time.Duration) *Redis {
	return &Redis{client: client, prefix: prefix, limit: int64(limit), window: window}
}

// ErrUnavailable wraps a Redis failure (the request was refused).
type ErrUnavailable struct{ Err error }

func (e *ErrUnavailable) Error() string { return "rate limiter unavailable: " + e.Err.Error() }
func (e *ErrUnavailable) Unwrap() error { return e.Err }

// FailClosedRetry is a random retry for a refusal made without Redis.
func FailClosedRetry() time.Duration {
	return time.Second + time.Duration(rand.Int64N(int64(4*time.Second)))
}

var incrScript = redis.NewScript(`
local n = redis.call("INCR", KEYS[1])
if n == 1 then redis.call("PEXPIRE", KEYS[1], ARGV[1]) end
return {n, redis.call("PTTL", KEYS[1])}
`)

// Allow counts one request for key in the current window.
func (r *Redis) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	window := time.Now().UnixMilli() / r.window.Milliseconds()
	k := r.prefix + ":" + key + ":" + strconv.FormatInt(window, 10)
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := incrScript.Run(ctx, r.client, []string{k}, r.window.Milliseconds()).Int64Slice()
	if err != nil || len(res) != 2 {
		if err == nil {
			err = fmt.Errorf("unexpected reply %v", res)
		}
		return false, FailClosedRetry(), &ErrUnavailable{Err: err}
	}
	if res[0] > r.limit {
		ttl := time.Duration(res[1]) * time.Millisecond
		if ttl <= 0 {
			ttl = r.window
		}
		return false, ttl, nil
	}
	return true, 0, nil
}
