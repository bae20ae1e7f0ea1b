// Package redistest gives tests a client of the local Redis
// (PARSEMCP_TEST_REDIS, default 127.0.0.1:6379) and a way to cut a
// client's pub/sub connection. Without a reachable Redis the tests skip,
// except in CI (CI=true), where they fail.
package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Addr is the address of the Redis the tests use.
func Addr() string {
	if a := os.Getenv("PARSEMCP_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// Client returns a client of the test Redis, closed when the test ends.
// name, when not empty, is its CLIENT SETNAME (so the test can find its
// connections in CLIENT LIST).
func Client(t testing.TB, name string) *redis.Client {
	t.Helper()
	addr := Addr()
	c := redis.NewClient(&redis.Options{Addr: addr, ClientName: name})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI requires Redis at %s: %v", addr, err)
		}
		t.Skipf("Redis not reachable at %s (%v); start it or set PARSEMCP_TEST_REDIS", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Name returns prefix followed by a random suffix: a client name, channel
// or key prefix no other test uses.
func Name(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// KillPubSub drops the pub/sub connections of the client named name, as a
// Redis restart or a network cut would (CLIENT KILL … TYPE pubsub, limited
// to that client so other users of this Redis are not disturbed). It
// returns how many it killed.
func KillPubSub(t testing.TB, admin *redis.Client, name string) int {
	t.Helper()
	ctx := context.Background()
	list, err := admin.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for line := range strings.Lines(list) {
		f := map[string]string{}
		for kv := range strings.FieldsSeq(line) {
			if k, v, ok := strings.Cut(kv, "="); ok {
				f[k] = v
			}
		}
		if f["name"] != name || f["sub"] == "0" {
			continue
		}
		n, err := admin.ClientKillByFilter(ctx, "ID", f["id"], "TYPE", "pubsub").Result()
		if err != nil {
			t.Fatal(err)
		}
		killed += int(n)
	}
	return killed
}
