package mcpserver

import (
	"encoding/json"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The subscriptions/listen path of 2026-07-28 clients: the listen's request
// id as the transport hands it to the subscribe handlers, what holds each
// subscription (resources/subscribe and the listens), and the parameters of
// a notification that names its listen.

// listenIDMeta is the _meta key under which the transport hands the
// JSON-RPC id of a subscriptions/listen request to the subscribe handler
// (the SDK passes the listen's _meta to it): notifications for that
// listen carry the id as io.modelcontextprotocol/subscriptionId.
const listenIDMeta = "dev.parsemcp/listenId"

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

// holders is what holds a subscription that a listen holds:
// resources/subscribe (plain) and the listens, by request id.
type holders struct {
	plain bool
	ids   []json.RawMessage
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

// listenParams are the parameters of a notification for a
// subscriptions/listen stream: they name the listen request.
func listenParams(uri string, id json.RawMessage) json.RawMessage {
	b, err := json.Marshal(map[string]any{"uri": uri, "_meta": map[string]json.RawMessage{mcp.MetaKeySubscriptionID: id}})
	if err != nil {
		return nil
	}
	return b
}
