package ratelimit

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Redis counts requests per key in Redis, shared by every instance using
// the same Redis and prefix. When Redis cannot be reached it refuses (fail
// closed) with a random retry of 1–5 s, so clients spread their retries.
type Redis struct {
	client *redis.Client
	prefix string
	rate   rate
	cfg    config
}

// NewRedis admits n requests per key in each window, counted in Redis
// under keys starting with prefix.
func NewRedis(client *redis.Client, prefix string, n int, window time.Duration, opts ...Option) (*Redis, error) {
	r, err := newRate(n, window)
	if err != nil {
		return nil, err
	}
	return &Redis{client: client, prefix: prefix, rate: r, cfg: newConfig(opts)}, nil
}

// ErrUnavailable wraps a Redis failure (the request was refused).
type ErrUnavailable struct{ Err error }

func (e *ErrUnavailable) Error() string { return "rate limiter unavailable: " + e.Err.Error() }
func (e *ErrUnavailable) Unwrap() error { return e.Err }

// FailClosedRetry is a random retry for a refusal made without Redis.
func FailClosedRetry() time.Duration {
	return time.Second + time.Duration(rand.Int64N(int64(4*time.Second)))
}

// incrScript counts a request in a window's key; the key outlives its
// window by a second (clock skew between instances), then Redis drops it.
var incrScript = redis.NewScript(`
local n = redis.call("INCR", KEYS[1])
if n == 1 then redis.call("PEXPIRE", KEYS[1], ARGV[1]) end
return n
`)

// Allow counts one request for key in the current window.
func (r *Redis) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	window, left := r.rate.at(r.cfg.clock.Now())
	k := r.prefix + ":" + key + ":" + strconv.FormatInt(window, 10)
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	n, err := incrScript.Run(ctx, r.client, []string{k}, r.rate.window+1000).Int64()
	if err != nil {
		return false, FailClosedRetry(), &ErrUnavailable{Err: err}
	}
	if n > r.rate.n {
		return false, left, nil
	}
	return true, 0, nil
}

// Ping reports whether Redis answers now (for /health): nil, or an
// *ErrUnavailable.
func (r *Redis) Ping(ctx context.Context) error {
	if err := r.client.Ping(ctx).Err(); err != nil {
		return &ErrUnavailable{Err: err}
	}
	return nil
}
