package tools

import "context"

// ProgressFunc receives a tool's own progress reports (see ReportProgress).
type ProgressFunc func(progress, total float64, message string)

type progressKey struct{}

// WithProgress returns a context whose ReportProgress calls reach fn. The
// MCP server installs one per tool call that carries a progress token.
func WithProgress(ctx context.Context, fn ProgressFunc) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ReportProgress tells the client how far a long tool call has come:
// progress counts the work done so far (rows exported, pages read), total
// is the work expected (0 when unknown). Values should start at 1 and grow
// with each report: the first report stops the server's heartbeats, and a
// report that does not advance past the last value sent is dropped, so
// the client always sees increasing progress. Without a progress token on
// the call it does nothing.
func ReportProgress(ctx context.Context, progress, total float64, message string) {
	if fn, ok := ctx.Value(progressKey{}).(ProgressFunc); ok && fn != nil {
		fn(progress, total, message)
	}
}

// Approval describes a destructive change to be approved by a human
// before it runs.
type Approval struct {
	// Tool is the tool asking (delete_object, call_method, …).
	Tool string
	// Summary says, in one or two sentences a person can judge, what will
	// happen if the change is approved.
	Summary string
}

// ApproveFunc asks for a human's approval of a destructive change. It
// returns nil when the change was approved, and a context the caller
// continues with (the time spent waiting for the person does not count
// against the tool's time limit). A refusal is an *Error with code
// approval_denied; nothing may be written after one.
type ApproveFunc func(ctx context.Context, a Approval) (context.Context, error)

// approve asks for approval through the call's hook; without one (tools
// run directly by the operator's own code) the change is approved.
func (c *Call) approve(ctx context.Context, a Approval) (context.Context, error) {
	if c.Approve == nil {
		return ctx, nil
	}
	return c.Approve(ctx, a)
}
