package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

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
// Subscribers whose visibility rules are the same (agent.Visibility.Key)
// form one group per class: a change is evaluated once per group, not once
// per session, and debounced per (group, uri). Every member of a group
// sees the same changes, so this is the per-(session, uri) debounce; a
// member that joins while the group's window is open is notified when it
// closes. When it closes, the members' notifications go to a pool of
// senders; a client that stops reading holds up one sender for at most the
// send timeout, and then loses its subscriptions.
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
	groups   map[string]*liveGroup // by visibility key
	groupIDs map[string]*liveGroup // by id (the Debouncer's keys)
	byURI    map[string]map[*liveGroup]struct{}
	nextID   uint64
}

// liveGroup is the subscribers of one class that share a visibility rule.
// Its fields but members are immutable; members is guarded by live.mu.
type liveGroup struct {
	id, key string
	class   string
	vis     *agent.Visibility
	agent   *agent.Agent // for the database fallback of vis (CountsID)
	members map[string]*groupURI
}

// groupURI is the members of a group subscribed to one URI.
type groupURI struct {
	key      string // the Debouncer key: subscribe.Key(group id, uri)
	sessions map[*liveSession]struct{}
}

// liveSession is one session holding subscriptions. Its fields but ss and
// sid are guarded by live.mu.
type liveSession struct {
	sid string
	ss  *mcp.ServerSession
	// groups holds the session's group of each class it watches (usually
	// one).
	groups []*liveGroup
	// listen holds, per URI subscribed through subscriptions/listen, that
	// request's JSON-RPC id; nil when there is none.
	listen map[string]json.RawMessage
}

func (ls *liveSession) group(class string) (*liveGroup, int) {
	for i, g := range ls.groups {
		if g.class == class {
			return g, i
		}
	}
	return nil, -1
}

// sendBatch is a share of one group's notification of uri.
type sendBatch struct {
	uri      string
	params   json.RawMessage // {"uri": …}
	sessions []*liveSession
	listen   []json.RawMessage // per session: its listen id, or nil
}

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
	window := o.Debounce
	if window <= 0 {
		window = subscribe.DefaultWindow
	}
	senders := o.Senders
	if senders <= 0 {
		senders = max(4, 2*runtime.GOMAXPROCS(0))
	}
	l.sendTimeout = o.SendTimeout
	if l.sendTimeout <= 0 {
		l.sendTimeout = defaultSendTimeout
	}
	l.sends = make(chan sendBatch, 4*senders)
	l.senders = map[*senderState]struct{}{}
	for range senders {
		l.startSender()
	}
	l.wg.Add(1)
	go l.janitor()
	l.debounce = subscribe.NewDebouncer(window, l.fire)
	l.stops = append(l.stops, l.notifier.Listen(l.receive))
	if feed, ok := s.store.(store.Feed); ok {
		l.stops = append(l.stops, feed.Watch(l.publish))
	}
	return l
}

func (l *live) close() {
	l.closeOnce.Do(func() {
		for _, stop := range l.stops {
			stop()
		}
		l.debounce.Close() // no fire runs after this
		close(l.done)
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
	for _, t := range l.targets(c.Class) {
		if t.armed(l.debounce) {
			continue // already due to notify: nothing to decide
		}
		if l.sees(t.g, c) {
			for _, k := range t.keys {
				if k != "" {
					l.debounce.Trigger(k)
				}
			}
		}
	}
}

// target is a group subscribed to a class's URIs, with the Debouncer key
// of each URI it is subscribed to ("" for the others).
type target struct {
	g    *liveGroup
	keys [2]string
}

func (t *target) armed(d *subscribe.Debouncer) bool {
	for _, k := range t.keys {
		if k != "" && !d.Armed(k) {
			return false
		}
	}
	return true
}

// classURIs returns a class's two subscribable URIs.
func classURIs(class string) [2]string {
	return [2]string{resources.URI(class, resources.KindCount), resources.URI(class, resources.KindSamples)}
}

// targets returns the groups subscribed to the class's URIs.
func (l *live) targets(class string) []target {
	uris := classURIs(class)
	l.mu.RLock()
	defer l.mu.RUnlock()
	var out []target
	for i, uri := range uris {
	groups:
		for g := range l.byURI[uri] {
			k := g.members[uri].key
			for j := range out {
				if out[j].g == g {
					out[j].keys[i] = k
					continue groups
				}
			}
			t := target{g: g}
			t.keys[i] = k
			out = append(out, t)
		}
	}
	return out
}

// resync schedules a notification of every subscribed URI of class
// (every class when "").
func (l *live) resync(class string) {
	var keys []string
	l.mu.RLock()
	for _, g := range l.groupIDs {
		if class == "" || g.class == class {
			for _, gu := range g.members {
				keys = append(keys, gu.key)
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
// of the database; an error means no notification.
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
	ok, err := agent.NewScope(g.agent, l.srv.store).CountsID(ctx, c.Class, c.ObjectID)
	if err != nil {
		l.log.Warn("live: visibility check failed; not notifying", "class", c.Class, "err", err)
	}
	return ok
}

// fire runs when a (group, uri) window closes: the group's members
// subscribed to uri are handed to the senders, in shares so that every
// sender takes part.
func (l *live) fire(key string) {
	gid, uri := subscribe.SplitKey(key)
	l.mu.RLock()
	g := l.groupIDs[gid]
	if g == nil || g.members[uri] == nil {
		l.mu.RUnlock()
		return
	}
	members := g.members[uri].sessions
	sessions := make([]*liveSession, 0, len(members))
	var listen []json.RawMessage // per session, when any came through subscriptions/listen
	for ls := range members {
		if id := ls.listen[uri]; id != nil && listen == nil {
			listen = make([]json.RawMessage, len(sessions), len(members))
		}
		if listen != nil {
			listen = append(listen, ls.listen[uri])
		}
		sessions = append(sessions, ls)
	}
	l.mu.RUnlock()

	params, err := json.Marshal(map[string]string{"uri": uri})
	if err != nil {
		return
	}
	// About four shares per sender, at least 16 sessions each.
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
	next      int          // the first of b.sessions not yet begun
	cur       *liveSession // being sent to
	since     time.Time    // when the current send began; zero when idle
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
// abandoned (the rest of the batch went to another sender).
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
		st.next, st.cur, st.since = i+1, ls, time.Now()
		st.mu.Unlock()

		params := b.params
		if b.listen != nil && b.listen[i] != nil {
			params = listenParams(b.uri, b.listen[i])
		}
		if err := notifyRaw(context.Background(), ls.ss, "notifications/resources/updated", params); err != nil {
			// The session is gone: release what it held.
			l.log.Debug("live: delivery failed; releasing the session", "session", ls.sid, "err", err)
			l.release(ls.sid)
		}
	}
}

// unstick gives up on sends that have taken longer than the send timeout:
// the session is released, the rest of the sender's batch goes back to
// the queue, and a new sender takes the stuck one's place (which exits
// when its write returns, if ever).
func (l *live) unstick() {
	now := time.Now()
	l.smu.Lock()
	var stuck []*senderState
	for st := range l.senders {
		st.mu.Lock()
		if !st.since.IsZero() && now.Sub(st.since) > l.sendTimeout {
			stuck = append(stuck, st)
		}
		st.mu.Unlock()
	}
	l.smu.Unlock()
	for _, st := range stuck {
		st.mu.Lock()
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
		l.log.Warn("live: a client has not taken a notification in time; releasing its subscriptions",
			"session", ls.sid, "timeout", l.sendTimeout)
		l.release(ls.sid)
		l.startSender()
		if len(rest.sessions) > 0 {
			go func() {
				select {
				case l.sends <- rest:
				case <-l.done:
				}
			}()
		}
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
	t := time.NewTicker(min(sweepInterval, l.sendTimeout/4))
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

// sweep releases the sessions the SDK no longer holds.
func (l *live) sweep() {
	l.mu.RLock()
	n := len(l.sessions)
	l.mu.RUnlock()
	if n == 0 {
		return
	}
	alive := make(map[*mcp.ServerSession]struct{}, n)
	for ss := range l.srv.mcp.Sessions() {
		alive[ss] = struct{}{}
	}
	var gone []string
	l.mu.RLock()
	for sid, ls := range l.sessions {
		if _, ok := alive[ls.ss]; !ok {
			gone = append(gone, sid)
		}
	}
	l.mu.RUnlock()
	for _, sid := range gone {
		l.release(sid)
	}
}

// release drops everything a session holds.
func (l *live) release(sid string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index.RemoveSession(sid)
	ls := l.sessions[sid]
	if ls == nil {
		return
	}
	for _, g := range ls.groups {
		for _, uri := range classURIs(g.class) {
			l.leave(g, uri, ls)
		}
	}
	delete(l.sessions, sid)
}

// join adds ls to g's members subscribed to uri; l.mu is held.
func (l *live) join(g *liveGroup, uri string, ls *liveSession) {
	gu := g.members[uri]
	if gu == nil {
		gu = &groupURI{key: subscribe.Key(g.id, uri), sessions: map[*liveSession]struct{}{}}
		g.members[uri] = gu
		if l.byURI[uri] == nil {
			l.byURI[uri] = map[*liveGroup]struct{}{}
		}
		l.byURI[uri][g] = struct{}{}
	}
	gu.sessions[ls] = struct{}{}
}

// leave removes ls from g's members subscribed to uri, and drops what is
// left empty; l.mu is held.
func (l *live) leave(g *liveGroup, uri string, ls *liveSession) {
	gu := g.members[uri]
	if gu == nil {
		return
	}
	delete(gu.sessions, ls)
	if len(gu.sessions) > 0 {
		return
	}
	delete(g.members, uri)
	if byURI := l.byURI[uri]; byURI != nil {
		delete(byURI, g)
		if len(byURI) == 0 {
			delete(l.byURI, uri)
		}
	}
	if len(g.members) == 0 {
		delete(l.groups, g.key)
		delete(l.groupIDs, g.id)
	}
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

// subscribe handles resources/subscribe, and each URI of a
// subscriptions/listen request.
func (l *live) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	a := agentFrom(ctx)
	if a == nil || req.Session == nil {
		return &jsonrpc.Error{Code: CodeUnauthorized, Message: "Unauthorized"}
	}
	uri := req.Params.URI
	class, err := subscribable(uri)
	if err != nil {
		return err
	}
	vis, err := agent.NewScope(a, l.srv.store).Visibility(ctx, class)
	if err != nil {
		var ce *agent.ClassError
		if errors.As(err, &ce) {
			return invalidParams("cannot subscribe to %s: %v", uri, err)
		}
		var de *agent.DeniedError
		if errors.As(err, &de) {
			return invalidParams("cannot subscribe to %s: %s", uri, de.Msg)
		}
		return l.srv.internal("resources/subscribe", err)
	}
	sid := sessionKey(req.Session)
	var listenID json.RawMessage
	if v, ok := req.Params.Meta[listenIDMeta]; ok && v != nil {
		listenID, _ = json.Marshal(v)
	}

	// The index and the groups change together, under l.mu: a session's
	// subscribe and unsubscribe may run concurrently.
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.index.Subscribe(sid, uri); err != nil {
		return invalidParams("%v", err)
	}
	ls := l.sessions[sid]
	if ls == nil {
		ls = &liveSession{sid: sid, ss: req.Session}
		l.sessions[sid] = ls
	}
	key := vis.Key()
	g := l.groups[key]
	if g == nil {
		l.nextID++
		g = &liveGroup{id: "g" + strconv.FormatUint(l.nextID, 36), key: key, class: class, vis: vis, agent: a, members: map[string]*groupURI{}}
		l.groups[key] = g
		l.groupIDs[g.id] = g
	}
	if old, i := ls.group(class); old != g {
		// The session's rule for the class changed (its agent did):
		// its other URI of the class follows it to the new group.
		if old != nil {
			for _, u := range classURIs(class) {
				if gu := old.members[u]; gu != nil {
					if _, in := gu.sessions[ls]; in && u != uri {
						l.join(g, u, ls)
					}
				}
				l.leave(old, u, ls)
			}
			ls.groups[i] = g
		} else {
			ls.groups = append(ls.groups, g)
		}
	}
	l.join(g, uri, ls)
	if listenID != nil {
		if ls.listen == nil {
			ls.listen = map[string]json.RawMessage{}
		}
		ls.listen[uri] = listenID
	} else {
		delete(ls.listen, uri)
	}
	return nil
}

// unsubscribe handles resources/unsubscribe (idempotent), and the end of
// a subscriptions/listen request.
func (l *live) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Session == nil {
		return nil
	}
	sid := sessionKey(req.Session)
	uri := req.Params.URI
	l.mu.Lock()
	defer l.mu.Unlock()
	l.index.Unsubscribe(sid, uri)
	class, _, err := resources.ParseURI(uri)
	if err != nil {
		return nil
	}
	ls := l.sessions[sid]
	if ls == nil {
		return nil
	}
	delete(ls.listen, uri)
	g, i := ls.group(class)
	if g == nil {
		return nil
	}
	l.leave(g, uri, ls)
	for _, u := range classURIs(class) {
		if gu := g.members[u]; gu != nil {
			if _, in := gu.sessions[ls]; in {
				return nil // still watching the class
			}
		}
	}
	ls.groups = append(ls.groups[:i], ls.groups[i+1:]...)
	if len(ls.groups) == 0 {
		delete(l.sessions, sid)
	}
	return nil
}

// subscribable checks a subscription URI: parse://{Class}/count or
// parse://{Class}/samples.
func subscribable(uri string) (string, error) {
	class, kind, err := resources.ParseURI(uri)
	if err != nil {
		return "", invalidParams("cannot subscribe to %q: %v; subscribe to parse://{Class}/count or parse://{Class}/samples", uri, err)
	}
	if kind == resources.KindSchema {
		return "", invalidParams("cannot subscribe to %s: a class's schema is not a live resource (it changes only through schema operations); subscribe to %s or %s",
			uri, resources.URI(class, resources.KindCount), resources.URI(class, resources.KindSamples))
	}
	return class, nil
}

// LiveSnapshot is the subscription index as it stands, for tests and
// diagnostics.
func (s *Server) LiveSnapshot() subscribe.Snapshot { return s.live.index.Snapshot() }
