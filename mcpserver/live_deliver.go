package mcpserver

import (
	"context"
	"encoding/json"
	"sync"
	"time"
)

// Delivery of the notifications: when a group's window closes its members
// go to the pool of senders; a send that takes longer than the send timeout
// costs its session, and its sender is replaced.

// sendBatch is a share of one group's notification of uri: entry i goes
// to sessions[i], naming the listen listen[i] (nil: none).
type sendBatch struct {
	uri      string
	params   json.RawMessage // {"uri": …}
	sessions []*liveSession
	listen   []json.RawMessage
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
		st.cur, st.since = ls, l.tm.now()
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
	now := l.tm.now()
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
		// Released before any sender can take a batch that holds it: a
		// sender that wrote to it would wait for the stuck write's lock
		// until the janitor gave up on that send too.
		l.releaseSession(ls)
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
		go ls.ss.Close()
	}
}
