// Package ratelimit holds the limiters: a local token bucket per key, and a
// Redis-shared one for several server instances that fails closed.
package ratelimit

import (
	"context"
	"time"
)

// Limiter decides whether key may make one more request now. When it may
// not, retryAfter says when to try again. An error means the limiter could
// not decide; a fail-closed limiter reports that as a refusal instead.
type Limiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}
