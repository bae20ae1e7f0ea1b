package parserest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/object"
)

// A LiveQuery connection and its subscriptions. Parse Server's LiveQuery
// grants a connection opened with the master key every event of its
// subscriptions, whatever each subscription says; a connection opened
// without it checks each event against the session token its subscription
// was made with (none: public rows only). So the store keeps two
// connections: one with the master key, for master-key subscribers, and
// one without, whose subscriptions each carry their subscriber's session
// token. One subscription serves every watcher of the same (class,
// credential). A dropped connection is dialled again with backoff and
// every subscription made again; the watchers get a resync, since the
// changes in between were not seen.

// lqConn is one LiveQuery connection (master key or not).
type lqConn struct {
	s      *Store
	master bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	started bool
	conn    *websocket.Conn // nil while disconnected
	subs    map[int]*lqSub  // by requestId
	byKey   map[string]*lqSub
	nextReq int
	nextW   uint64
}

// lqSub is one subscription: a class, with a credential.
type lqSub struct {
	id       int
	key      string
	class    string
	token    string // the subscriber's session token ("" on the master connection, or anonymous)
	watchers map[uint64]func(store.Change)
	acked    chan struct{} // closed at the first answer (subscribed or error)
	err      error         // the refusal, set before acked closes
	// resync: made again after a reconnect; its watchers get a resync
	// once LiveQuery acknowledges it (guarded by lqConn.mu).
	resync bool
}

func newLQConn(s *Store, master bool) *lqConn {
	ctx, cancel := context.WithCancel(context.Background())
	return &lqConn{s: s, master: master, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		subs: map[int]*lqSub{}, byKey: map[string]*lqSub{}}
}

// close stops the connection (if it was started).
func (c *lqConn) close() {
	c.cancel()
	c.mu.Lock()
	started := c.started
	c.mu.Unlock()
	if started {
		<-c.done
	}
}

// subscribe calls fn with the changes of class LiveQuery lets token (on
// the master connection: every change) see. It returns once LiveQuery has
// acknowledged the subscription, or with its refusal; ctx bounds the
// wait.
func (c *lqConn) subscribe(ctx context.Context, class, token string, fn func(store.Change)) (func(), error) {
	key := class + "\x00" + token
	c.mu.Lock()
	if c.ctx.Err() != nil {
		c.mu.Unlock()
		return nil, fmt.Errorf("%w: the store is closed", store.ErrUnavailable)
	}
	if !c.started {
		c.started = true
		go c.run()
	}
	sub := c.byKey[key]
	if sub == nil {
		c.nextReq++
		sub = &lqSub{id: c.nextReq, key: key, class: class, token: token, watchers: map[uint64]func(store.Change){}, acked: make(chan struct{})}
		c.subs[sub.id], c.byKey[key] = sub, sub
		if conn := c.conn; conn != nil {
			go c.send(conn, sub)
		}
	}
	c.nextW++
	wid := c.nextW
	sub.watchers[wid] = fn
	c.mu.Unlock()

	cancel := func() { c.unwatch(sub, wid) }
	wait, stop := context.WithTimeout(ctx, FeedReadyWait)
	defer stop()
	select {
	case <-sub.acked:
		if sub.err != nil {
			cancel()
			return nil, sub.err
		}
		return cancel, nil
	case <-wait.Done():
		cancel()
		return nil, fmt.Errorf("%w: Parse LiveQuery did not answer the subscription to %s", store.ErrUnavailable, class)
	}
}

// unwatch removes one watcher; the last one's subscription is ended.
func (c *lqConn) unwatch(sub *lqSub, wid uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := sub.watchers[wid]; !ok {
		return
	}
	delete(sub.watchers, wid)
	if len(sub.watchers) > 0 || c.subs[sub.id] != sub {
		return
	}
	delete(c.subs, sub.id)
	delete(c.byKey, sub.key)
	if conn := c.conn; conn != nil {
		go func() {
			ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
			defer cancel()
			_ = wsjson.Write(ctx, conn, map[string]any{"op": "unsubscribe", "requestId": sub.id})
		}()
	}
}

// send asks LiveQuery for sub on conn.
func (c *lqConn) send(conn *websocket.Conn, sub *lqSub) {
	msg := map[string]any{"op": "subscribe", "requestId": sub.id, "query": map[string]any{"className": sub.class, "where": map[string]any{}}}
	if sub.token != "" {
		msg["sessionToken"] = sub.token
	}
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	if err := wsjson.Write(ctx, conn, msg); err != nil && c.ctx.Err() == nil {
		c.s.log.Warn("parserest: LiveQuery subscribe not sent; it is sent again on reconnect", "class", sub.class, "err", err)
		conn.CloseNow() // the read loop sees it and reconnects
	}
}

// wsURL is the LiveQuery endpoint: the configured one, or the server URL
// with ws(s)://.
func (s *Store) wsURL() string {
	if s.cfg.LiveQueryURL != "" {
		return s.cfg.LiveQueryURL
	}
	u := s.base
	switch {
	case strings.HasPrefix(u, "https://"):
		return "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		return "ws://" + strings.TrimPrefix(u, "http://")
	}
	return u
}

// run keeps the connection up until the store closes.
func (c *lqConn) run() {
	defer close(c.done)
	backoff := 100 * time.Millisecond
	first := true
	for c.ctx.Err() == nil {
		connected, err := c.session(first)
		if c.ctx.Err() != nil {
			return
		}
		if connected {
			first = false
			backoff = 100 * time.Millisecond
		}
		c.s.log.Warn("parserest: LiveQuery connection lost; reconnecting", "store", c.s.display, "master", c.master, "err", err)
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-c.ctx.Done():
			return
		case <-time.After(wait):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

type lqMessage struct {
	Op        string       `json:"op"`
	RequestID int          `json:"requestId"`
	Object    parse.Object `json:"object"`
	Original  parse.Object `json:"original"`
	Code      int          `json:"code"`
	Error     string       `json:"error"`
}

// session runs one connection: connect, subscribe everything, relay the
// events. It reports whether it got connected.
func (c *lqConn) session(first bool) (bool, error) {
	dctx, dcancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer dcancel()
	conn, _, err := websocket.Dial(dctx, c.s.wsURL(), nil)
	if err != nil {
		return false, err
	}
	conn.SetReadLimit(c.s.cfg.MaxResponseBytes)
	defer conn.CloseNow()
	hello := map[string]any{"op": "connect", "applicationId": c.s.cfg.AppID}
	if c.master {
		hello["masterKey"] = c.s.cfg.MasterKey
	}
	if c.s.cfg.JavaScriptKey != "" {
		hello["javascriptKey"] = c.s.cfg.JavaScriptKey
	}
	if c.s.cfg.RESTKey != "" {
		hello["restAPIKey"] = c.s.cfg.RESTKey
	}
	if err := wsjson.Write(dctx, conn, hello); err != nil {
		return false, err
	}
	var m lqMessage
	if err := wsjson.Read(dctx, conn, &m); err != nil {
		return false, err
	}
	if m.Op != "connected" {
		err := fmt.Errorf("Parse LiveQuery refuses the connection: %s (code %d)", m.Error, m.Code)
		if !c.master {
			err = fmt.Errorf("%w; a connection without the master key needs a key LiveQuery accepts (%s, or %s)", err, EnvJSKey, EnvRESTKey)
		}
		c.failPending(err)
		return false, err
	}
	c.mu.Lock()
	c.conn = conn
	subs := make([]*lqSub, 0, len(c.subs))
	for _, sub := range c.subs {
		subs = append(subs, sub)
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.conn = nil
		c.mu.Unlock()
	}()
	for _, sub := range subs {
		if !first {
			// The changes made while the connection was down were not
			// seen: a resync once the subscription is back in place.
			c.mu.Lock()
			sub.resync = true
			c.mu.Unlock()
		}
		c.send(conn, sub)
	}
	for {
		var m lqMessage
		if err := wsjson.Read(c.ctx, conn, &m); err != nil {
			return true, err
		}
		c.handle(m)
	}
}

// failPending refuses the subscriptions still waiting for their first
// answer: the connection they wait for was refused.
func (c *lqConn) failPending(why error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, sub := range c.subs {
		if isClosed(sub.acked) {
			continue
		}
		sub.err = fmt.Errorf("%w: %v", store.ErrUnavailable, why)
		delete(c.subs, id)
		delete(c.byKey, sub.key)
		close(sub.acked)
	}
}

// deliver calls sub's watchers with ch.
func (c *lqConn) deliver(sub *lqSub, ch store.Change) {
	c.mu.Lock()
	fns := make([]func(store.Change), 0, len(sub.watchers))
	for _, fn := range sub.watchers {
		fns = append(fns, fn)
	}
	c.mu.Unlock()
	for _, fn := range fns {
		c.call(fn, ch)
	}
}

// call runs one watcher; a panic is logged, not spread.
func (c *lqConn) call(fn func(store.Change), ch store.Change) {
	defer func() {
		if r := recover(); r != nil {
			c.s.log.Error("parserest: change watcher panicked", "panic", r, "class", ch.Class)
		}
	}()
	fn(ch)
}

// errInvalidSession is LiveQuery's refusal of a subscription's session
// token.
var errInvalidSession = errors.New("invalid session token")

func (c *lqConn) handle(m lqMessage) {
	c.mu.Lock()
	sub := c.subs[m.RequestID]
	c.mu.Unlock()
	if sub == nil {
		if m.Op == "error" {
			c.s.log.Warn("parserest: LiveQuery error", "code", m.Code, "error", m.Error)
		}
		return
	}
	switch m.Op {
	case "subscribed":
		c.closeOnce(sub)
		c.mu.Lock()
		resync := sub.resync
		sub.resync = false
		c.mu.Unlock()
		if resync {
			c.deliver(sub, store.Change{Op: store.ChangeResync, Class: sub.class, Time: time.Now()})
		}
		return
	case "error":
		c.refused(sub, m)
		return
	}
	if m.Object == nil {
		return
	}
	ch := store.Change{Class: sub.class, ObjectID: object.ID(m.Object), Time: time.Now()}
	after, before := c.s.liveRow(c.ctx, sub.class, m.Object), c.s.liveRow(c.ctx, sub.class, m.Original)
	switch m.Op {
	case "create":
		ch.Op, ch.After = store.ChangeCreate, after
	case "update", "enter", "leave":
		ch.Op, ch.Before, ch.After = store.ChangeUpdate, before, after
	case "delete":
		ch.Op, ch.Before = store.ChangeDelete, after
	default:
		return
	}
	c.deliver(sub, ch)
}

// refused records LiveQuery's refusal of sub: a subscriber waiting for it
// gets the error; one already watching is told to read again (a resync)
// and the subscription is dropped (it is not notified any more: its
// credential no longer works).
func (c *lqConn) refused(sub *lqSub, m lqMessage) {
	var err error
	switch {
	case m.Code == codeInvalidSessionToken || strings.Contains(strings.ToLower(m.Error), "session token"):
		err = fmt.Errorf("%w: Parse LiveQuery refuses the subscriber's session for %s: %s (code %d)", store.ErrPermissionDenied, sub.class, m.Error, m.Code)
	case m.Code == codeOperationForbidden:
		err = fmt.Errorf("%w: Parse LiveQuery refuses class %s to this credential: %s (code %d); Parse Server checks the class's find permission on subscribe, even for the master key", store.ErrPermissionDenied, sub.class, m.Error, m.Code)
	default:
		err = fmt.Errorf("%w: Parse LiveQuery refuses class %s: %s (code %d)", store.ErrUnsupported, sub.class, m.Error, m.Code)
	}
	c.mu.Lock()
	if c.subs[sub.id] == sub {
		delete(c.subs, sub.id)
		delete(c.byKey, sub.key)
	}
	answered := isClosed(sub.acked)
	if !answered {
		sub.err = err
		close(sub.acked)
	}
	c.mu.Unlock()
	if answered {
		c.s.log.Warn("parserest: LiveQuery dropped a subscription", "class", sub.class, "err", err)
		c.deliver(sub, store.Change{Op: store.ChangeResync, Class: sub.class, Time: time.Now()})
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// closeOnce closes sub.acked unless it is closed (c.mu is held by the
// caller or taken here: the check and the close are one step).
func (c *lqConn) closeOnce(sub *lqSub) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !isClosed(sub.acked) {
		close(sub.acked)
	}
}

// liveRow turns a LiveQuery object into the store's REST form.
func (s *Store) liveRow(ctx context.Context, class string, obj parse.Object) parse.Object {
	if obj == nil {
		return nil
	}
	delete(obj, "className")
	delete(obj, "__type")
	sch, err := s.schemas.Shared(ctx, class)
	if err != nil {
		return obj
	}
	for k, v := range obj {
		if m, ok := v.(map[string]any); ok && (k == parse.FieldCreatedAt || k == parse.FieldUpdatedAt) && m["__type"] == "Date" {
			obj[k] = m["iso"]
		}
	}
	for name, fd := range sch.Fields { // as Find reports them
		if fd.Type == parse.TypeRelation {
			obj[name] = map[string]any{"__type": "Relation", "className": fd.TargetClass}
		}
	}
	return s.shape(sch, nil, []parse.Object{obj})[0]
}
