package mcpserver

import "time"

// Session defaults.
const (
	// DefaultMaxSessionsPerPrincipal bounds the sessions one principal
	// holds. A session costs about 10 KB of memory and two goroutines for
	// as long as it lives.
	DefaultMaxSessionsPerPrincipal = 100
	// DefaultStreamlessSessionTimeout is how long a session that never
	// opened a listening stream may stay idle.
	DefaultStreamlessSessionTimeout = 5 * time.Minute
)

// owned is a principal's share of the sessions: those bound to it, and
// those being created (an initialize in flight).
type owned struct {
	pending  int
	sessions map[string]*session
}

// reserve makes room for a new session of principal: under
// MaxSessionsPerPrincipal it is counted at once; at the cap the
// principal's longest-idle session (no request in flight, no listening
// stream) is closed to make room. False: every session of the principal
// is busy, and the new one is refused.
func (h *handler) reserve(principal string) bool {
	h.mu.Lock()
	o := h.owners[principal]
	if o == nil {
		o = &owned{sessions: map[string]*session{}}
		h.owners[principal] = o
	}
	if o.pending+len(o.sessions) < h.opts.MaxSessionsPerPrincipal {
		o.pending++
		h.mu.Unlock()
		return true
	}
	var victim *session
	for _, s := range o.sessions {
		if s.active == 0 && (victim == nil || s.idleSince.Before(victim.idleSince)) {
			victim = s
		}
	}
	if victim == nil {
		h.dropOwnerLocked(principal, o)
		h.mu.Unlock()
		return false
	}
	// Unbound at once: its requests from now on get 404, and its place
	// is the new session's.
	o.pending++
	h.unbindLocked(victim)
	h.mu.Unlock()
	h.srv.log.Debug("session closed for a new one of its principal", "session", victim.id)
	h.closeSession(victim.id)
	return true
}

// unreserve gives back a reservation no session took (the request
// failed before one was created).
func (h *handler) unreserve(principal string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	o := h.owners[principal]
	o.pending--
	h.dropOwnerLocked(principal, o)
}

// dropOwnerLocked forgets an empty share.
func (h *handler) dropOwnerLocked(principal string, o *owned) {
	if o.pending == 0 && len(o.sessions) == 0 {
		delete(h.owners, principal)
	}
}

// listening records that session id opened a listening stream.
func (h *handler) listening(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.sessions[id]; s != nil {
		s.listened = true
	}
}

// idleTimeout is how long session s may stay idle: SessionTimeout once it
// has opened a listening stream (its client means to hear
// notifications), StreamlessSessionTimeout before.
func (h *handler) idleTimeout(s *session) time.Duration {
	if s.listened {
		return h.opts.SessionTimeout
	}
	return h.opts.StreamlessSessionTimeout
}
