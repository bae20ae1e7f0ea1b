package mcpserver

import (
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/subscribe"
)

// Live resource subscriptions: the options, the live type with its groups
// and sessions, and its start and close. live_subscribe.go handles
// resources/subscribe and unsubscribe, live_listen.go what is particular to
// subscriptions/listen, live_changes.go routes the store's changes to the
// groups, live_deliver.go sends the notifications and live_sweep.go
// releases the sessions that ended.

// LiveOptions configures resource subscriptions (resources/subscribe on
// parse://{Class}/count and parse://{Class}/samples, and the
// subscriptions/listen streams of 2026-07-28 clients).
type LiveOptions struct {
	// Debounce is the trailing window per (session, uri): one
	// notifications/resources/updated per burst of changes (default
	// 250 ms).
	Debounce time.Duration
	// Limits caps subscriptions per session (100) and sessions holding
	// subscriptions (10,000).
	Limits subscribe.Limits
	// Notifier carries the store's changes to every server instance
	// (default: this process only). Use subscribe.NewRedis to share them
	// across instances behind one load balancer.
	Notifier subscribe.Notifier
	// Senders is the number of goroutines sending notifications (default
	// 2 × GOMAXPROCS, at least 4).
	Senders int
	// SendTimeout is how long one notification may take to be written
	// (default 5 s), measured on Options.Clock. A session that takes
	// longer (a client that stopped reading) loses its subscriptions, and
	// the sender waiting on it is replaced, so the other sessions'
	// notifications go on.
	SendTimeout time.Duration
	// Clock is what the debounce windows are measured on (default: the
	// system clock; tests pass a fake one). The send timeout is measured
	// on Options.Clock, with the server's other time limits: a test that
	// moves that clock past SendTimeout while a send is in flight gives
	// up on it.
	Clock clockwork.Clock
}

// defaultSendTimeout is LiveOptions.SendTimeout's default.
const defaultSendTimeout = 5 * time.Second

// live routes the store's committed changes to the sessions subscribed to
// the resources they affect. The same URI shows different rows to
// different agents, so a subscriber is told only about rows it could see
// before or after the change.
//
// The subscribers of one URI whose visibility rules are the same
// (agent.Visibility.Key) form a group: a change is decided once per group,
// not once per session, and debounced per group. Every member of a group
// sees the same changes, so this is the per-(session, uri) debounce; a
// member that joins while the group's window is open is notified when it
// closes. (A rule that needs the database is asked with the subscriber's
// own agent: such subscribers are never grouped.) When the window closes,
// the members' notifications go to a pool of senders; a client that stops
// reading holds up one sender for at most the send timeout, and then loses
// its subscriptions and its session.
type live struct {
	srv      *Server
	log      *slog.Logger
	index    *subscribe.Index
	debounce *subscribe.Debouncer
	notifier subscribe.Notifier
	dedup    *subscribe.Dedup
	stops    []func()
	// origin tags changes this instance published without a store id.
	origin string
	seq    atomic.Uint64

	sends       chan sendBatch
	sendTimeout time.Duration
	// tm measures a send's age against sendTimeout (Options.Clock).
	tm        timing
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	smu     sync.Mutex
	senders map[*senderState]struct{}

	mu       sync.RWMutex
	sessions map[string]*liveSession
	groups   map[string]*liveGroup // by uri and visibility key
	groupIDs map[string]*liveGroup // by id (the group's Debouncer key)
	byURI    map[string]map[*liveGroup]struct{}
	nextID   uint64
}

// liveGroup is the subscribers of one URI that share a visibility rule.
// Its fields but sessions are immutable; sessions is guarded by live.mu.
type liveGroup struct {
	id, key string // id is also the group's Debouncer key
	uri     string
	vis     *agent.Visibility
	agent   *agent.Agent // for the database fallback of vis (ReachesID)
	// unwatch ends the group's own subscription to the store's changes,
	// on a store whose feed is filtered per credential (nil otherwise);
	// guarded by live.mu.
	unwatch func()
	// sessions maps each member to what holds its subscription: nil for
	// resources/subscribe alone, else the holders (resources/subscribe,
	// and the listens by id); each holder is notified.
	sessions map[*liveSession]*holders
}

// liveSession is one session holding subscriptions. Its fields but sid,
// ss and released are guarded by live.mu.
type liveSession struct {
	sid string
	ss  *mcp.ServerSession
	// groups holds the session's group of each URI it watches.
	groups   []*liveGroup
	released atomic.Bool
}

func (ls *liveSession) group(uri string) (*liveGroup, int) {
	for i, g := range ls.groups {
		if g.uri == uri {
			return g, i
		}
	}
	return nil, -1
}

// join adds ls to g, held by h (nil: resources/subscribe); l.mu is held.
func (l *live) join(g *liveGroup, ls *liveSession, h *holders) {
	if len(g.sessions) == 0 {
		if l.byURI[g.uri] == nil {
			l.byURI[g.uri] = map[*liveGroup]struct{}{}
		}
		l.byURI[g.uri][g] = struct{}{}
	}
	g.sessions[ls] = h
}

// leave removes ls from g, and drops g when it is left empty; l.mu is
// held.
func (l *live) leave(g *liveGroup, ls *liveSession) {
	delete(g.sessions, ls)
	if len(g.sessions) > 0 {
		return
	}
	if byURI := l.byURI[g.uri]; byURI != nil {
		delete(byURI, g)
		if len(byURI) == 0 {
			delete(l.byURI, g.uri)
		}
	}
	delete(l.groups, g.key)
	delete(l.groupIDs, g.id)
	if g.unwatch != nil {
		g.unwatch()
		g.unwatch = nil
	}
}

// minSendTimeout keeps the janitor's tick sane.
const minSendTimeout = 10 * time.Millisecond

func newLive(s *Server, o *LiveOptions, tm timing) *live {
	if o == nil {
		o = &LiveOptions{}
	}
	l := &live{srv: s, log: s.log, index: subscribe.NewIndex(o.Limits), notifier: o.Notifier,
		dedup: subscribe.NewDedup(subscribe.DefaultDedupSize), origin: newCorrelationID(), done: make(chan struct{}),
		sessions: map[string]*liveSession{}, groups: map[string]*liveGroup{}, groupIDs: map[string]*liveGroup{},
		byURI: map[string]map[*liveGroup]struct{}{}}
	if l.notifier == nil {
		l.notifier = subscribe.NewLocal()
	}
	senders := o.Senders
	if senders <= 0 {
		senders = max(4, 2*runtime.GOMAXPROCS(0))
	}
	l.sendTimeout = o.SendTimeout
	if l.sendTimeout <= 0 {
		l.sendTimeout = defaultSendTimeout
	}
	l.sendTimeout = max(l.sendTimeout, minSendTimeout)
	l.tm = tm
	l.sends = make(chan sendBatch, 4*senders)
	l.senders = map[*senderState]struct{}{}
	for range senders {
		l.startSender()
	}
	l.wg.Add(1)
	go l.janitor()
	l.debounce = subscribe.NewDebouncer(o.Debounce, l.fire, subscribe.DebounceClock(o.Clock)) // ≤ 0: the default window
	l.stops = append(l.stops, l.notifier.Listen(l.receive))
	if feed, ok := s.store.(store.Feed); ok && !agent.FollowsPerCredential(s.store) {
		// A store whose feed is filtered per credential is watched per
		// group instead, with the group's own credential (subscribe).
		l.stops = append(l.stops, feed.Watch(l.publish))
	}
	return l
}

func (l *live) close() {
	l.closeOnce.Do(func() {
		for _, stop := range l.stops {
			stop()
		}
		l.mu.Lock()
		for _, g := range l.groups {
			if g.unwatch != nil {
				g.unwatch()
				g.unwatch = nil
			}
		}
		l.mu.Unlock()
		close(l.done)      // fire and the senders stop handing out work
		l.debounce.Close() // no fire runs after this
		// A sender blocked on a client that does not read is not waited
		// for beyond the send timeout.
		waited := make(chan struct{})
		go func() { l.wg.Wait(); close(waited) }()
		select {
		case <-waited:
		case <-time.After(l.sendTimeout):
		}
	})
}

// LiveSnapshot is the subscription index as it stands, for tests and
// diagnostics.
func (s *Server) LiveSnapshot() subscribe.Snapshot { return s.live.index.Snapshot() }

// LivePending is how many notifications wait for their debounce window
// to close, for tests.
func (s *Server) LivePending() int { return s.live.debounce.Pending() }
