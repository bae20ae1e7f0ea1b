package mcpserver

import (
	"context"
	"errors"
	"time"

	"github.com/jonboulle/clockwork"
)

// timing measures the server's own time limits (the tools' limits, the
// approval timeout, the age of a signed approval state). With no clock it
// is the real clock, and a limit is the context package's own deadline;
// with a clock (tests pass a fake one) a limit ends when the clock says.
type timing struct {
	clock clockwork.Clock // nil: the real clock
}

func (tm timing) now() time.Time {
	if tm.clock == nil {
		return time.Now()
	}
	return tm.clock.Now()
}

func (tm timing) since(t time.Time) time.Duration { return tm.now().Sub(t) }

// withTimeout is context.WithTimeout measured on the clock.
func (tm timing) withTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if tm.clock == nil {
		return context.WithTimeout(parent, d)
	}
	// clockwork.WithTimeout is not used: its context's Err blocks until
	// the context ends (the database drivers call Err on live contexts).
	ctx, cancel := context.WithCancelCause(parent)
	timer := tm.clock.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return &clockContext{ctx}, func() { timer.Stop(); cancel(context.Canceled) }
}

// clockContext ends when its clock's timer fires; Err then reports
// context.DeadlineExceeded, as a deadline context does. Its Deadline is
// the parent's: a limit on a fake clock is no instant of real time (a
// dialer given one would give up at once or never).
type clockContext struct {
	context.Context
}

func (c *clockContext) Err() error {
	err := c.Context.Err()
	if err != nil && errors.Is(context.Cause(c.Context), context.DeadlineExceeded) {
		return context.DeadlineExceeded
	}
	return err
}
