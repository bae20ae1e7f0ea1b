package mcpserver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// A limit on a fake clock ends when the clock passes it, not before; Err
// answers at once while the context lives (database drivers ask), and
// reports a deadline, a cancellation or the parent's end as the context
// package would. It reports no real-time deadline.
func TestTimingFakeClock(t *testing.T) {
	clock := clockwork.NewFakeClock()
	tm := timing{clock}
	ctx, cancel := tm.withTimeout(context.Background(), time.Minute)
	defer cancel()
	if d, ok := ctx.Deadline(); ok {
		t.Fatalf("a fake clock's limit reported as the real deadline %v", d)
	}
	clock.Advance(time.Minute - time.Nanosecond)
	if err := ctx.Err(); err != nil {
		t.Fatalf("ended before its limit: %v", err)
	}
	clock.Advance(time.Nanosecond)
	<-ctx.Done() // the fake clock ran the timer in Advance
	if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("after the limit: %v", err)
	}
	if tm.since(clock.Now().Add(-time.Second)) != time.Second {
		t.Fatal("since")
	}

	c2, cancel2 := tm.withTimeout(context.Background(), time.Minute)
	cancel2()
	if err := c2.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	parent, end := context.WithCancel(context.Background())
	c3, cancel3 := tm.withTimeout(parent, time.Minute)
	defer cancel3()
	end()
	<-c3.Done()
	if err := c3.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("parent ended: %v", err)
	}
	if clock.Advance(time.Hour); c3.Err() != context.Canceled {
		t.Fatal("a later expiry changed the reason")
	}
}
