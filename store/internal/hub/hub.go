// Package hub is the dispatcher of a backend's change feed: it delivers
// published changes to the watchers in order, on one goroutine.
package hub

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/parsemcp/parsemcp/store"
)

// Hub delivers published changes to its watchers on one goroutine, in the
// order they were published; a backend implements store.Feed with it. A watcher
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
	c   store.Change
}

type hubWatcher struct {
	fn   func(store.Change)
	from uint64 // the last change published before it was registered
	off  atomic.Bool
}

// Watch registers fn (see store.Feed.Watch). After cancel returns fn is not called
// again, except for a call already running. Watch on a closed hub does
// nothing.
func (h *Hub) Watch(fn func(store.Change)) (cancel func()) {
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
func (h *Hub) Publish(cs ...store.Change) {
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
func (h *Hub) call(w *hubWatcher, c store.Change) {
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
