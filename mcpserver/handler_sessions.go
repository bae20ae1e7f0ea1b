package mcpserver

// The handler's session bindings: which principal owns each Streamable
// HTTP session, the calls in flight in it, and its end.

// bind records a new session's owner (with its creating request in
// flight; it takes the principal's reservation), and starts watching for
// the SDK to close the session (DELETE, idle expiry, shutdown) to forget
// it.
func (h *handler) bind(id, principal string) {
	h.mu.Lock()
	s := &session{id: id, principal: principal, active: 1}
	h.sessions[id] = s
	o := h.owners[principal]
	o.pending--
	o.sessions[id] = s
	h.mu.Unlock()
	for ss := range h.srv.mcp.Sessions() {
		if ss.ID() == id {
			go func() {
				_ = ss.Wait()
				h.forget(id)
			}()
			return
		}
	}
	// The SDK no longer holds it (it closed already): do not keep it.
	h.forget(id)
}

func (h *handler) forget(id string) {
	h.mu.Lock()
	var run []func()
	if s := h.sessions[id]; s != nil {
		run = s.afterCalls
		h.unbindLocked(s)
	}
	h.mu.Unlock()
	for _, f := range run {
		f()
	}
	h.srv.live.release(id) // at once, rather than at the next sweep
}

// unbindLocked forgets session s: its binding, its idle timer, and its
// place in its principal's share.
func (h *handler) unbindLocked(s *session) {
	if s.idle != nil {
		s.idle.Stop()
	}
	delete(h.sessions, s.id)
	o := h.owners[s.principal]
	delete(o.sessions, s.id)
	h.dropOwnerLocked(s.principal, o)
}

// enter counts a request of session id in flight (its idle timer stops),
// provided principal owns the session.
func (h *handler) enter(id, principal string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil || s.principal != principal {
		return false
	}
	s.active++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	return true
}

// leave ends a request of session id; the last one starts the idle timer.
func (h *handler) leave(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.sessions[id]
	if s == nil {
		return
	}
	if s.active--; s.active == 0 {
		s.idleSince = h.clock.Now()
		s.idle = h.clock.AfterFunc(h.idleTimeout(s), func() { h.expire(id, s) })
	}
}

// calling counts the POSTs holding calls of session id in flight; when
// the last one has been answered, what waits for that (afterCalls) runs.
func (h *handler) calling(id string, delta int) {
	h.mu.Lock()
	s := h.sessions[id]
	if s == nil {
		h.mu.Unlock()
		return
	}
	s.calling += delta
	var run []func()
	if s.calling == 0 {
		run, s.afterCalls = s.afterCalls, nil
	}
	h.mu.Unlock()
	for _, f := range run {
		f()
	}
}

// afterCalls runs f once session id has no POST holding calls in flight:
// at once, or when the last one has been answered.
func (h *handler) afterCalls(id string, f func()) {
	h.mu.Lock()
	if s := h.sessions[id]; s != nil && s.calling > 0 {
		s.afterCalls = append(s.afterCalls, f)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	f()
}

// expire closes session id, idle for its timeout: what still runs in
// it (calls whose client left) is cancelled, then the SDK closes it.
func (h *handler) expire(id string, s *session) {
	h.mu.Lock()
	current := h.sessions[id] == s && s.active == 0
	h.mu.Unlock()
	if !current { // a request came in meanwhile
		return
	}
	h.closeSession(id)
}

// closeSession cancels what still runs in session id, then has the SDK
// close it (bind's watcher then forgets it).
func (h *handler) closeSession(id string) {
	h.srv.calls.cancelSession(id)
	if ss := h.srv.session(id); ss != nil {
		go ss.Close() // returns once its handlers did
		return
	}
	h.forget(id)
}

// boundSessions returns how many session bindings the handler holds.
func (h *handler) boundSessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}
