package mcpserver

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DefaultShutdownGrace is how long Close lets running calls finish before
// it cancels them.
const DefaultShutdownGrace = 10 * time.Second

// CodeShuttingDown is the JSON-RPC error code of a request refused because
// the server is shutting down.
const CodeShuttingDown = -32002

// errShuttingDown refuses a request once Shutdown has started.
func errShuttingDown() error {
	return &jsonrpc.Error{Code: CodeShuttingDown, Message: "server shutting down"}
}

// holdListener registers a listening stream: a session's GET stream, or
// a subscriptions/listen request. The context it returns ends with ctx, or
// when Shutdown starts, which ends the stream with a clean close so that
// its client connects again (behind a load balancer, to another instance)
// instead of hearing nothing for the grace period. When after is not nil,
// the stream ends only once after calls its argument: a session's GET
// stream waits for the session's calls in flight to be answered, because
// a client whose GET stream cannot be resumed ends its session (the Go
// SDK's does), failing the calls it still waits for. end must be called
// when the stream ends. ok is false once Shutdown has started: the stream
// is refused.
func (s *Server) holdListener(ctx context.Context, after func(close func())) (_ context.Context, end func(), ok bool) {
	if s.draining.Err() != nil {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancel(ctx)
	if after == nil {
		after = func(close func()) { close() }
	}
	stop := context.AfterFunc(s.draining, func() { after(cancel) })
	s.listening.Add(1)
	return ctx, func() {
		stop()
		cancel()
		s.listening.Add(-1)
	}, true
}

// Close is Shutdown with DefaultShutdownGrace.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultShutdownGrace)
	defer cancel()
	_ = s.Shutdown(ctx)
}

// Shutdown stops the server. At once, every listening stream ends (a clean
// close: its client reconnects, elsewhere behind a load balancer) and new
// requests and streams are refused (JSON-RPC CodeShuttingDown); running
// calls may finish until ctx ends, then the rest are cancelled (their
// database statements stop) and waited for, and finally subscriptions and
// registries are released. It logs a line when it starts (sessions,
// streams and calls in flight) and one when it is done (how long it took,
// what was cut). When Shutdown returns no call is running, so the audit
// sink and the store can be closed. It returns ctx's error when calls had
// to be cancelled.
func (s *Server) Shutdown(ctx context.Context) error {
	s.closeOnce.Do(func() {
		start := time.Now()
		sessions := 0
		for range s.mcp.Sessions() {
			sessions++
		}
		streams, inFlight := s.listening.Load(), s.calls.count()
		s.log.Info("shutting down", "sessions", sessions, "streams", streams, "calls_in_flight", inFlight)
		s.stopDraining()
		s.closeErr = s.calls.close(ctx)
		cancelled := 0
		if s.closeErr != nil {
			cancelled = s.calls.count()
			s.calls.cancelAll()
			// Cancelled calls return promptly; the bound only guards
			// against a handler that ignores its context.
			wait, cancel := context.WithTimeout(context.Background(), DefaultShutdownGrace)
			if err := s.calls.close(wait); err != nil {
				s.log.Error("shutdown: calls still running after cancellation", "calls", s.calls.count())
			}
			cancel()
		}
		for _, f := range s.unsubscribe {
			f()
		}
		s.live.close()
		s.log.Info("shutdown complete", "took", time.Since(start).Round(time.Millisecond), "streams_closed", streams, "calls_cancelled", cancelled)
	})
	return s.closeErr
}
