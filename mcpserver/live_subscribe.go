package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/resources"
	"github.com/parsemcp/parsemcp/store"
)

// The resources/subscribe and resources/unsubscribe handlers (which
// subscriptions/listen reaches too): the URI and visibility checks, the
// group a subscriber joins, and what it leaves.

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
