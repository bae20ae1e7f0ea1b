package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/resources"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/subscribe"
)

// The route of the store's changes: from the feed to the notifier
// (publish), and from the notifier, or a group's own subscription, to the
// groups whose members could see the changed row (debounced).

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
