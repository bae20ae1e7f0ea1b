package parserest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// The change feed: Parse LiveQuery over its WebSocket. One connection
// holds one subscription per class (with the master key, so every change
// arrives whoever may read it: the governed layer decides per subscriber
// what each agent may see, as for the SQL stores). A dropped connection is
// reconnected with backoff and every class subscribed again; the changes
// in between are lost, so a reconnect publishes a resync (Class "": every
// class). New classes are subscribed when the schema shows them (at most
// a schema refresh later; a resync for the class then says so).

var _ store.Feed = (*Store)(nil)

// FeedReadyWait bounds how long Watch waits for the first LiveQuery
// subscriptions (changes committed after Watch returns are reported once
// they are in place).
var FeedReadyWait = 30 * time.Second

// classRefresh is how often the feed looks for new classes.
const classRefresh = 2 * time.Second

// Watch implements store.Feed through LiveQuery. Without the master key
// there is no feed: Parse Server would filter the events by a credential
// that is not the subscribers', so the feed refuses (logged once) rather
// than report a misleading subset.
func (s *Store) Watch(fn func(store.Change)) (cancel func()) {
	if s.startFeed() == nil {
		return func() {}
	}
	select {
	case <-s.feed.ready:
	case <-time.After(FeedReadyWait):
		s.log.Warn("parserest: LiveQuery subscriptions not ready; changes may be missed until they are", "store", s.display)
	}
	return s.feed.hub.Watch(fn)
}

type liveFeed struct {
	s      *Store
	hub    store.Hub
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{}

	readyOnce sync.Once
	mu        sync.Mutex
	byReq     map[int]string    // requestId → class
	classes   map[string]bool   // subscribed (or asked) on the current connection
	status    map[string]string // class → "" once subscribed, or why LiveQuery refused it
	pending   int               // subscriptions not acknowledged yet
	nextReq   int
	done      chan struct{}
}

// startFeed starts the feed once (with the master key).
func (s *Store) startFeed() *liveFeed {
	s.feedOnce.Do(func() {
		if s.cfg.MasterKey == "" {
			s.log.Error("parserest: no change feed without the master key: resource subscriptions are not notified of changes")
			return
		}
		s.feed = newLiveFeed(s)
		go s.feed.run()
	})
	return s.feed
}

var _ store.FeedCoverage = (*Store)(nil)

// Follows reports whether LiveQuery delivers class's changes: it waits
// (bounded by ctx and FeedReadyWait) until the class's subscription is
// acknowledged or refused. Parse Server 9 refuses a class whose find
// permission is not public, even to the master key.
func (s *Store) Follows(ctx context.Context, class string) error {
	f := s.startFeed()
	if f == nil {
		return fmt.Errorf("%w: no change feed without the Parse Server master key", store.ErrUnsupported)
	}
	if class == parse.ClassSession {
		return fmt.Errorf("%w: %s is not followed", store.ErrUnsupported, class)
	}
	deadline := time.Now().Add(FeedReadyWait)
	for {
		f.mu.Lock()
		why, known := f.status[class]
		f.mu.Unlock()
		if known {
			if why != "" {
				return fmt.Errorf("%w: Parse LiveQuery refuses class %s: %s; Parse Server checks the class's find permission on subscribe even for the master key", store.ErrUnsupported, class, why)
			}
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%w: the LiveQuery subscription of %s is not in place", store.ErrUnavailable, class)
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func newLiveFeed(s *Store) *liveFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &liveFeed{s: s, ctx: ctx, cancel: cancel, ready: make(chan struct{}), done: make(chan struct{})}
	f.hub.Logger = s.log
	return f
}

func (f *liveFeed) close() {
	f.cancel()
	<-f.done
	f.hub.Close()
}

// wsURL is the LiveQuery endpoint: the configured one, or the server URL
// with ws(s)://.
func (f *liveFeed) wsURL() string {
	if f.s.cfg.LiveQueryURL != "" {
		return f.s.cfg.LiveQueryURL
	}
	u := f.s.base
	switch {
	case strings.HasPrefix(u, "https://"):
		return "wss://" + strings.TrimPrefix(u, "https://")
	case strings.HasPrefix(u, "http://"):
		return "ws://" + strings.TrimPrefix(u, "http://")
	}
	return u
}

// run keeps a connection up until the feed closes.
func (f *liveFeed) run() {
	defer close(f.done)
	backoff := 100 * time.Millisecond
	first := true
	for f.ctx.Err() == nil {
		connected, err := f.session(first)
		if f.ctx.Err() != nil {
			return
		}
		if connected {
			first = false
			backoff = 100 * time.Millisecond
		}
		f.s.log.Warn("parserest: LiveQuery connection lost; reconnecting", "store", f.s.display, "err", err)
		wait := backoff/2 + rand.N(backoff/2+1)
		select {
		case <-f.ctx.Done():
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

// session runs one connection: connect, subscribe every class, relay the
// events. It reports whether it got connected.
func (f *liveFeed) session(first bool) (bool, error) {
	dctx, dcancel := context.WithTimeout(f.ctx, 30*time.Second)
	defer dcancel()
	conn, _, err := websocket.Dial(dctx, f.wsURL(), nil)
	if err != nil {
		return false, err
	}
	conn.SetReadLimit(f.s.cfg.MaxResponseBytes)
	defer conn.CloseNow()
	hello := map[string]any{"op": "connect", "applicationId": f.s.cfg.AppID, "masterKey": f.s.cfg.MasterKey}
	if f.s.cfg.JavaScriptKey != "" {
		hello["javascriptKey"] = f.s.cfg.JavaScriptKey
	}
	if f.s.cfg.RESTKey != "" {
		hello["restAPIKey"] = f.s.cfg.RESTKey
	}
	if err := wsjson.Write(dctx, conn, hello); err != nil {
		return false, err
	}
	var m lqMessage
	if err := wsjson.Read(dctx, conn, &m); err != nil {
		return false, err
	}
	if m.Op != "connected" {
		return false, fmt.Errorf("LiveQuery refused the connection: %s %d %s", m.Op, m.Code, m.Error)
	}
	f.mu.Lock()
	f.byReq, f.classes, f.status, f.pending = map[int]string{}, map[string]bool{}, map[string]string{}, 0
	f.mu.Unlock()
	if err := f.subscribeNew(f.ctx, conn); err != nil {
		return true, err
	}
	if !first {
		// Changes made while the connection was down were not seen.
		f.hub.Publish(store.Change{Op: store.ChangeResync, Time: time.Now()})
	}
	sctx, scancel := context.WithCancel(f.ctx)
	defer scancel()
	go func() { // subscribe classes created later
		t := time.NewTicker(classRefresh)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				if err := f.subscribeNew(sctx, conn); err != nil && sctx.Err() == nil {
					f.s.log.Warn("parserest: LiveQuery subscribe", "err", err)
				}
			}
		}
	}()
	for {
		var m lqMessage
		if err := wsjson.Read(f.ctx, conn, &m); err != nil {
			return true, err
		}
		f.handle(m)
	}
}

// subscribeNew subscribes the classes the schema has and the connection
// has not. The first time, a class found later than the start gets a
// resync (its changes before the subscription were not seen).
func (f *liveFeed) subscribeNew(ctx context.Context, conn *websocket.Conn) error {
	schemas, err := f.s.Schemas(ctx)
	if err != nil {
		return err
	}
	for _, sch := range schemas {
		if sch.ClassName == parse.ClassSession {
			continue // credentials; LiveQuery refuses it anyway
		}
		f.mu.Lock()
		if f.classes[sch.ClassName] {
			f.mu.Unlock()
			continue
		}
		f.nextReq++
		id := f.nextReq
		f.classes[sch.ClassName] = true
		f.byReq[id] = sch.ClassName
		f.pending++
		f.mu.Unlock()
		msg := map[string]any{"op": "subscribe", "requestId": id, "query": map[string]any{"className": sch.ClassName, "where": map[string]any{}}}
		if err := wsjson.Write(ctx, conn, msg); err != nil {
			return err
		}
	}
	f.mu.Lock()
	if f.pending == 0 {
		f.readyOnce.Do(func() { close(f.ready) })
	}
	f.mu.Unlock()
	return nil
}

func (f *liveFeed) handle(m lqMessage) {
	f.mu.Lock()
	class := f.byReq[m.RequestID]
	f.mu.Unlock()
	switch m.Op {
	case "subscribed", "error":
		if m.Op == "error" {
			f.s.log.Warn("parserest: LiveQuery error", "code", m.Code, "error", m.Error, "class", class)
			if m.RequestID == 0 {
				return
			}
		}
		f.mu.Lock()
		if class != "" && f.status != nil {
			f.status[class] = ""
			if m.Op == "error" {
				f.status[class] = fmt.Sprintf("%s (code %d)", m.Error, m.Code)
			}
		}
		f.pending--
		if f.pending <= 0 {
			f.readyOnce.Do(func() { close(f.ready) })
		}
		f.mu.Unlock()
		return
	}
	if class == "" || m.Object == nil {
		return
	}
	c := store.Change{Class: class, ObjectID: store.ObjectIDOf(m.Object), Time: time.Now()}
	after, before := f.row(class, m.Object), f.row(class, m.Original)
	switch m.Op {
	case "create":
		c.Op, c.After = store.ChangeCreate, after
	case "update", "enter", "leave":
		c.Op, c.Before, c.After = store.ChangeUpdate, before, after
	case "delete":
		c.Op, c.Before = store.ChangeDelete, after
	default:
		return
	}
	f.hub.Publish(c)
}

// row turns a LiveQuery object into the store's REST form.
func (f *liveFeed) row(class string, obj parse.Object) parse.Object {
	if obj == nil {
		return nil
	}
	delete(obj, "className")
	delete(obj, "__type")
	sch, err := f.s.schemas.Shared(f.ctx, class)
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
	return f.s.shape(sch, nil, []parse.Object{obj})[0]
}
