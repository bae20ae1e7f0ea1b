package mcpserver

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Release of the sessions that ended: the janitor goroutine, its sweep of
// the sessions the SDK no longer holds, and the release of what a session
// holds.

// sweepInterval is how often sessions that ended (disconnect, DELETE, idle
// timeout, the end of a stateless request) are looked for and released.
const sweepInterval = time.Second

// janitor releases the subscriptions of sessions that have ended
// (disconnect, DELETE, idle timeout, the end of a stateless request): one
// goroutine for every session, instead of one per session. It also gives
// up on sends that take too long (unstick).
func (l *live) janitor() {
	defer l.wg.Done()
	t := time.NewTicker(max(time.Millisecond, min(sweepInterval, l.sendTimeout/4)))
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-l.done:
			return
		case now := <-t.C:
			l.unstick()
			if now.Sub(last) >= sweepInterval {
				l.sweep()
				last = now
			}
		}
	}
}

// sweep releases the sessions the SDK no longer holds. The candidates are
// read before the SDK's list, so a session that subscribes meanwhile is
// not among them.
func (l *live) sweep() {
	l.mu.RLock()
	candidates := make([]*liveSession, 0, len(l.sessions))
	for _, ls := range l.sessions {
		candidates = append(candidates, ls)
	}
	l.mu.RUnlock()
	if len(candidates) == 0 {
		return
	}
	alive := make(map[*mcp.ServerSession]struct{}, len(candidates))
	for ss := range l.srv.mcp.Sessions() {
		alive[ss] = struct{}{}
	}
	for _, ls := range candidates {
		if _, ok := alive[ls.ss]; !ok {
			l.releaseSession(ls)
		}
	}
}

// release drops everything the session sid holds.
func (l *live) release(sid string) {
	l.mu.RLock()
	ls := l.sessions[sid]
	l.mu.RUnlock()
	if ls != nil {
		l.releaseSession(ls)
	}
}

// releaseSession drops everything ls holds, if it is still the session's
// record.
func (l *live) releaseSession(ls *liveSession) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions[ls.sid] != ls {
		return
	}
	ls.released.Store(true)
	l.index.RemoveSession(ls.sid)
	for _, g := range ls.groups {
		l.leave(g, ls)
	}
	ls.groups = nil
	delete(l.sessions, ls.sid)
}
