package store

import (
	"fmt"
	"log/slog"
	"strings"
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

// SelectIDsSQL renders the read of the rows of sch whose objectId is in ids
// (not empty), every field, as FindSQL reads rows: a backend reads back, in
// the writing transaction, what a Create committed.
func SelectIDsSQL(d query.Dialect, sch parse.Schema, ids []string) (sqlText string, args []any, fields []string) {
	fields = ReadFields(sch, nil)
	b := &query.Builder{D: d}
	phs := make([]string, len(ids))
	for i, id := range ids {
		phs[i] = b.Param(id)
	}
	sqlText = "SELECT " + selectList(d, sch, fields) + " FROM " + d.Ident(sch.ClassName) +
		" WHERE " + d.Ident(parse.FieldObjectID) + " IN (" + strings.Join(phs, ", ") + ")"
	return sqlText, b.Args, fields
}

// DecodeColumns builds the REST object of a row given as its columns by
// name (a row the database serialized, as a change log holds it), as
// DecodeRow builds it from a find's row. conv turns a non-null column value
// into what c.Value reads for the field; `_rperm` and `_wperm` go to
// c.Perms as they are. A missing column is NULL; columns that are not
// fields of sch are ignored.
func DecodeColumns(c ColumnCodec, sch parse.Schema, cols map[string]any, conv func(f parse.Field, v any) (any, error)) (parse.Object, error) {
	fields := ReadFields(sch, nil)
	vals := make([]any, 0, len(fields)+1)
	for _, name := range fields {
		f := sch.Fields[name]
		switch {
		case name == parse.FieldACL:
			vals = append(vals, cols["_rperm"], cols["_wperm"])
		case f.Type == parse.TypeRelation:
		default:
			v := cols[name]
			if v != nil && conv != nil {
				var err error
				if v, err = conv(f, v); err != nil {
					return nil, fmt.Errorf("class %s field %s: %w", sch.ClassName, name, err)
				}
			}
			vals = append(vals, v)
		}
	}
	return DecodeRow(c, sch, fields, vals)
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

// ReadBack reads the rows of ids as Find returns them, in the order of
// ids, chunk ids per statement; run executes one statement (in the
// caller's transaction). A missing id is an error.
func ReadBack(d query.Dialect, sch parse.Schema, ids []string, chunk int, run func(sqlText string, args []any, fields []string) ([]parse.Object, error)) ([]parse.Object, error) {
	byID := make(map[string]parse.Object, len(ids))
	for start := 0; start < len(ids); start += chunk {
		sqlText, args, fields := SelectIDsSQL(d, sch, ids[start:min(start+chunk, len(ids))])
		rows, err := run(sqlText, args, fields)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			byID[ObjectIDOf(r)] = r
		}
	}
	out := make([]parse.Object, len(ids))
	for i, id := range ids {
		if out[i] = byID[id]; out[i] == nil {
			return nil, fmt.Errorf("read back %s %s: row not found", sch.ClassName, id)
		}
	}
	return out, nil
}
