package subscribe

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Message is one opaque change message fanned out between server
// instances. ID identifies the change, so a message that arrives twice
// (database feed and Redis) can be dropped with Dedup. Listeners share
// Payload: they must not modify it, and a publisher must not modify it
// after Publish.
type Message struct {
	ID      string
	Payload []byte
	// Value, when set by the publisher, is what Payload encodes, in
	// memory: listeners in the publishing process may use it instead of
	// decoding Payload. It never leaves the process (other instances get
	// Payload only), and listeners must not modify it.
	Value any
}

// ResyncID is the ID of a message that means "changes may have been
// missed": NewRedis delivers one (empty payload) to its listeners after it
// re-establishes its subscription. The server should then notify every
// subscribed URI (Index.SubscribedURIs), letting clients re-read. Anyone
// may publish it to make every instance resync.
const ResyncID = "resync"

// ErrClosed is returned by Publish on a closed Notifier.
var ErrClosed = errors.New("subscribe: notifier closed")

// Notifier fans change messages out to every server instance.
//
// Publish delivers m to the Listen callbacks of every instance, this one
// included, exactly once per instance. Callbacks may run concurrently with
// each other (the publisher's goroutine for its own messages, a receiver
// goroutine for others'), and should return quickly. Listen's cancel stops
// further calls (one already running may finish); it is idempotent. Close
// stops the Notifier; Publish then fails with ErrClosed.
type Notifier interface {
	Publish(ctx context.Context, m Message) error
	Listen(fn func(Message)) (cancel func())
	Close() error
}

// WaitReady waits until n can receive other instances' messages: for a
// Redis notifier, until its first subscription is confirmed (messages
// published before that are not seen). Notifiers that are ready at once
// (NewLocal) return nil immediately.
func WaitReady(ctx context.Context, n Notifier) error {
	r, ok := n.(interface{ Ready() <-chan struct{} })
	if !ok {
		return nil
	}
	select {
	case <-r.Ready():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// listeners is a copy-on-write list of callbacks: deliver reads it without
// a lock.
type listeners struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*listener]
}

type listener struct{ fn func(Message) }

func (ls *listeners) add(fn func(Message)) (cancel func()) {
	if fn == nil {
		return func() {}
	}
	l := &listener{fn: fn}
	ls.mu.Lock()
	var cur []*listener
	if p := ls.list.Load(); p != nil {
		cur = *p
	}
	next := append(cur[:len(cur):len(cur)], l)
	ls.list.Store(&next)
	ls.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			ls.mu.Lock()
			defer ls.mu.Unlock()
			p := ls.list.Load()
			if p == nil {
				return
			}
			next := make([]*listener, 0, len(*p))
			for _, o := range *p {
				if o != l {
					next = append(next, o)
				}
			}
			ls.list.Store(&next)
		})
	}
}

func (ls *listeners) deliver(m Message) {
	p := ls.list.Load()
	if p == nil {
		return
	}
	for _, l := range *p {
		l.fn(m)
	}
}

// Local is the in-process Notifier: Publish calls every Listen callback of
// this process, synchronously on the publisher's goroutine.
type Local struct {
	ls     listeners
	closed atomic.Bool
}

// NewLocal returns an in-process Notifier (one server instance).
func NewLocal() Notifier { return &Local{} }

// Publish calls every listener with m, then returns; ErrClosed after Close,
// ctx's error when ctx is already done.
func (l *Local) Publish(ctx context.Context, m Message) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	l.ls.deliver(m)
	return nil
}

// Listen registers fn; cancel unregisters it.
func (l *Local) Listen(fn func(Message)) (cancel func()) { return l.ls.add(fn) }

// Close makes later Publishes fail with ErrClosed.
func (l *Local) Close() error {
	l.closed.Store(true)
	return nil
}

// DefaultDedupSize is the number of message IDs a Dedup remembers by
// default.
const DefaultDedupSize = 4096

// Dedup remembers the IDs of the most recent messages (an LRU) to drop a
// message seen twice, e.g. once from the database change feed and once
// from Redis. It is safe for concurrent use.
type Dedup struct {
	c *lru.Cache[string, struct{}]
}

// NewDedup remembers up to size IDs (size ≤ 0 means DefaultDedupSize).
func NewDedup(size int) *Dedup {
	if size <= 0 {
		size = DefaultDedupSize
	}
	c, err := lru.New[string, struct{}](size)
	if err != nil { // only for size ≤ 0, excluded above
		panic(err)
	}
	return &Dedup{c: c}
}

// Seen reports whether id is among the recent IDs, and records it. An
// empty id and ResyncID are never duplicates (Seen returns false and does
// not record them).
func (d *Dedup) Seen(id string) bool {
	if id == "" || id == ResyncID {
		return false
	}
	found, _ := d.c.ContainsOrAdd(id, struct{}{})
	return found
}
