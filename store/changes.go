package store

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The change feed: stores that can tell which rows changed publish each
// committed change to their watchers (docs/CHANGEFEED.md).

// ChangeOp is what a Change did.
type ChangeOp string

// The operations of a Change.
const (
	ChangeCreate ChangeOp = "create"
	ChangeUpdate ChangeOp = "update"
	ChangeDelete ChangeOp = "delete"
	// ChangeResync: changes may have been missed (a reconnect, a write by
	// another process that could not be read back); Class "" means every
	// class.
	ChangeResync ChangeOp = "resync"
)

// Change is one committed change of one object.
type Change struct {
	// ID is unique and stable for one committed change across processes
	// when the backend can give one (PostgreSQL: "pg:" and the change
	// log's sequence number), for deduplication; "" when there is none.
	ID       string
	Op       ChangeOp
	Class    string
	ObjectID string
	// Before is the row before the change, in the REST JSON form Find
	// returns, including "ACL" and every field (raw, ungoverned); nil on
	// create, resync, or when the backend cannot know it.
	Before parse.Object
	// After is the row after the change; nil on delete and resync.
	After parse.Object
	Time  time.Time
}

// Feed is implemented by stores that publish their committed changes.
type Feed interface {
	// Watch calls fn, in commit order, for every change committed after
	// Watch returns, until cancel is called. fn runs on the feed's
	// goroutine and must not block for long. Safe for concurrent use;
	// several watchers may be registered.
	//
	// Every watcher receives the same Change values: fn must not modify
	// Before or After (copy them first).
	Watch(fn func(Change)) (cancel func())
}

// FeedReach says which changes a Feed reports.
type FeedReach int

// The reaches of a Feed.
const (
	// FeedNone: nothing can be reported: the change feed is not installed
	// and this store may not write either (a read-only role).
	FeedNone FeedReach = iota
	// FeedOwnWrites: only the writes made through this store are reported
	// (the change feed is not installed).
	FeedOwnWrites
	// FeedAll: every committed change, by any client.
	FeedAll
)

// FeedScoped is implemented by a Feed that may not report every change.
type FeedScoped interface {
	// FeedReach says what Watch reports now; below FeedAll, the error
	// says why (it wraps ErrFeedNotInstalled).
	FeedReach(ctx context.Context) (FeedReach, error)
}

// CredentialFeed is implemented by stores whose backend filters change
// events by each subscriber's own credential (Parse LiveQuery): a
// subscriber's changes of a class come through a subscription made with
// its credential, instead of through Feed, which reports every change
// for the governed layer to filter.
type CredentialFeed interface {
	// WatchClass calls fn with the changes of class the identity of
	// readACL may read (query.NoACLFilter: every change, with the master
	// key), until cancel is called; a ChangeResync says changes may have
	// been missed. It returns once the subscription is in place, or with
	// why it cannot be: an identity the backend cannot subscribe as (the
	// error wraps ErrPermissionDenied), a class it does not follow
	// (ErrUnsupported), or a backend it cannot reach (ErrUnavailable). fn
	// runs on the feed's goroutine and must not block for long.
	WatchClass(ctx context.Context, class string, readACL query.ACLFilter, fn func(Change)) (cancel func(), err error)
}

// Hub delivers published changes to its watchers on one goroutine, in the
// order they were published; a backend implements Feed with it. A watcher
// receives only the changes published after it was registered. The zero
// Hub is ready to use; its goroutine starts with the first Watch.
type Hub struct {
	// Logger receives the panics of watchers (nil: slog.Default()).
	Logger *slog.Logger

	mu        sync.Mutex
	watchers  []*hubWatcher
	published uint64 // changes published so far
	queue     []queuedChange
	wake      chan struct{}
	running   bool
	closed    bool
	stopped   atomic.Bool // closed, read without the lock while delivering
}

type queuedChange struct {
	seq uint64
	c   Change
}

type hubWatcher struct {
	fn   func(Change)
	from uint64 // the last change published before it was registered
	off  atomic.Bool
}

// Watch registers fn (see Feed.Watch). After cancel returns fn is not called
// again, except for a call already running. Watch on a closed hub does
// nothing.
func (h *Hub) Watch(fn func(Change)) (cancel func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || fn == nil {
		return func() {}
	}
	w := &hubWatcher{fn: fn, from: h.published}
	h.watchers = append(h.watchers, w)
	if !h.running {
		h.running = true
		h.wake = make(chan struct{}, 1)
		go h.run(h.wake)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			w.off.Store(true)
			h.mu.Lock()
			defer h.mu.Unlock()
			for i, x := range h.watchers {
				if x == w {
					h.watchers = append(h.watchers[:i:i], h.watchers[i+1:]...)
					break
				}
			}
		})
	}
}

// Watching reports whether a watcher is registered.
func (h *Hub) Watching() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.watchers) > 0
}

// Publish queues changes for the watchers registered now. It never waits
// for them; with no watcher it does nothing.
func (h *Hub) Publish(cs ...Change) {
	if len(cs) == 0 {
		return
	}
	h.mu.Lock()
	if h.closed || len(h.watchers) == 0 {
		h.mu.Unlock()
		return
	}
	for _, c := range cs {
		h.published++
		h.queue = append(h.queue, queuedChange{h.published, c})
	}
	wake := h.wake
	h.mu.Unlock()
	select {
	case wake <- struct{}{}:
	default:
	}
}

// Close drops the pending changes and the watchers and stops the hub's
// goroutine; later calls to Watch and Publish do nothing.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	h.stopped.Store(true)
	h.queue, h.watchers = nil, nil
	if h.running {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

func (h *Hub) run(wake chan struct{}) {
	for range wake {
		for {
			h.mu.Lock()
			if h.closed {
				h.mu.Unlock()
				return
			}
			batch := h.queue
			h.queue = nil
			ws := append([]*hubWatcher(nil), h.watchers...)
			h.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			for _, q := range batch {
				for _, w := range ws {
					if q.seq > w.from && !w.off.Load() && !h.stopped.Load() {
						h.call(w, q.c)
					}
				}
			}
		}
	}
}

// call runs one watcher; a panic is logged, not spread: the feed goes on.
func (h *Hub) call(w *hubWatcher, c Change) {
	defer func() {
		if r := recover(); r != nil {
			log := h.Logger
			if log == nil {
				log = slog.Default()
			}
			log.Error("change feed watcher panicked", "panic", r, "class", c.Class, "op", c.Op)
		}
	}()
	w.fn(c)
}

// ObjectIDOf returns obj's objectId ("" when it has none).
func ObjectIDOf(obj parse.Object) string {
	id, _ := obj[parse.FieldObjectID].(string)
	return id
}

// CloneObject deep-copies obj (nil stays nil): a backend hands watchers
// copies of the rows it also returns to its caller.
func CloneObject(obj parse.Object) parse.Object {
	if obj == nil {
		return nil
	}
	return parse.CloneJSON(map[string]any(obj)).(map[string]any)
}
