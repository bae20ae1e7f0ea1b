package subscribe

import (
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// DefaultWindow is the debounce window used when NewDebouncer gets none.
const DefaultWindow = 250 * time.Millisecond

// Key is the Debouncer key of one subscription: session, a NUL byte, uri.
// CancelSession relies on this shape.
func Key(session, uri string) string { return session + "\x00" + uri }

// SplitKey undoes Key. A key without a NUL byte is all session.
func SplitKey(key string) (session, uri string) {
	session, uri, _ = strings.Cut(key, "\x00")
	return session, uri
}

// Debouncer collapses bursts of events per key into one call of fire.
//
// Semantics (trailing edge, fixed from the first event): the first Trigger
// of a key arms it; further Triggers of that key while it is armed are
// coalesced; fire(key) runs window after that first Trigger, and the key is
// then disarmed, so the next Trigger starts a new burst. An event therefore
// waits at most window for its notification (plus scheduling), and a
// continuous stream of events yields one fire per window per key — never
// starvation, as a debounce that restarts the window on each event would
// cause.
//
// Because every key waits the same window, deadlines are in Trigger order:
// pending keys sit in one FIFO list that a single goroutine walks with a
// single timer, so 10,000+ pending keys cost one small struct each and no
// goroutine or runtime timer each. Cancel and CancelSession are O(1) per
// key removed.
//
// fire runs on that goroutine, one key at a time, never under the
// Debouncer's lock (it may call Trigger or Cancel). It should be quick —
// hand the send to the session's writer — since a slow fire delays every
// key due after it.
type Debouncer struct {
	window time.Duration
	fire   func(key string)
	clock  clockwork.Clock
	start  time.Time // the monotonic origin of item deadlines

	mu         sync.Mutex
	pending    map[string]*dItem
	bySession  map[string]*dItem // head of each session's list of pending items
	head, tail *dItem            // all pending items, in deadline order
	closed     bool

	wake      chan struct{} // the list went from empty to non-empty
	done      chan struct{} // closed by Close
	exited    chan struct{} // closed when the goroutine returns
	closeOnce sync.Once
}

type dItem struct {
	key, session string        // session is a prefix of key (shares its bytes)
	at           time.Duration // deadline, since Debouncer.start
	prev, next   *dItem        // the deadline list
	sprev, snext *dItem        // the session's list
}

// DebounceOption configures a Debouncer.
type DebounceOption func(*Debouncer)

// DebounceClock makes the Debouncer read the time and wait on c (tests
// pass a fake clock) instead of the system clock.
func DebounceClock(c clockwork.Clock) DebounceOption {
	return func(d *Debouncer) {
		if c != nil {
			d.clock = c
		}
	}
}

// NewDebouncer returns a running Debouncer that calls fire(key) window
// after the first Trigger(key) of each burst. A window ≤ 0 means
// DefaultWindow. Close it to stop its goroutine.
func NewDebouncer(window time.Duration, fire func(key string), opts ...DebounceOption) *Debouncer {
	if fire == nil {
		panic("subscribe: NewDebouncer with a nil fire function")
	}
	if window <= 0 {
		window = DefaultWindow
	}
	d := &Debouncer{
		window:    window,
		fire:      fire,
		clock:     clockwork.NewRealClock(),
		pending:   make(map[string]*dItem),
		bySession: make(map[string]*dItem),
		wake:      make(chan struct{}, 1),
		done:      make(chan struct{}),
		exited:    make(chan struct{}),
	}
	for _, o := range opts {
		o(d)
	}
	d.start = d.clock.Now()
	go d.run()
	return d
}

// Window returns the debounce window.
func (d *Debouncer) Window() time.Duration { return d.window }

// Trigger records an event for key: it arms key unless it is armed
// already. After Close it does nothing.
func (d *Debouncer) Trigger(key string) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	if _, ok := d.pending[key]; ok {
		d.mu.Unlock()
		return
	}
	session, _ := SplitKey(key)
	it := &dItem{key: key, session: session, at: d.clock.Since(d.start) + d.window}
	d.pending[key] = it
	// Append to the deadline list: every deadline is now+window with a
	// monotonic now read under the lock, so the tail is the latest.
	it.prev = d.tail
	if d.tail != nil {
		d.tail.next = it
	} else {
		d.head = it
	}
	d.tail = it
	// Push onto the session's list.
	if h := d.bySession[session]; h != nil {
		it.snext = h
		h.sprev = it
	}
	d.bySession[session] = it
	wasEmpty := d.head == it
	d.mu.Unlock()
	if wasEmpty {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// Armed reports whether key has a fire pending: a Trigger now would be
// coalesced into it. Callers use it to skip work for events that cannot
// produce another fire.
func (d *Debouncer) Armed(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.pending[key]
	return ok
}

// Cancel drops key's pending fire and reports whether there was one.
func (d *Debouncer) Cancel(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	it := d.pending[key]
	if it == nil {
		return false
	}
	d.remove(it)
	return true
}

// CancelSession drops the pending fires of every key of session (keys
// built with Key(session, …)) and returns how many it dropped: call it when
// the session goes away.
func (d *Debouncer) CancelSession(session string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for it := d.bySession[session]; it != nil; it = d.bySession[session] {
		d.remove(it)
		n++
	}
	return n
}

// Pending returns the number of armed keys.
func (d *Debouncer) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

// Close stops the Debouncer and drops the pending fires; a fire already
// running finishes first. Later Triggers do nothing. It is idempotent, and
// must not be called from fire (it waits for the goroutine that runs fire).
func (d *Debouncer) Close() {
	d.closeOnce.Do(func() {
		d.mu.Lock()
		d.closed = true
		clear(d.pending)
		clear(d.bySession)
		d.head, d.tail = nil, nil
		d.mu.Unlock()
		close(d.done)
	})
	<-d.exited
}

// remove unlinks it from every structure; d.mu is held.
func (d *Debouncer) remove(it *dItem) {
	delete(d.pending, it.key)
	if it.prev != nil {
		it.prev.next = it.next
	} else {
		d.head = it.next
	}
	if it.next != nil {
		it.next.prev = it.prev
	} else {
		d.tail = it.prev
	}
	if it.sprev != nil {
		it.sprev.snext = it.snext
	} else if it.snext != nil {
		d.bySession[it.session] = it.snext
	} else {
		delete(d.bySession, it.session)
	}
	if it.snext != nil {
		it.snext.sprev = it.sprev
	}
	*it = dItem{}
}

func (d *Debouncer) run() {
	defer close(d.exited)
	timer := d.clock.NewTimer(time.Hour)
	timer.Stop()
	var due []string
	for {
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			return
		}
		now := d.clock.Since(d.start)
		for d.head != nil && d.head.at <= now {
			due = append(due, d.head.key)
			d.remove(d.head)
		}
		wait := time.Duration(-1)
		if d.head != nil {
			wait = d.head.at - now
		}
		d.mu.Unlock()

		if len(due) > 0 {
			for _, k := range due {
				d.fire(k)
			}
			clear(due)
			due = due[:0]
			continue // firing took time: look at the clock again
		}
		if wait < 0 {
			select {
			case <-d.wake:
			case <-d.done:
				return
			}
			continue
		}
		// New items are always due after the head, so only the head's
		// deadline (or Close) needs waking for; a cancelled head costs
		// one early, empty pass.
		timer.Reset(wait)
		select {
		case <-timer.Chan():
		case <-d.done:
			timer.Stop()
			return
		}
	}
}
