package federation

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/time/rate"
)

// Presence messages are handled at most presenceBurst at once per agent
// id, then one per presenceEvery; the limiters of at most presenceIDs
// agent ids are kept (a forgotten one starts with a full burst again).
const (
	presenceBurst = 5
	presenceEvery = time.Second
	presenceIDs   = 10000
)

// presenceGate rate-limits the handling of presence messages per agent
// id, so a flood of announcements for one id costs neither a tool-list
// fetch nor a change notification per message. A message over the limit
// is held, the latest one per id replacing an earlier held one, and
// handled as soon as the limit allows: the agent's last word is never
// lost, the ones in between may be.
type presenceGate struct {
	now   func() time.Time
	after func(time.Duration, func()) func() bool

	mu   sync.Mutex
	byID *simplelru.LRU[string, *gateEntry]

	deferred atomic.Int64 // messages held (and possibly replaced)
}

type gateEntry struct {
	lim  *rate.Limiter
	held func() // the latest message over the limit, nil when none waits
	seq  uint64 // messages admitted so far

	run  sync.Mutex // handles one message at a time, in order
	done uint64     // the seq of the last message handled
}

func newPresenceGate(now func() time.Time, after func(time.Duration, func()) func() bool) *presenceGate {
	g := &presenceGate{now: now, after: after}
	g.byID, _ = simplelru.NewLRU[string, *gateEntry](presenceIDs, nil)
	return g
}

// admit handles the message handle stands for now, or holds it until
// id's limit allows.
func (g *presenceGate) admit(id string, handle func()) {
	g.mu.Lock()
	e, ok := g.byID.Get(id)
	if !ok {
		e = &gateEntry{lim: rate.NewLimiter(rate.Every(presenceEvery), presenceBurst)}
		g.byID.Add(id, e)
	}
	e.seq++
	seq := e.seq
	if e.held == nil && e.lim.AllowN(g.now(), 1) {
		g.mu.Unlock()
		e.handle(seq, handle)
		return
	}
	g.deferred.Add(1)
	scheduled := e.held != nil
	e.held = func() { e.handle(seq, handle) }
	if !scheduled {
		now := g.now()
		delay := e.lim.ReserveN(now, 1).DelayFrom(now)
		g.after(delay, func() {
			g.mu.Lock()
			h := e.held
			e.held = nil
			g.mu.Unlock()
			h()
		})
	}
	g.mu.Unlock()
}

// handle runs message seq unless a later one of the same id ran already.
func (e *gateEntry) handle(seq uint64, handle func()) {
	e.run.Lock()
	defer e.run.Unlock()
	if seq <= e.done {
		return
	}
	e.done = seq
	handle()
}
