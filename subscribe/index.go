package subscribe

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Default limits of an Index.
const (
	DefaultPerSession = 100
	DefaultSessions   = 10_000
)

// Limits caps an Index. Zero takes the default; a negative value means no
// limit.
type Limits struct {
	// PerSession is the most URIs one session may subscribe to (default
	// DefaultPerSession).
	PerSession int
	// Sessions is the most distinct sessions that may hold at least one
	// subscription at once (default DefaultSessions). A session that holds
	// none does not count.
	Sessions int
}

func (l Limits) withDefaults() Limits {
	if l.PerSession == 0 {
		l.PerSession = DefaultPerSession
	}
	if l.Sessions == 0 {
		l.Sessions = DefaultSessions
	}
	return l
}

// Errors returned by Index.Subscribe. The limit errors come wrapped in a
// *LimitError that names the limit; test them with errors.Is.
var (
	ErrTooManySubscriptions = errors.New("too many resource subscriptions for this session")
	ErrTooManySessions      = errors.New("too many sessions holding resource subscriptions")
	ErrEmpty                = errors.New("subscribe: empty session id or uri")
)

// LimitError is a refused subscription: Err is ErrTooManySubscriptions or
// ErrTooManySessions and Limit the cap that was reached.
type LimitError struct {
	Err   error
	Limit int
}

func (e *LimitError) Error() string {
	switch e.Err {
	case ErrTooManySubscriptions:
		return fmt.Sprintf("%v: the limit is %d per session; unsubscribe from another resource first", e.Err, e.Limit)
	case ErrTooManySessions:
		return fmt.Sprintf("%v: the server allows %d sessions with subscriptions at once; try again later", e.Err, e.Limit)
	}
	return fmt.Sprintf("%v (limit %d)", e.Err, e.Limit)
}

func (e *LimitError) Unwrap() error { return e.Err }

// Index is the bidirectional subscription index: URI → sessions and
// session → URIs. Every operation is O(1) in the number of sessions and
// URIs (RemoveSession is O(URIs of that session)). It is safe for
// concurrent use; one RWMutex guards it (lookups share it).
//
// Each URI and session id is stored once (cloned on first use, so it does
// not pin a request buffer); the two directions point at each other's
// entries, so the sets are maps of pointers to empty structs.
type Index struct {
	lim Limits

	mu        sync.RWMutex
	byURI     map[string]*uriEntry
	bySession map[string]*sessionEntry
	subs      int
}

type uriEntry struct {
	uri  string
	subs map[*sessionEntry]struct{}
}

type sessionEntry struct {
	id   string
	uris map[*uriEntry]struct{}
}

// NewIndex returns an empty Index with the limits l (zero fields take the
// defaults).
func NewIndex(l Limits) *Index {
	return &Index{
		lim:       l.withDefaults(),
		byURI:     make(map[string]*uriEntry),
		bySession: make(map[string]*sessionEntry),
	}
}

// Limits returns the index's effective limits.
func (x *Index) Limits() Limits { return x.lim }

// Subscribe records that session subscribes to uri. It is idempotent: a
// subscription already held succeeds even at the cap. It fails with a
// *LimitError wrapping ErrTooManySubscriptions when the session already
// holds PerSession URIs, or ErrTooManySessions when session holds nothing
// yet and Sessions sessions already hold subscriptions; with ErrEmpty for
// an empty session or uri.
func (x *Index) Subscribe(session, uri string) error {
	if session == "" || uri == "" {
		return ErrEmpty
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	u := x.byURI[uri]
	s := x.bySession[session]
	if s != nil {
		if u != nil {
			if _, ok := s.uris[u]; ok {
				return nil
			}
		}
		if x.lim.PerSession > 0 && len(s.uris) >= x.lim.PerSession {
			return &LimitError{Err: ErrTooManySubscriptions, Limit: x.lim.PerSession}
		}
	} else {
		if x.lim.Sessions > 0 && len(x.bySession) >= x.lim.Sessions {
			return &LimitError{Err: ErrTooManySessions, Limit: x.lim.Sessions}
		}
		s = &sessionEntry{id: strings.Clone(session), uris: make(map[*uriEntry]struct{}, 1)}
		x.bySession[s.id] = s
	}
	if u == nil {
		u = &uriEntry{uri: strings.Clone(uri), subs: make(map[*sessionEntry]struct{}, 1)}
		x.byURI[u.uri] = u
	}
	s.uris[u] = struct{}{}
	u.subs[s] = struct{}{}
	x.subs++
	return nil
}

// Unsubscribe removes one subscription and reports whether it existed. A
// session left without subscriptions no longer counts toward
// Limits.Sessions.
func (x *Index) Unsubscribe(session, uri string) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	s, u := x.bySession[session], x.byURI[uri]
	if s == nil || u == nil {
		return false
	}
	if _, ok := s.uris[u]; !ok {
		return false
	}
	delete(s.uris, u)
	if len(s.uris) == 0 {
		delete(x.bySession, s.id)
	}
	x.unlink(u, s)
	return true
}

// unlink removes s from u's subscribers (dropping u when it has none left)
// and counts one subscription less. The caller holds x.mu and has removed
// u from s.uris (or is dropping s).
func (x *Index) unlink(u *uriEntry, s *sessionEntry) {
	delete(u.subs, s)
	if len(u.subs) == 0 {
		delete(x.byURI, u.uri)
	}
	x.subs--
}

// RemoveSession drops every subscription of session (it disconnected) and
// returns the URIs it held, sorted; nil when it held none.
func (x *Index) RemoveSession(session string) []string {
	x.mu.Lock()
	s := x.bySession[session]
	if s == nil {
		x.mu.Unlock()
		return nil
	}
	delete(x.bySession, session)
	out := make([]string, 0, len(s.uris))
	for u := range s.uris {
		out = append(out, u.uri)
		x.unlink(u, s)
	}
	x.mu.Unlock()
	slices.Sort(out)
	return out
}

// Prune drops every subscription of session. It is RemoveSession for the
// delivery path: call it when sending a notification to session failed.
func (x *Index) Prune(session string) { x.RemoveSession(session) }

// Sessions returns the sessions subscribed to uri, in no particular order
// (a copy; nil when none).
func (x *Index) Sessions(uri string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	u := x.byURI[uri]
	if u == nil {
		return nil
	}
	out := make([]string, 0, len(u.subs))
	for s := range u.subs {
		out = append(out, s.id)
	}
	return out
}

// URIs returns the URIs session subscribes to, in no particular order (a
// copy; nil when none).
func (x *Index) URIs(session string) []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s := x.bySession[session]
	if s == nil {
		return nil
	}
	out := make([]string, 0, len(s.uris))
	for u := range s.uris {
		out = append(out, u.uri)
	}
	return out
}

// SubscribedURIs returns every URI with at least one subscriber, in no
// particular order: what to notify after a resync.
func (x *Index) SubscribedURIs() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make([]string, 0, len(x.byURI))
	for uri := range x.byURI {
		out = append(out, uri)
	}
	return out
}

// Has reports whether session subscribes to uri.
func (x *Index) Has(session, uri string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	s, u := x.bySession[session], x.byURI[uri]
	if s == nil || u == nil {
		return false
	}
	_, ok := s.uris[u]
	return ok
}

// Counts returns the number of sessions holding subscriptions and the
// number of subscriptions (for metrics).
func (x *Index) Counts() (sessions, subscriptions int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.bySession), x.subs
}

// Snapshot is a copy of an Index for tests and debugging: every slice is
// sorted.
type Snapshot struct {
	ByURI         map[string][]string // uri → sessions
	BySession     map[string][]string // session → uris
	Sessions      int                 // sessions holding subscriptions
	Subscriptions int                 // (session, uri) pairs
}

// Snapshot copies the whole index under the read lock; it is not for hot
// paths.
func (x *Index) Snapshot() Snapshot {
	x.mu.RLock()
	snap := Snapshot{
		ByURI:         make(map[string][]string, len(x.byURI)),
		BySession:     make(map[string][]string, len(x.bySession)),
		Sessions:      len(x.bySession),
		Subscriptions: x.subs,
	}
	for uri, u := range x.byURI {
		l := make([]string, 0, len(u.subs))
		for s := range u.subs {
			l = append(l, s.id)
		}
		snap.ByURI[uri] = l
	}
	for id, s := range x.bySession {
		l := make([]string, 0, len(s.uris))
		for u := range s.uris {
			l = append(l, u.uri)
		}
		snap.BySession[id] = l
	}
	x.mu.RUnlock()
	for _, l := range snap.ByURI {
		slices.Sort(l)
	}
	for _, l := range snap.BySession {
		slices.Sort(l)
	}
	return snap
}
