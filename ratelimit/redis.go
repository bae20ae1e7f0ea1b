package ratelimit

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

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
