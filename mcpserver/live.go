package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
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
// parse://{Class}/count and parse://{Class}/samples).
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
}

// live routes the store's committed changes to the sessions subscribed to
// the resources they affect, one session at a time: the same URI shows
// different rows to different agents, so each subscriber is told only
// about rows it could see before or after the change.
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

	mu       sync.RWMutex
	sessions map[string]*liveSession
	// watched holds the sessions whose end is being waited for (one
	// goroutine each, until the session ends).
	watched map[string]bool
}

// liveSession is one session holding subscriptions: how to reach it, who
// it acts for, and the visibility rule of each class it watches.
type liveSession struct {
	ss    *mcp.ServerSession
	agent *agent.Agent
	mu    sync.Mutex
	vis   map[string]*agent.Visibility
}

func newLive(s *Server, o *LiveOptions) *live {
	if o == nil {
		o = &LiveOptions{}
	}
	l := &live{srv: s, log: s.log, index: subscribe.NewIndex(o.Limits), notifier: o.Notifier,
		dedup: subscribe.NewDedup(subscribe.DefaultDedupSize), sessions: map[string]*liveSession{}, watched: map[string]bool{}, origin: newCorrelationID()}
	if l.notifier == nil {
		l.notifier = subscribe.NewLocal()
	}
	window := o.Debounce
	if window <= 0 {
		window = subscribe.DefaultWindow
	}
	l.debounce = subscribe.NewDebouncer(window, l.fire)
	l.stops = append(l.stops, l.notifier.Listen(l.receive))
	if feed, ok := s.store.(store.Feed); ok {
		l.stops = append(l.stops, feed.Watch(l.publish))
	}
	return l
}

func (l *live) close() {
	for _, stop := range l.stops {
		stop()
	}
	l.debounce.Close()
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
	payload, err := json.Marshal(wireChange{Op: c.Op, Class: c.Class, ObjectID: c.ObjectID, Before: c.Before, After: c.After})
	if err != nil {
		l.log.Error("live: change not serializable", "class", c.Class, "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.notifier.Publish(ctx, subscribe.Message{ID: id, Payload: payload}); err != nil {
		// Delivered locally all the same; other instances resync when
		// their connection comes back.
		l.log.Warn("live: change not shared with other instances", "err", err)
	}
}

// receive handles one change from the notifier: each subscriber of the
// class's count and samples that could see the row before or after the
// change is scheduled for one notification (debounced).
func (l *live) receive(m subscribe.Message) {
	if m.ID == subscribe.ResyncID {
		// Changes may have been missed while the instances were cut off.
		l.resync("")
		return
	}
	if l.dedup.Seen(m.ID) {
		return
	}
	var c wireChange
	if err := json.Unmarshal(m.Payload, &c); err != nil {
		l.log.Warn("live: malformed change dropped", "err", err)
		return
	}
	if c.Op == store.ChangeResync {
		l.resync(c.Class)
		return
	}
	for _, uri := range []string{resources.URI(c.Class, resources.KindCount), resources.URI(c.Class, resources.KindSamples)} {
		for _, sid := range l.index.Sessions(uri) {
			if l.sees(sid, c) {
				l.debounce.Trigger(subscribe.Key(sid, uri))
			}
		}
	}
}

// resync schedules a notification of every subscribed URI of class
// (every class when ""), for subscribers who may see the class at all.
func (l *live) resync(class string) {
	for _, uri := range l.index.SubscribedURIs() {
		c, _, err := resources.ParseURI(uri)
		if err != nil || (class != "" && c != class) {
			continue
		}
		for _, sid := range l.index.Sessions(uri) {
			if l.session(sid) != nil {
				l.debounce.Trigger(subscribe.Key(sid, uri))
			}
		}
	}
}

func (l *live) session(sid string) *liveSession {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.sessions[sid]
}

// sees reports whether session sid could see the changed row before or
// after the change. It fails closed: when the rule cannot be decided in
// memory, only the row's state after the change counts, asked of the
// database; an error means no notification.
func (l *live) sees(sid string, c wireChange) bool {
	ls := l.session(sid)
	if ls == nil {
		return false
	}
	ls.mu.Lock()
	v := ls.vis[c.Class]
	ls.mu.Unlock()
	if v == nil {
		return false
	}
	if v.InMemory() {
		for _, row := range []parse.Object{c.Before, c.After} {
			if ok, err := v.Sees(row); err == nil && ok {
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
	ok, err := agent.NewScope(ls.agent, l.srv.store).CountsID(ctx, c.Class, c.ObjectID)
	if err != nil {
		l.log.Warn("live: visibility check failed; not notifying", "class", c.Class, "err", err)
	}
	return ok
}

// fire sends the debounced notification of one (session, uri).
func (l *live) fire(key string) {
	sid, uri := subscribe.SplitKey(key)
	ls := l.session(sid)
	if ls == nil || !l.index.Has(sid, uri) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := notifySession(ctx, ls.ss, "notifications/resources/updated", map[string]any{"uri": uri}); err != nil {
		// The session is gone: release what it held.
		l.log.Debug("live: delivery failed; pruning the session", "session", sid, "err", err)
		l.release(sid)
	}
}

// release drops everything a session holds.
func (l *live) release(sid string) {
	l.mu.Lock()
	delete(l.sessions, sid)
	l.mu.Unlock()
	l.index.RemoveSession(sid)
	l.debounce.CancelSession(sid)
}

// sessionKey names a session in the index: its Mcp-Session-Id, or for
// transports without one (stdio, in-memory) a key unique to the session.
func sessionKey(ss *mcp.ServerSession) string {
	if id := ss.ID(); id != "" {
		return id
	}
	return fmt.Sprintf("local-%p", ss)
}

// subscribe handles resources/subscribe.
func (l *live) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	a := agentFrom(ctx)
	if a == nil || req.Session == nil {
		return &jsonrpc.Error{Code: CodeUnauthorized, Message: "Unauthorized"}
	}
	class, err := subscribable(req.Params.URI)
	if err != nil {
		return err
	}
	vis, err := agent.NewScope(a, l.srv.store).Visibility(ctx, class)
	if err != nil {
		var ce *agent.ClassError
		if errors.As(err, &ce) {
			return invalidParams("cannot subscribe to %s: %v", req.Params.URI, err)
		}
		var de *agent.DeniedError
		if errors.As(err, &de) {
			return invalidParams("cannot subscribe to %s: %s", req.Params.URI, de.Msg)
		}
		return l.srv.internal("resources/subscribe", err)
	}
	sid := sessionKey(req.Session)
	if err := l.index.Subscribe(sid, req.Params.URI); err != nil {
		return invalidParams("%v", err)
	}
	l.mu.Lock()
	ls := l.sessions[sid]
	if ls == nil {
		ls = &liveSession{ss: req.Session, vis: map[string]*agent.Visibility{}}
		l.sessions[sid] = ls
	}
	// A session that unsubscribed from everything and subscribes again
	// is already being waited for.
	watch := !l.watched[sid]
	l.watched[sid] = true
	l.mu.Unlock()
	ls.mu.Lock()
	ls.agent = a
	ls.vis[class] = vis
	ls.mu.Unlock()
	if watch {
		// Disconnect, DELETE or idle timeout: release the subscriptions.
		go func() {
			_ = req.Session.Wait()
			l.mu.Lock()
			delete(l.watched, sid)
			l.mu.Unlock()
			l.release(sid)
		}()
	}
	return nil
}

// unsubscribe handles resources/unsubscribe (idempotent).
func (l *live) unsubscribe(_ context.Context, req *mcp.UnsubscribeRequest) error {
	if req.Session == nil {
		return nil
	}
	sid := sessionKey(req.Session)
	l.index.Unsubscribe(sid, req.Params.URI)
	l.debounce.Cancel(subscribe.Key(sid, req.Params.URI))
	if len(l.index.URIs(sid)) == 0 {
		l.mu.Lock()
		delete(l.sessions, sid)
		l.mu.Unlock()
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
