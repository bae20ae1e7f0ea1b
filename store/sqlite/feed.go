package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/hub"
	"github.com/parsemcp/parsemcp/store/internal/object"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// The change feed of the SQLite store (docs/CHANGEFEED.md).
//
// Writes made through this Store publish their changes themselves, after
// commit, with the rows before and after. Writes by other processes (or
// other Stores) on the same file are found by polling: one dedicated
// connection reads `PRAGMA data_version`, which moves when another
// connection commits; only then are the classes scanned for rows whose
// updatedAt reached the class's high-water mark. This process's own rows
// found by the scan are recognised by (class, objectId, updatedAt) and not
// reported twice. A delete by another process leaves no row to find: a
// class whose row count differs from what the known creates and deletes
// explain is reported as a ChangeResync for that class.

// DefaultPollInterval is how often the change feed checks the database
// file for commits by other connections.
const DefaultPollInterval = 200 * time.Millisecond

// ownTTL bounds how long this process remembers one of its own writes for
// the poller to recognise; the poller normally sees it at its next scan.
const ownTTL = 2 * time.Minute

// Option configures Open.
type Option func(*options)

type options struct {
	pollInterval time.Duration
	logger       *slog.Logger
	maxConns     int
}

// WithPollInterval sets how often the change feed polls the database file
// for writes by other processes (default DefaultPollInterval; a poll that
// finds nothing new is one PRAGMA). 0 or less keeps the default.
func WithPollInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.pollInterval = d
		}
	}
}

// WithLogger sets the logger of the change feed (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// feed is the Store's change feed state.
type feed struct {
	hub       hub.Hub
	on        atomic.Bool // a Watch was made: writes publish their changes
	startOnce sync.Once
	// commitMu is held around every commit (SQLite serializes commits
	// anyway): own changes are published in commit order, and the
	// poller's snapshot and the own-write counters agree.
	commitMu sync.Mutex

	mu         sync.Mutex
	polling    bool                 // a poller runs: own rows are remembered for it
	own        map[ownKey]time.Time // own writes the poller will see, and when
	marks      map[string]string    // each class's high-water updatedAt, as the poller last saw it
	ownCreates map[string]int64     // objects this Store created, per class, since Open
	ownDeletes map[string]int64

	stop context.CancelFunc
	done chan struct{}

	polls, scans atomic.Int64 // for tests: polls made, and those that scanned
}

type ownKey struct{ class, id, updatedAt string }

// Watch implements store.Feed: writes through this Store are reported with
// their rows before and after; writes by other processes on the same file
// within about one poll interval (After only; a delete or an unexplained
// row count as a ChangeResync for its class).
func (s *Store) Watch(fn func(store.Change)) (cancel func()) {
	cancel = s.feed.hub.Watch(fn)
	s.feed.on.Store(true)
	s.feed.startOnce.Do(s.startPoller)
	return cancel
}

var _ store.Feed = (*Store)(nil)

func (s *Store) logger() *slog.Logger {
	if s.opts.logger != nil {
		return s.opts.logger
	}
	return slog.Default()
}

// startPoller establishes the poller's baseline (so that what is committed
// after Watch returns is reported) and starts it. An in-memory database has
// no other connection: nothing to poll.
func (s *Store) startPoller() {
	if s.path == ":memory:" || s.closed.Load() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.feed.stop, s.feed.done = cancel, make(chan struct{})
	s.feed.mu.Lock()
	s.feed.polling = true
	s.feed.mu.Unlock()
	p := &poller{s: s, classes: map[string]*classState{}}
	if err := p.step(ctx); err != nil {
		s.logger().Warn("sqlite change feed: first poll failed; retrying (changes by other processes may be missed until then)", "err", err)
		p.lostBaseline = true
	}
	go p.run(ctx)
}

// stopFeed stops the poller and the hub (Close).
func (s *Store) stopFeed() {
	s.feed.startOnce.Do(func() {}) // no poller starts after this
	if s.feed.stop != nil {
		s.feed.stop()
		<-s.feed.done
	}
	s.feed.hub.Close()
}

// expect remembers own rows about to be committed, so that the poller does
// not report them again (rows below the class's mark it will never scan).
func (f *feed) expect(class string, rows []parse.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.polling {
		return
	}
	if f.own == nil {
		f.own = map[ownKey]time.Time{}
	}
	mark, known := f.marks[class]
	now := time.Now()
	for _, r := range rows {
		u, _ := r[parse.FieldUpdatedAt].(string)
		if known && u < mark {
			continue
		}
		f.own[ownKey{class, object.ID(r), u}] = now
	}
}

// commit commits tx, after remembering the rows of w's changes for the
// poller (expect); when it succeeds it counts the class's created and
// deleted objects and publishes the changes, all in commit order.
func (f *feed) commit(ctx context.Context, tx *sql.Tx, w sqlkit.Written) error {
	var after []parse.Object
	for _, c := range w.Changes {
		if c.After != nil {
			after = append(after, c.After)
		}
	}
	if len(after) > 0 {
		f.expect(w.Class, after)
	}
	f.commitMu.Lock()
	defer f.commitMu.Unlock()
	if err := tx.Commit(); err != nil {
		return wrapErr(ctx, err)
	}
	if w.Created != 0 || w.Deleted != 0 {
		f.mu.Lock()
		if f.ownCreates == nil {
			f.ownCreates, f.ownDeletes = map[string]int64{}, map[string]int64{}
		}
		f.ownCreates[w.Class] += int64(w.Created)
		f.ownDeletes[w.Class] += int64(w.Deleted)
		f.mu.Unlock()
	}
	if len(w.Changes) > 0 {
		now := time.Now().UTC()
		for i := range w.Changes {
			w.Changes[i].Time = now
		}
		f.hub.Publish(w.Changes...)
	}
	return nil
}

// classState is what the poller knows of one class.
type classState struct {
	mark   string          // highest updatedAt seen
	atMark map[string]bool // the objectIds seen with updatedAt == mark
	count  int64           // rows at the last scan
}

// poller finds the commits of other connections. Its fields belong to its
// goroutine (and to startPoller before that).
type poller struct {
	s            *Store
	db           *sql.DB   // its own pool of one read-only connection
	conn         *sql.Conn // data_version is per connection: always this one
	version      int64     // data_version at the last complete scan
	baseline     bool      // a first scan recorded the marks
	lostBaseline bool      // the first scan failed: report a resync once one succeeds
	classes      map[string]*classState
	prevCreates  map[string]int64 // the own counters at the last scan's snapshot
	prevDeletes  map[string]int64
	lastExpiry   time.Time
	lastErr      string
}

func (p *poller) run(ctx context.Context) {
	defer close(p.s.feed.done)
	defer p.closeConn()
	interval := p.s.opts.pollInterval
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := p.step(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if msg := err.Error(); msg != p.lastErr {
				p.s.logger().Warn("sqlite change feed: poll failed; retrying", "err", err)
				p.lastErr = msg
			}
			p.closeConn()
			continue
		}
		p.lastErr = ""
	}
}

func (p *poller) closeConn() {
	if p.conn != nil {
		p.conn.Close()
		p.conn = nil
	}
	if p.db != nil {
		p.db.Close()
		p.db = nil
	}
}

func (p *poller) open(ctx context.Context) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "query_only(1)")
	db, err := sql.Open("sqlite", fileURI(p.s.path)+"?"+q.Encode())
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return err
	}
	p.db, p.conn = db, conn
	p.version = -1 // a new connection: scan at once
	return nil
}

// step polls once: when data_version moved, it scans every class in one
// read snapshot and publishes what other connections changed.
func (p *poller) step(ctx context.Context) error {
	f := &p.s.feed
	p.expireOwn()
	if p.conn == nil {
		if err := p.open(ctx); err != nil {
			return err
		}
	}
	var v int64
	if err := p.conn.QueryRowContext(ctx, `PRAGMA data_version`).Scan(&v); err != nil {
		return err
	}
	f.polls.Add(1)
	if p.baseline && v == p.version {
		return nil
	}
	f.scans.Add(1)
	// The snapshot is taken, and the own counters read, with no own commit
	// in between: an own write is either in both or in neither.
	f.commitMu.Lock()
	tx, err := p.conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		f.commitMu.Unlock()
		return err
	}
	defer tx.Rollback()
	schemas, err := readSchemas(ctx, tx)
	if err != nil {
		f.commitMu.Unlock()
		return err
	}
	f.mu.Lock()
	creates, deletes := maps.Clone(f.ownCreates), maps.Clone(f.ownDeletes)
	f.mu.Unlock()
	f.commitMu.Unlock()

	var changes, resyncs []store.Change
	var seenOwn []ownKey
	states := make(map[string]*classState, len(schemas))
	for _, name := range slices.Sorted(maps.Keys(schemas)) {
		sch := schemas[name]
		var st *classState
		if old := p.classes[name]; old != nil {
			// A copy: a failed step leaves the state as it was.
			st = &classState{mark: old.mark, atMark: maps.Clone(old.atMark), count: old.count}
		} else {
			st = &classState{}
		}
		states[name] = st
		if !tableExists(ctx, tx, name) {
			continue // listed in _SCHEMA, no table (yet): nothing to scan
		}
		if !p.baseline { // the first scan only records where things stand
			if err := p.baselineClass(ctx, tx, sch, st); err != nil {
				return fmt.Errorf("scan %s: %w", name, err)
			}
			continue
		}
		found, own, resync, err := p.scanClass(ctx, tx, sch, st, creates[name]-p.prevCreates[name], deletes[name]-p.prevDeletes[name])
		if err != nil {
			return fmt.Errorf("scan %s: %w", name, err)
		}
		changes = append(changes, found...)
		seenOwn = append(seenOwn, own...)
		if resync {
			resyncs = append(resyncs, store.Change{Op: store.ChangeResync, Class: name, Time: time.Now().UTC()})
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	first := !p.baseline
	p.classes, p.prevCreates, p.prevDeletes = states, creates, deletes
	p.version, p.baseline = v, true
	f.mu.Lock()
	for _, k := range seenOwn {
		delete(f.own, k)
	}
	f.marks = make(map[string]string, len(states))
	for name, st := range states {
		f.marks[name] = st.mark
	}
	f.mu.Unlock()
	if first && p.lostBaseline {
		p.lostBaseline = false
		resyncs = []store.Change{{Op: store.ChangeResync, Time: time.Now().UTC()}}
	}
	sort.SliceStable(changes, func(i, j int) bool { return changes[i].Time.Before(changes[j].Time) })
	f.hub.Publish(append(changes, resyncs...)...)
	return nil
}

// baselineClass records the class's mark and row count without reading
// its rows.
func (p *poller) baselineClass(ctx context.Context, tx *sql.Tx, sch parse.Schema, st *classState) error {
	d := p.s.d
	table, upd := d.Ident(sch.ClassName), d.Ident(parse.FieldUpdatedAt)
	var mark sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT count(*), max(`+upd+`) FROM `+table).Scan(&st.count, &mark); err != nil {
		return err
	}
	st.mark, st.atMark = mark.String, map[string]bool{}
	if !mark.Valid {
		return nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+d.Ident(parse.FieldObjectID)+` FROM `+table+` WHERE `+upd+` = ?`, mark.String)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		st.atMark[id] = true
	}
	return rows.Err()
}

// scanClass reads the class's rows at or above its mark and its row count.
// It returns the other connections' changes, and whether the count shows a
// change it could not see (a delete, or a row written below the mark).
// ownCreated and ownDeleted are this Store's creates and deletes since the
// last scan.
func (p *poller) scanClass(ctx context.Context, tx *sql.Tx, sch parse.Schema, st *classState, ownCreated, ownDeleted int64) (found []store.Change, own []ownKey, resync bool, err error) {
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+p.s.d.Ident(sch.ClassName)).Scan(&n); err != nil {
		return nil, nil, false, err
	}
	q := &query.Query{ReadACL: query.NoACLFilter, Class: sch.ClassName, Limit: -1, Order: []query.OrderKey{{Field: parse.FieldUpdatedAt}, {Field: parse.FieldObjectID}}}
	if st.mark != "" {
		w, err := query.ParseWhere(sch, map[string]any{parse.FieldUpdatedAt: map[string]any{"$gte": map[string]any{"__type": "Date", "iso": st.mark}}})
		if err != nil {
			return nil, nil, false, err
		}
		q.Where = w
	}
	sqlText, args, fields := p.s.kit.FindSQL(sch, q)
	rows, err := p.s.kit.Rows(ctx, conn{tx}, sch, fields, sqlText, args)
	if err != nil {
		return nil, nil, false, err
	}
	f := &p.s.feed
	var foreignCreates int64
	mark, atMark := st.mark, st.atMark
	f.mu.Lock()
	for _, r := range rows {
		id := object.ID(r)
		u, _ := r[parse.FieldUpdatedAt].(string)
		if u == "" {
			continue // no updatedAt: never found again; the count reports it
		}
		if u == st.mark && st.atMark[id] {
			continue // seen at the last scan
		}
		if u != mark {
			mark, atMark = u, map[string]bool{}
		}
		atMark[id] = true
		key := ownKey{sch.ClassName, id, u}
		if _, ok := f.own[key]; ok {
			own = append(own, key) // forgotten once the scan succeeds
			continue
		}
		c := store.Change{Op: store.ChangeUpdate, Class: sch.ClassName, ObjectID: id, After: r}
		if created, _ := r[parse.FieldCreatedAt].(string); created > st.mark {
			c.Op = store.ChangeCreate
			foreignCreates++
		}
		if t, err := parse.ParseDate(u); err == nil {
			c.Time = t
		}
		found = append(found, c)
	}
	f.mu.Unlock()
	expected := st.count + ownCreated - ownDeleted + foreignCreates
	st.mark, st.atMark, st.count = mark, atMark, n
	return found, own, n != expected, nil
}

// expireOwn forgets own writes the poller never saw (rows rewritten before
// the next scan), at most every few seconds.
func (p *poller) expireOwn() {
	if time.Since(p.lastExpiry) < 5*time.Second {
		return
	}
	p.lastExpiry = time.Now()
	f := &p.s.feed
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, at := range f.own {
		if time.Since(at) > ownTTL {
			delete(f.own, k)
		}
	}
}

// readSchemas reads `_SCHEMA` in tx (not the cache: the poller needs the
// classes of its snapshot).
func readSchemas(ctx context.Context, tx *sql.Tx) (map[string]parse.Schema, error) {
	rows, err := tx.QueryContext(ctx, `SELECT "className", "schema" FROM "_SCHEMA"`)
	if err != nil {
		return nil, fmt.Errorf("read _SCHEMA: %w", err)
	}
	defer rows.Close()
	return sqlkit.ReadSchemaRows(rows)
}

// tableExists reports whether class has a table in tx's snapshot.
func tableExists(ctx context.Context, tx *sql.Tx, class string) bool {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, class).Scan(&n)
	return err != nil || n > 0 // on doubt, scan (and report the error)
}
