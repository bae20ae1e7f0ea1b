package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/resources"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/subscribe"
)

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
	// (default 5 s). A session that takes longer (a client that stopped
	// reading) loses its subscriptions, and the sender waiting on it is
	// replaced, so the other sessions' notifications go on.
	SendTimeout time.Duration
	// Clock is what the debounce windows are measured on (default: the
	// system clock; tests pass a fake one).
	Clock clockwork.Clock
}

// sweepInterval is how often sessions that ended (disconnect, DELETE, idle
// timeout, the end of a stateless request) are looked for and released.
const sweepInterval = time.Second

// defaultSendTimeout is LiveOptions.SendTimeout's default.
const defaultSendTimeout = 5 * time.Second

// listenIDMeta is the _meta key under which the transport hands the
// JSON-RPC id of a subscriptions/listen request to the subscribe handler
// (the SDK passes the listen's _meta to it): notifications for that
// listen carry the id as io.modelcontextprotocol/subscriptionId.
const listenIDMeta = "dev.parsemcp/listenId"

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
	done        chan struct{}
	wg          sync.WaitGroup
	closeOnce   sync.Once

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

// holders is what holds a subscription that a listen holds:
// resources/subscribe (plain) and the listens, by request id.
type holders struct {
	plain bool
	ids   []json.RawMessage
}

func (ls *liveSession) group(uri string) (*liveGroup, int) {
	for i, g := range ls.groups {
		if g.uri == uri {
			return g, i
		}
	}
	return nil, -1
}

// hold records what subscribes ls, a member of g, to g's URI (id nil:
// resources/subscribe); joined says ls joined with this subscription.
// l.mu is held.
func (g *liveGroup) hold(ls *liveSession, id json.RawMessage, joined bool) {
	h := g.sessions[ls]
	if id == nil {
		if h != nil {
			h.plain = true
		}
		return
	}
	if h == nil {
		h = &holders{plain: !joined} // nil meant resources/subscribe
		g.sessions[ls] = h
	}
	if !slices.ContainsFunc(h.ids, func(have json.RawMessage) bool { return string(have) == string(id) }) {
		h.ids = append(h.ids, id)
	}
}

// unhold removes what held ls, a member of g, to g's URI (id nil:
// resources/unsubscribe) and reports whether something still does; l.mu
// is held.
func (g *liveGroup) unhold(ls *liveSession, id json.RawMessage) bool {
	h := g.sessions[ls]
	if h == nil {
		return id != nil // a listen never recorded: resources/subscribe holds it
	}
	if id == nil {
		h.plain = false
	} else {
		h.ids = slices.DeleteFunc(h.ids, func(have json.RawMessage) bool { return string(have) == string(id) })
	}
	return h.plain || len(h.ids) > 0
}

// sendBatch is a share of one group's notification of uri: entry i goes
// to sessions[i], naming the listen listen[i] (nil: none).
type sendBatch struct {
	uri      string
	params   json.RawMessage // {"uri": …}
	sessions []*liveSession
	listen   []json.RawMessage
}

// minSendTimeout keeps the janitor's tick sane.
const minSendTimeout = 10 * time.Millisecond

func newLive(s *Server, o *LiveOptions) *live {
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

// wireChange is a store.Change as it travels between instances.
type wireChange struct {
	Op       store.ChangeOp `json:"op"`
	Class    string         `json:"class,omitempty"`
	ObjectID string         `json:"id,omitempty"`
	Before   parse.Object   `json:"before,omitempty"`
	After    parse.Object   `json:"after,omitempty"`
}

// publish hands a committed change from the store's feed to the notifier
// (which delivers it here, and to the other instances).
func (l *live) publish(c store.Change) {
	id := c.ID
	if id == "" {
		id = l.origin + ":" + strconv.FormatUint(l.seq.Add(1), 10)
	}
	w := &wireChange{Op: c.Op, Class: c.Class, ObjectID: c.ObjectID, Before: c.Before, After: c.After}
	payload, err := json.Marshal(w)
	if err != nil {
		l.log.Error("live: change not serializable", "class", c.Class, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.notifier.Publish(ctx, subscribe.Message{ID: id, Payload: payload, Value: w}); err != nil {
		// Delivered locally all the same; other instances resync when
		// their connection comes back.
		l.log.Warn("live: change not shared with other instances", "err", err)
	}
}

// receive handles one change from the notifier: each group subscribed to
// the class's count or samples whose members could see the row before or
// after the change is scheduled for one notification (debounced).
func (l *live) receive(m subscribe.Message) {
	if m.ID == subscribe.ResyncID {
		// Changes may have been missed while the instances were cut off.
		l.resync("")
		return
	}
	if l.dedup.Seen(m.ID) {
		return
	}
	c, ok := m.Value.(*wireChange)
	if !ok {
		c = new(wireChange)
		if err := json.Unmarshal(m.Payload, c); err != nil {
			l.log.Warn("live: malformed change dropped", "err", err)
			return
		}
	}
	if c.Op == store.ChangeResync {
		l.resync(c.Class)
		return
	}
	for _, g := range l.targets(c.Class) {
		if l.debounce.Armed(g.id) {
			continue // already due to notify: nothing to decide
		}
		if l.sees(g, c) {
			l.debounce.Trigger(g.id)
		}
	}
}

// classURIs returns a class's two subscribable URIs.
func classURIs(class string) [2]string {
	return [2]string{resources.URI(class, resources.KindCount), resources.URI(class, resources.KindSamples)}
}

// targets returns the groups subscribed to the class's URIs.
func (l *live) targets(class string) []*liveGroup {
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []*liveGroup
	for _, uri := range classURIs(class) {
		for g := range l.byURI[uri] {
			out = append(out, g)
		}
	}
	return out
}

// resync schedules a notification of every subscribed URI of class
// (every class when "").
func (l *live) resync(class string) {
	var uris []string
	if class != "" {
		u := classURIs(class)
		uris = u[:]
	}
	var keys []string
	l.mu.RLock()
	for uri, groups := range l.byURI {
		if class == "" || slices.Contains(uris, uri) {
			for g := range groups {
				keys = append(keys, g.id)
			}
		}
	}
	l.mu.RUnlock()
	for _, k := range keys {
		l.debounce.Trigger(k)
	}
}

// sees reports whether the group's members could see the changed row
// before or after the change. It fails closed: when the rule cannot be
// decided in memory, only the row's state after the change counts, asked
// of the database with the (only) member's agent; an error means no
// notification.
func (l *live) sees(g *liveGroup, c *wireChange) bool {
	if g.vis.InMemory() {
		for _, row := range []parse.Object{c.Before, c.After} {
			if ok, err := g.vis.Sees(row); err == nil && ok {
				return true
			}
		}
		return false
	}
	if c.After == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ok, err := agent.NewScope(g.agent, l.srv.store).ReachesID(ctx, c.Class, c.ObjectID, g.vis.Op())
	if err != nil {
		l.log.Warn("live: visibility check failed; not notifying", "class", c.Class, "err", err)
	}
	return ok
}

// fire runs when a group's window closes: its members are handed to the
// senders, in shares so that every sender takes part.
func (l *live) fire(key string) {
	l.mu.RLock()
	g := l.groupIDs[key]
	if g == nil {
		l.mu.RUnlock()
		return
	}
	uri := g.uri
	sessions := make([]*liveSession, 0, len(g.sessions))
	var listen []json.RawMessage // per entry, when any listen holds a member
	for ls, h := range g.sessions {
		if h != nil && len(h.ids) > 0 && listen == nil {
			listen = make([]json.RawMessage, len(sessions), len(g.sessions)+len(h.ids))
		}
		if h == nil || h.plain {
			sessions = append(sessions, ls)
			if listen != nil {
				listen = append(listen, nil)
			}
		}
		if h != nil {
			for _, id := range h.ids {
				sessions = append(sessions, ls)
				listen = append(listen, id)
			}
		}
	}
	l.mu.RUnlock()

	params, err := json.Marshal(map[string]string{"uri": uri})
	if err != nil {
		return
	}
	// About four shares per sender, at least 16 notifications each.
	share := max(16, (len(sessions)+cap(l.sends)-1)/cap(l.sends))
	for start := 0; start < len(sessions); start += share {
		end := min(start+share, len(sessions))
		b := sendBatch{uri: uri, params: params, sessions: sessions[start:end]}
		if listen != nil {
			b.listen = listen[start:end]
		}
		select {
		case l.sends <- b:
		case <-l.done:
			return
		}
	}
}

// senderState is what the janitor sees of one sender: the batch it is
// working through and when its current send began.
type senderState struct {
	mu        sync.Mutex
	b         sendBatch
	next      int          // the first entry of b not yet begun
	cur       *liveSession // being sent to
	since     time.Time    // when the current send began; zero when idle
	gen       uint64       // counts the sends begun
	abandoned bool         // replaced: exit after the current send
}

func (l *live) startSender() {
	st := &senderState{}
	l.smu.Lock()
	l.senders[st] = struct{}{}
	l.smu.Unlock()
	l.wg.Add(1)
	go l.sender(st)
}

// sender sends the notifications handed to it until the server closes, or
// until the janitor gives up on a send of its (and replaces it).
func (l *live) sender(st *senderState) {
	defer l.wg.Done()
	for {
		select {
		case <-l.done:
			return
		case b := <-l.sends:
			st.mu.Lock()
			st.b, st.next = b, 0
			st.mu.Unlock()
			if !l.sendBatch(st) {
				return
			}
		}
	}
}

// sendBatch works through st's batch; it reports false when st was
// abandoned (the rest of the batch went to another sender) or the server
// is closing.
func (l *live) sendBatch(st *senderState) bool {
	for {
		st.mu.Lock()
		if st.abandoned {
			st.mu.Unlock()
			return false
		}
		b, i := st.b, st.next
		if i >= len(b.sessions) {
			st.b, st.cur, st.since = sendBatch{}, nil, time.Time{}
			st.mu.Unlock()
			return true
		}
		ls := b.sessions[i]
		st.next = i + 1
		if ls.released.Load() {
			st.mu.Unlock()
			continue // released since the batch was made (or stuck before)
		}
		st.cur, st.since = ls, time.Now()
		st.gen++
		st.mu.Unlock()

		select {
		case <-l.done:
			return false
		default:
		}
		params := b.params
		if b.listen != nil && b.listen[i] != nil {
			params = listenParams(b.uri, b.listen[i])
		}
		_, span := traceDelivery(b.uri)
		err := notifyRaw(context.Background(), ls.ss, "notifications/resources/updated", params)
		span.End()
		if err != nil {
			// The session is gone: release what it held.
			l.log.Debug("live: delivery failed; releasing the session", "session", ls.sid, "err", err)
			l.releaseSession(ls)
		}
	}
}

// unstick gives up on sends that have taken longer than the send timeout:
// the session is released and closed (its client sees the end and can
// reconnect), the rest of the sender's batch goes back to the queue, and a
// new sender takes the stuck one's place (which exits when its write
// returns, if ever).
func (l *live) unstick() {
	type stuckSend struct {
		st  *senderState
		gen uint64
	}
	now := time.Now()
	var stuck []stuckSend
	l.smu.Lock()
	for st := range l.senders {
		st.mu.Lock()
		if !st.since.IsZero() && now.Sub(st.since) > l.sendTimeout {
			stuck = append(stuck, stuckSend{st, st.gen})
		}
		st.mu.Unlock()
	}
	l.smu.Unlock()
	for _, s := range stuck {
		st := s.st
		st.mu.Lock()
		if st.gen != s.gen || st.since.IsZero() || st.abandoned {
			st.mu.Unlock() // the send returned meanwhile
			continue
		}
		st.abandoned = true
		ls, rest := st.cur, st.b
		rest.sessions = rest.sessions[st.next:]
		if rest.listen != nil {
			rest.listen = rest.listen[st.next:]
		}
		st.b, st.cur = sendBatch{}, nil
		st.mu.Unlock()
		l.smu.Lock()
		delete(l.senders, st)
		l.smu.Unlock()
		l.startSender()
		if len(rest.sessions) > 0 {
			go func() {
				select {
				case l.sends <- rest:
				case <-l.done:
				}
			}()
		}
		l.log.Warn("live: a client has not taken a notification in time; closing its session",
			"session", ls.sid, "timeout", l.sendTimeout)
		l.releaseSession(ls)
		go ls.ss.Close()
	}
}

// listenParams are the parameters of a notification for a
// subscriptions/listen stream: they name the listen request.
func listenParams(uri string, id json.RawMessage) json.RawMessage {
	b, err := json.Marshal(map[string]any{"uri": uri, "_meta": map[string]json.RawMessage{mcp.MetaKeySubscriptionID: id}})
	if err != nil {
		return nil
	}
	return b
}

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

// receiveFor handles one change from the subscription of the group of key
// (a store whose feed is filtered per credential): the store has decided
// what the group's credential may read; the governed rules on top are
// decided here, as for the store-wide feed.
func (l *live) receiveFor(key string, c store.Change) {
	l.mu.RLock()
	g := l.groups[key]
	l.mu.RUnlock()
	if g == nil {
		return
	}
	if c.Op == store.ChangeResync {
		l.debounce.Trigger(g.id)
		return
	}
	if l.debounce.Armed(g.id) {
		return
	}
	w := &wireChange{Op: c.Op, Class: c.Class, ObjectID: c.ObjectID, Before: c.Before, After: c.After}
	if g.vis.InMemory() {
		if l.sees(g, w) {
			l.debounce.Trigger(g.id)
		}
		return
	}
	go func() { // asks the database: not on the feed's goroutine
		if l.sees(g, w) {
			l.debounce.Trigger(g.id)
		}
	}()
}

// sessionKey names a session in the index: its Mcp-Session-Id, or for
// transports without one (stdio, in-memory, stateless requests) a key
// unique to the session.
func sessionKey(ss *mcp.ServerSession) string {
	if id := ss.ID(); id != "" {
		return id
	}
	return fmt.Sprintf("local-%p", ss)
}

// maxListenID bounds the listen id a notification echoes.
const maxListenID = 128

// listenID returns the id of the subscriptions/listen request behind a
// subscribe or unsubscribe, as the transport recorded it (nil: none, or
// not a JSON-RPC id: a string or a number).
func listenID(meta mcp.Meta) json.RawMessage {
	var b []byte
	switch v := meta[listenIDMeta].(type) {
	case string:
		if len(v) > maxListenID {
			return nil
		}
		b, _ = json.Marshal(v)
	case float64:
		b, _ = json.Marshal(v)
	}
	return b
}

// subscribe handles resources/subscribe, and each URI of a
// subscriptions/listen request.
func (l *live) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	a := agentFrom(ctx)
	if a == nil || req.Session == nil {
		return &jsonrpc.Error{Code: CodeUnauthorized, Message: "Unauthorized"}
	}
	uri := req.Params.URI
	class, kind, err := subscribable(uri)
	if err != nil {
		return err
	}
	op := parse.OpCount
	if kind == resources.KindSamples {
		op = parse.OpFind // samples are read with a find
	}
	vis, err := agent.NewScope(a, l.srv.store).VisibilityFor(ctx, class, op)
	if err != nil {
		var ce *agent.ClassError
		if errors.As(err, &ce) {
			return invalidParams("cannot subscribe to %s: %v", uri, err)
		}
		var de *agent.DeniedError
		if errors.As(err, &de) {
			return invalidParams("cannot subscribe to %s: %s", uri, de.Msg)
		}
		return l.srv.internal(ctx, "resources/subscribe", err)
	}
	if fs, ok := l.srv.store.(store.FeedScoped); ok {
		reach, err := fs.FeedReach(ctx)
		if reach == store.FeedNone {
			if errors.Is(err, store.ErrFeedNotInstalled) {
				return invalidParams("cannot subscribe to %s: %v", uri, err)
			}
			return l.srv.internal(ctx, "resources/subscribe", err)
		}
	}
	sid := sessionKey(req.Session)
	key := uri + "\x00" + vis.Key()
	if !vis.InMemory() {
		// Decided by the database with this subscriber's own agent.
		key += "\x00" + sid
	}
	var unwatch func() // the new group's own subscription, if it needs one
	if agent.FollowsPerCredential(l.srv.store) {
		if tok := a.Identity.Session.Reveal(); tok != "" {
			// One subscription per credential: the caller's own session.
			sum := sha256.Sum256([]byte(tok))
			key += "\x00" + hex.EncodeToString(sum[:8])
		}
		l.mu.RLock()
		have := l.groups[key] != nil
		l.mu.RUnlock()
		if !have {
			// The store's changes reach this group through a subscription
			// with the subscriber's own credential; one the store cannot
			// make (an identity it cannot act as, a class it does not
			// follow) is refused rather than never notified.
			if unwatch, err = agent.NewScope(a, l.srv.store).WatchClass(ctx, class, func(c store.Change) { l.receiveFor(key, c) }); err != nil {
				return invalidParams("cannot subscribe to %s: %v", uri, err)
			}
		}
	}
	id := listenID(req.Params.Meta)
	if unwatch != nil {
		defer func() { // not taken by a new group
			if unwatch != nil {
				unwatch()
			}
		}()
	}

	// The index and the groups change together, under l.mu: a session's
	// subscribe and unsubscribe may run concurrently.
	l.mu.Lock()
	if agent.FollowsPerCredential(l.srv.store) && l.groups[key] == nil && unwatch == nil {
		// The group seen above left meanwhile, and its subscription with
		// it: start again (and make one).
		l.mu.Unlock()
		return l.subscribe(ctx, req)
	}
	defer l.mu.Unlock()
	if err := l.index.Subscribe(sid, uri); err != nil {
		return invalidParams("%v", err)
	}
	ls := l.sessions[sid]
	if ls == nil {
		ls = &liveSession{sid: sid, ss: req.Session}
		l.sessions[sid] = ls
	}
	g := l.groups[key]
	if g == nil {
		l.nextID++
		g = &liveGroup{id: "g" + strconv.FormatUint(l.nextID, 36), key: key, uri: uri, vis: vis, agent: a, sessions: map[*liveSession]*holders{}, unwatch: unwatch}
		unwatch = nil
		l.groups[key] = g
		l.groupIDs[g.id] = g
	}
	old, i := ls.group(uri)
	if old != g {
		// A new subscription, or the session's rule changed (its agent
		// did): it moves, with what holds it and a notification its old
		// group owed it.
		var h *holders
		if old != nil {
			h = old.sessions[ls]
			if l.debounce.Armed(old.id) {
				l.debounce.Trigger(g.id)
			}
			l.leave(old, ls)
			ls.groups[i] = g
		} else {
			ls.groups = append(ls.groups, g)
		}
		l.join(g, ls, h)
	}
	g.hold(ls, id, old == nil)
	return nil
}

// unsubscribe handles resources/unsubscribe (idempotent), and the end of
// a subscriptions/listen request (only that listen's hold is dropped).
func (l *live) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Session == nil {
		return nil
	}
	sid := sessionKey(req.Session)
	uri := req.Params.URI
	id := listenID(req.Params.Meta)
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.sessions[sid]
	var g *liveGroup
	i := -1
	if ls != nil {
		g, i = ls.group(uri)
	}
	if g == nil {
		l.index.Unsubscribe(sid, uri)
		return nil
	}
	if g.unhold(ls, id) {
		return nil // still held by another listen, or resources/subscribe
	}
	l.index.Unsubscribe(sid, uri)
	l.leave(g, ls)
	ls.groups = slices.Delete(ls.groups, i, i+1)
	if len(ls.groups) == 0 {
		delete(l.sessions, sid)
	}
	return nil
}

// subscribable checks a subscription URI: parse://{Class}/count or
// parse://{Class}/samples.
func subscribable(uri string) (class, kind string, err error) {
	class, kind, err = resources.ParseURI(uri)
	if err != nil {
		return "", "", invalidParams("cannot subscribe to %q: %v; subscribe to parse://{Class}/count or parse://{Class}/samples", uri, err)
	}
	if kind == resources.KindSchema {
		return "", "", invalidParams("cannot subscribe to %s: a class's schema is not a live resource (it changes only through schema operations); subscribe to %s or %s",
			uri, resources.URI(class, resources.KindCount), resources.URI(class, resources.KindSamples))
	}
	return class, kind, nil
}

// LiveSnapshot is the subscription index as it stands, for tests and
// diagnostics.
func (s *Server) LiveSnapshot() subscribe.Snapshot { return s.live.index.Snapshot() }

// LivePending is how many notifications wait for their debounce window
// to close, for tests.
func (s *Server) LivePending() int { return s.live.debounce.Pending() }
