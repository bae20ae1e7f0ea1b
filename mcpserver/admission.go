package mcpserver

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Admission defaults.
const (
	// DefaultMaxInFlight bounds the requests one principal has in flight.
	// It stays below the default database pools (PostgreSQL 20, SQLite
	// 16), so one agent's slow queries cannot hold every connection
	// (CheckPoolShare).
	DefaultMaxInFlight = 8
	// DefaultAdmissionWait is how long a request over a cap waits for a
	// slot before it is refused.
	DefaultAdmissionWait = 5 * time.Second
	// RetryAfterBusy is the Retry-After (seconds) of a refusal for a cap.
	RetryAfterBusy = 2
)

// CheckPoolShare is the rule that keeps one principal from taking every
// database connection: a request holds at most one connection at a time,
// and a principal has at most maxInFlight requests in flight, so a pool of
// poolSize connections must hold more than maxInFlight for another
// principal's call to find one while the first principal's slow queries
// run. A poolSize of 0 (unknown) passes.
func CheckPoolShare(maxInFlight, poolSize int) error {
	if maxInFlight <= 0 {
		maxInFlight = DefaultMaxInFlight
	}
	if poolSize > 0 && maxInFlight >= poolSize {
		return fmt.Errorf("one principal may have %d requests in flight, and the database pool holds %d connections: its slow queries could hold them all; keep the per-principal cap below the pool (lower --max-inflight or raise --db-max-conns)", maxInFlight, poolSize)
	}
	return nil
}

// CheckListenerShare is the rule that keeps one principal from taking
// every listening stream: a principal holds at most perPrincipal of them
// (GET streams and subscriptions/listen requests), so the server's cap,
// maxListeners, must hold more than that for another principal's stream
// to be accepted while the first holds its share. Keep perPrincipal well
// below it: the default is a tenth (DefaultListenerShare).
func CheckListenerShare(perPrincipal, maxListeners int) error {
	if maxListeners <= 0 {
		maxListeners = DefaultMaxListeners
	}
	if perPrincipal <= 0 {
		perPrincipal = DefaultListenerShare(maxListeners)
	}
	if perPrincipal >= maxListeners {
		return fmt.Errorf("one principal may hold %d listening streams, and the server holds %d: it could take them all, and another principal would never hear a notification; keep the per-principal cap below the server's (lower --max-listeners-per-principal or raise --max-listeners)", perPrincipal, maxListeners)
	}
	return nil
}

// DefaultListenerShare is the default per-principal cap on listening
// streams: a tenth of the server's (at least 1).
func DefaultListenerShare(maxListeners int) int { return max(1, maxListeners/10) }

// CodeRateLimited is the JSON-RPC error code of a request refused because
// its principal has too many requests in flight (HTTP 429).
const CodeRateLimited = -32029

// gate is a counting semaphore whose waiters are served in arrival order
// (a channel's blocked senders are), each for a bounded time.
type gate struct{ slots chan struct{} }

func newGate(n int) *gate { return &gate{slots: make(chan struct{}, n)} }

// acquire takes a slot, waiting up to wait (0: not at all) or until ctx
// ends; false means no slot was taken.
func (g *gate) acquire(ctx context.Context, clock clockwork.Clock, wait time.Duration) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	if wait <= 0 {
		return false
	}
	t := clock.NewTimer(wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.Chan():
	case <-ctx.Done():
	}
	return false
}

func (g *gate) release() { <-g.slots }

// admission holds the caps of one handler: requests in flight per
// principal, event streams and listening streams in all.
type admission struct {
	opts  HTTPOptions
	clock clockwork.Clock

	streams, listeners *gate

	mu         sync.Mutex
	principals map[string]*principalGate
}

type principalGate struct {
	*gate
	users     int // requests holding or waiting for a slot, and open listening streams
	listeners int // open listening streams
}

func newAdmission(opts HTTPOptions, clock clockwork.Clock) *admission {
	return &admission{opts: opts, clock: clock, streams: newGate(opts.MaxStreams), listeners: newGate(opts.MaxListeners),
		principals: map[string]*principalGate{}}
}

// ticket is what one HTTP request holds; release gives all of it back.
type ticket struct {
	a         *admission
	principal string
	held      int // per-principal slots
	stream    bool
	listener  bool
	mu        sync.Mutex
}

// releaseStream gives the event-stream slot back early: a call that waits
// for a person's approval keeps its per-principal slot (a client that
// parks approvals blocks only itself) but does not hold the server's.
func (t *ticket) releaseStream() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stream {
		t.stream = false
		t.a.streams.release()
	}
}

func (t *ticket) release() {
	t.releaseStream()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.listener {
		t.listener = false
		t.a.listeners.release()
		t.a.unlisten(t.principal)
	}
	if t.held > 0 {
		t.a.leave(t.principal, t.held)
		t.held = 0
	}
}

// principal returns principal's gate, counting one more user.
func (a *admission) principal(key string) *principalGate {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.principalLocked(key)
}

func (a *admission) principalLocked(key string) *principalGate {
	p := a.principals[key]
	if p == nil {
		p = &principalGate{gate: newGate(a.opts.MaxInFlight)}
		a.principals[key] = p
	}
	p.users++
	return p
}

// leave gives back n slots of principal and forgets an unused gate.
func (a *admission) leave(key string, n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.principals[key]
	for range n {
		p.release()
	}
	a.forgetLocked(key, p)
}

// forgetLocked counts one user of principal's gate less, and forgets the
// gate when it has none.
func (a *admission) forgetLocked(key string, p *principalGate) {
	if p.users--; p.users == 0 {
		delete(a.principals, key)
	}
}

// listen counts one more listening stream of principal, unless it holds
// MaxListenersPerPrincipal already.
func (a *admission) listen(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.principalLocked(key)
	if p.listeners >= a.opts.MaxListenersPerPrincipal {
		a.forgetLocked(key, p)
		return false
	}
	p.listeners++
	return true
}

// unlisten counts one listening stream of principal less.
func (a *admission) unlisten(key string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.principals[key]
	p.listeners--
	a.forgetLocked(key, p)
}

// admitCalls admits a POST carrying calls (requests with an id) of
// principal: calls slots of the principal's MaxInFlight (429 past it),
// then an event-stream slot (503 past MaxStreams), each waited for up to
// AdmissionWait. A refusal is answered here (with Retry-After) and nil
// returned.
func (a *admission) admitCalls(w http.ResponseWriter, r *http.Request, id []byte, principal string, calls int) *ticket {
	t := &ticket{a: a, principal: principal}
	p := a.principal(principal)
	deadline := a.clock.Now().Add(a.opts.AdmissionWait)
	for t.held < calls {
		if calls > a.opts.MaxInFlight || !p.acquire(r.Context(), a.clock, deadline.Sub(a.clock.Now())) {
			a.leave(principal, t.held)
			refuse(w, http.StatusTooManyRequests, id, CodeRateLimited, "too many requests in flight for this principal", "rate_limited")
			return nil
		}
		t.held++
	}
	if !a.streams.acquire(r.Context(), a.clock, deadline.Sub(a.clock.Now())) {
		a.leave(principal, t.held)
		refuse(w, http.StatusServiceUnavailable, id, CodeServerBusy, "server busy", "busy")
		return nil
	}
	t.stream = true
	return t
}

// admitListener admits a listening stream (a GET, or a
// subscriptions/listen) of principal: one of its MaxListenersPerPrincipal
// (429 past it), then one of the server's MaxListeners (503 past it). It
// stays open, so there is no point waiting for one to end.
func (a *admission) admitListener(w http.ResponseWriter, id []byte, principal string) *ticket {
	if !a.listen(principal) {
		refuse(w, http.StatusTooManyRequests, id, CodeRateLimited, "too many listening streams for this principal", "rate_limited")
		return nil
	}
	if !a.listeners.acquire(context.Background(), a.clock, 0) {
		a.unlisten(principal)
		refuse(w, http.StatusServiceUnavailable, id, CodeServerBusy, "server busy", "busy")
		return nil
	}
	return &ticket{a: a, principal: principal, listener: true}
}

// refuse answers a request refused for a cap: the status, Retry-After,
// and a JSON-RPC error whose data carries retry_after and error_code.
func refuse(w http.ResponseWriter, status int, id []byte, code int, msg, errorCode string) {
	w.Header().Set("Retry-After", strconv.Itoa(RetryAfterBusy))
	rpcErrorData(w, status, id, code, msg, map[string]any{"retry_after": RetryAfterBusy, "error_code": errorCode})
}
