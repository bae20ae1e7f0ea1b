package mcpserver

import (
	"context"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// calls tracks the requests the server is working on: by session, so that
// ending a session (DELETE, idle expiry) stops its work instead of waiting
// for it, and all together, so that Shutdown can wait for them and then
// cancel what is left. Every way a request can end early reaches its
// context, and through it the database: the client's
// notifications/cancelled (the SDK), the client closing the HTTP
// connection that carried it (watch), the session ending (cancelSession),
// and shutdown (cancelAll).
type calls struct {
	mu        sync.Mutex
	closing   bool
	running   map[*call]struct{}
	bySession map[string]map[*call]struct{}
	drained   chan struct{} // closed when running empties while closing
}

type call struct {
	session string
	cancel  context.CancelFunc
}

func newCalls() *calls {
	return &calls{running: map[*call]struct{}{}, bySession: map[string]map[*call]struct{}{}}
}

// start registers a request of session (may be "") whose context cancel
// cancels. It returns false when the server is shutting down; otherwise
// end must be called when the request returns.
func (c *calls) start(session string, cancel context.CancelFunc) (end func(), ok bool) {
	k := &call{session: session, cancel: cancel}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return nil, false
	}
	c.running[k] = struct{}{}
	if session != "" {
		m := c.bySession[session]
		if m == nil {
			m = map[*call]struct{}{}
			c.bySession[session] = m
		}
		m[k] = struct{}{}
	}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.running, k)
		if m := c.bySession[session]; m != nil {
			delete(m, k)
			if len(m) == 0 {
				delete(c.bySession, session)
			}
		}
		if len(c.running) == 0 && c.drained != nil {
			close(c.drained)
			c.drained = nil
		}
	}, true
}

// cancelSession cancels every request running in session id and returns
// how many there were.
func (c *calls) cancelSession(id string) int {
	c.mu.Lock()
	var cancels []context.CancelFunc
	for k := range c.bySession[id] {
		cancels = append(cancels, k.cancel)
	}
	c.mu.Unlock()
	for _, f := range cancels {
		f()
	}
	return len(cancels)
}

// cancelAll cancels every running request.
func (c *calls) cancelAll() {
	c.mu.Lock()
	var cancels []context.CancelFunc
	for k := range c.running {
		cancels = append(cancels, k.cancel)
	}
	c.mu.Unlock()
	for _, f := range cancels {
		f()
	}
}

// close stops admitting requests and waits until none runs or ctx ends.
func (c *calls) close(ctx context.Context) error {
	c.mu.Lock()
	c.closing = true
	if len(c.running) == 0 {
		c.mu.Unlock()
		return nil
	}
	if c.drained == nil {
		c.drained = make(chan struct{})
	}
	drained := c.drained
	c.mu.Unlock()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// count returns how many requests are running.
func (c *calls) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.running)
}

// trackCalls is the receiving middleware that registers each request that
// acts for an agent (tool calls, reads, prompts, completions, …) with the
// server's calls, and ties its context to the HTTP request that carried
// it: a client that closes that connection will never read the answer,
// so its work stops. A subscriptions/listen stays open until the client
// leaves; it is tied to its connection too, and ends as soon as Shutdown
// starts (holdListener), which does not wait for it.
func (s *Server) trackCalls(next Handler) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		if !needsAgent(r.Method) {
			return next(ctx, r)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if res, ok := resolvedFrom(r.Params.GetExtra()); ok && res.conn != nil {
			stop := context.AfterFunc(res.conn, func() {
				if r.Method != "subscriptions/listen" { // a listener's client leaving is its normal end
					s.metrics.abandoned.Inc()
				}
				cancel()
			})
			defer stop()
		}
		if r.Method == "subscriptions/listen" {
			lctx, end, ok := s.holdListener(ctx, nil)
			if !ok {
				return nil, errShuttingDown()
			}
			defer end()
			ctx = lctx
		} else {
			session := ""
			if ss, ok := r.Params.GetSession().(*mcp.ServerSession); ok && ss != nil {
				session = ss.ID()
			}
			end, ok := s.calls.start(session, cancel)
			if !ok {
				return nil, errShuttingDown()
			}
			defer end()
		}
		return next(ctx, r)
	}
}
