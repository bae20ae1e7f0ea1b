package main

import (
	"context"
	"testing"
)

// --rate-limit N/m admits exactly N immediate calls, like --preauth-limit.
func TestRateLimitFlagExact(t *testing.T) {
	f := storeFlags{rateLimit: "3/m"}
	l, err := f.limiter(nil)
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for range 10 {
		if ok, _, _ := l.Allow(context.Background(), "k"); ok {
			admitted++
		}
	}
	if admitted != 3 {
		t.Fatalf("--rate-limit 3/m admitted %d of 10 immediate calls", admitted)
	}
}
