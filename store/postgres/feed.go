package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// The change feed of the PostgreSQL store (docs/CHANGEFEED.md).
//
// InstallChangeFeed (the `parsemcp migrate` command) adds a change log
// table and a trigger on every class table: each committed insert, update
// and delete, by any client, is a row of the log holding the row before and
// after (to_jsonb), and a NOTIFY on ChangeChannel whose payload is only the
// log's sequence number. Watch reads the log on a dedicated connection
// that LISTENs: after a reconnect it reads on from the last row it saw, so
// nothing committed meanwhile is lost unless the log was pruned past it
// (then a ChangeResync). Without the log, Watch reports the writes made
// through this Store only, and says so in the log.

// Names of the change feed's objects (in the store's schema).
const (
	// ChangeTable is the change log.
	ChangeTable = "_parsemcp_changes"
	// ChangeChannel is the NOTIFY channel; the payload is a log sequence
	// number.
	ChangeChannel = "parsemcp_changes"
	// DefaultChangeRetention is how long log rows are kept.
	DefaultChangeRetention = time.Hour
	// FeedApplicationName is the application_name of the feed's LISTEN
	// connection (pg_stat_activity).
	FeedApplicationName = "parsemcp-changefeed"

	changeStateTable = "_parsemcp_changes_state" // one row: the highest pruned seq
	changeFunction   = "_parsemcp_change"
	rowTrigger       = "_parsemcp_change"
	truncateTrigger  = "_parsemcp_truncate"
	// startWindow is how far below the newest log row Watch looks for
	// rows of transactions still in progress when it starts.
	startWindow = 1000
	readBatch   = 500
	maxHoleSets = 64 // hole ranges queried per read
)

// Option configures Open.
type Option func(*options)

type options struct {
	retention    time.Duration
	logger       *slog.Logger
	installCheck time.Duration
	maxConns     int // pool.go
}

// WithChangeRetention sets how long the change log keeps rows before the
// feed prunes them (default DefaultChangeRetention). A watcher that is
// disconnected for longer gets a ChangeResync.
func WithChangeRetention(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.retention = d
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

// WithInstallCheck sets how often a feed running without the change log
// checks whether it was installed since (default 30s).
func WithInstallCheck(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.installCheck = d
		}
	}
}

func (s *Store) logger() *slog.Logger {
	if s.opts.logger != nil {
		return s.opts.logger
	}
	return slog.Default()
}

func (s *Store) retention() time.Duration {
	if s.opts.retention > 0 {
		return s.opts.retention
	}
	return DefaultChangeRetention
}

// feed is the Store's change feed state.
type feed struct {
	hub       store.Hub
	startOnce sync.Once
	// inProcess: a Watch was made and the change log is not in use, so
	// writes through this Store publish their own changes.
	inProcess atomic.Bool
	logMode   atomic.Bool // the change log is read
	// commitMu orders in-process publication with commits, and the switch
	// to the log with both.
	commitMu sync.Mutex

	stop context.CancelFunc
	done chan struct{}

	// beforeConnect, when set (tests), runs before each connection of the
	// listener.
	beforeConnect func()
	schemaReload  time.Time // the listener's last forced schema reload

}

var _ store.Feed = (*Store)(nil)

// Watch implements store.Feed. With the change log installed
// (InstallChangeFeed), every committed change by any client is reported,
// with an ID "pg:<seq>"; without it, only the writes made through this
// Store (a warning is logged; see ChangeFeedInstalled).
func (s *Store) Watch(fn func(store.Change)) (cancel func()) {
	cancel = s.feed.hub.Watch(fn)
	s.feed.startOnce.Do(s.startFeed)
	return cancel
}

// FeedUsesLog reports whether Watch reads the change log (false: no Watch
// yet, or only this Store's own writes are reported).
func (s *Store) FeedUsesLog() bool { return s.feed.logMode.Load() }

// ChangeFeedInstalled reports whether the change log and its trigger
// function exist in the store's schema.
func (s *Store) ChangeFeedInstalled(ctx context.Context) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT to_regclass(format('%I.%I', current_schema(), $1::text)) IS NOT NULL
		AND to_regclass(format('%I.%I', current_schema(), $2::text)) IS NOT NULL
		AND to_regprocedure(format('%I.%I()', current_schema(), $3::text)) IS NOT NULL`,
		ChangeTable, changeStateTable, changeFunction).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("postgres: change feed status: %w", err)
	}
	return ok, nil
}

var _ store.FeedScoped = (*Store)(nil)

// FeedReach implements store.FeedScoped: FeedAll with the change log
// installed; otherwise FeedOwnWrites, or FeedNone when the role may not
// write to any class table (or the session is read-only), with an error
// wrapping store.ErrFeedNotInstalled.
func (s *Store) FeedReach(ctx context.Context) (store.FeedReach, error) {
	installed, err := s.ChangeFeedInstalled(ctx)
	if err != nil {
		return store.FeedNone, err
	}
	if installed {
		return store.FeedAll, nil
	}
	var readOnly bool
	err = s.pool.QueryRow(ctx, `SELECT current_setting('transaction_read_only') = 'on'
		OR NOT coalesce(bool_or(has_table_privilege(t.c, 'INSERT, UPDATE, DELETE')), false)
		FROM (SELECT to_regclass(format('%I.%I', current_schema(), "className")) AS c FROM "_SCHEMA") t WHERE t.c IS NOT NULL`).Scan(&readOnly)
	if err != nil {
		return store.FeedNone, fmt.Errorf("postgres: change feed status: %w", err)
	}
	if readOnly {
		return store.FeedNone, fmt.Errorf("%w, and this database role may not write, so no change could be reported", store.ErrFeedNotInstalled)
	}
	return store.FeedOwnWrites, fmt.Errorf("%w: only the writes made through this server are reported", store.ErrFeedNotInstalled)
}

func (s *Store) startFeed() {
	if s.closed.Load() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &s.feed
	f.stop, f.done = cancel, make(chan struct{})
	l := &listener{s: s}
	cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
	defer ccancel()
	installed, err := s.ChangeFeedInstalled(cctx)
	if err != nil || !installed {
		if err == nil {
			err = errors.New("the change log is not installed (run `parsemcp migrate`)")
		}
		s.logger().Warn("postgres change feed: reporting only the writes made by this process; changes by other clients (Parse Server, other servers) are not seen",
			"reason", err)
		f.inProcess.Store(true)
		go l.waitInstall(ctx)
		return
	}
	f.logMode.Store(true)
	if err := l.connect(cctx); err != nil {
		s.logger().Warn("postgres change feed: cannot listen yet; retrying (changes until then are reported as a resync)", "err", err)
		l.resyncOnStart = true
	} else if err := l.begin(cctx); err != nil {
		s.logger().Warn("postgres change feed: cannot read the change log yet; retrying", "err", err)
		l.closeConn()
		l.resyncOnStart = true
	}
	go l.run(ctx)
}

// stopFeed stops the listener and the hub (Close).
func (s *Store) stopFeed() {
	s.feed.startOnce.Do(func() {})
	if s.feed.stop != nil {
		s.feed.stop()
		<-s.feed.done
	}
	s.feed.hub.Close()
}

// inProcessWanted reports, at the start of a write, whether it should
// prepare its change for in-process publication.
func (f *feed) inProcessWanted() bool { return f.inProcess.Load() }

// commit commits tx. When the write prepared changes (in-process mode), it
// publishes them in commit order, unless the feed switched to the log
// meanwhile (which then reports them).
func (f *feed) commit(ctx context.Context, tx pgx.Tx, changes []store.Change) error {
	if changes == nil {
		if err := tx.Commit(ctx); err != nil {
			return wrapErr(ctx, err)
		}
		return nil
	}
	f.commitMu.Lock()
	defer f.commitMu.Unlock()
	if err := tx.Commit(ctx); err != nil {
		return wrapErr(ctx, err)
	}
	if f.inProcess.Load() {
		now := time.Now().UTC()
		for i := range changes {
			changes[i].Time = now
		}
		f.hub.Publish(changes...)
	}
	return nil
}

// ---------------------------------------------------------------- install

// FeedInstall reports what InstallChangeFeed did.
type FeedInstall struct {
	Schema       string   // the schema holding the classes and the log
	CreatedTable bool     // the change log was created (false: it existed)
	Function     string   // "created" or "replaced": the trigger function
	Attached     []string // classes whose triggers were added now
	Present      []string // classes that had them already
	NoTable      []string // classes in _SCHEMA without a table (skipped)
}

// InstallChangeFeed installs the change log, its trigger function and the
// triggers on every class table listed in `_SCHEMA`, in one transaction;
// running it again adds only what is missing (the function is replaced by
// the current version). Classes created later through a Store get their
// triggers at once; classes created by other servers (Parse Server) need it
// to run again. It needs the rights to create tables, functions and
// triggers; the function runs as its owner (SECURITY DEFINER), so writers
// need no rights on the log.
func (s *Store) InstallChangeFeed(ctx context.Context) (FeedInstall, error) {
	var out FeedInstall
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return out, fmt.Errorf("postgres: install change feed: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var schema *string
	if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return out, err
	}
	if schema == nil {
		return out, errors.New("postgres: install change feed: no current schema (search_path names no existing schema)")
	}
	out.Schema = *schema
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('parsemcp_changes:' || current_schema()))`); err != nil {
		return out, err
	}
	S := pgx.Identifier{out.Schema}.Sanitize()
	log := S + "." + pgx.Identifier{ChangeTable}.Sanitize()
	state := S + "." + pgx.Identifier{changeStateTable}.Sanitize()
	fn := S + "." + pgx.Identifier{changeFunction}.Sanitize()
	var exists, fnExists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, to_regprocedure($2) IS NOT NULL`, log, fn+"()").Scan(&exists, &fnExists); err != nil {
		return out, err
	}
	out.CreatedTable = !exists
	out.Function = "created"
	if fnExists {
		out.Function = "replaced"
	}
	stmts := []string{
		`CREATE TABLE IF NOT EXISTS ` + log + ` (
			seq bigserial PRIMARY KEY,
			op text NOT NULL,
			class text NOT NULL,
			object_id text,
			before jsonb,
			after jsonb,
			at timestamptz NOT NULL DEFAULT now())`,
		`CREATE INDEX IF NOT EXISTS ` + pgx.Identifier{ChangeTable + "_at"}.Sanitize() + ` ON ` + log + ` (at)`,
		`CREATE TABLE IF NOT EXISTS ` + state + ` (id int PRIMARY KEY CHECK (id = 1), pruned_upto bigint NOT NULL DEFAULT 0)`,
		`INSERT INTO ` + state + ` (id) VALUES (1) ON CONFLICT DO NOTHING`,
		triggerFunctionSQL(fn, log),
	}
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st); err != nil {
			return out, fmt.Errorf("postgres: install change feed: %w", err)
		}
	}
	rows, err := tx.Query(ctx, `SELECT "className", to_regclass(format('%I.%I', $1::text, "className")) IS NOT NULL FROM "_SCHEMA" ORDER BY "className"`, out.Schema)
	if err != nil {
		return out, err
	}
	type class struct {
		name  string
		table bool
	}
	var classes []class
	for rows.Next() {
		var c class
		if err := rows.Scan(&c.name, &c.table); err != nil {
			rows.Close()
			return out, err
		}
		classes = append(classes, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return out, err
	}
	for _, c := range classes {
		switch {
		case c.name == ChangeTable || c.name == changeStateTable || strings.HasPrefix(c.name, "_Join:"):
			continue
		case !c.table:
			out.NoTable = append(out.NoTable, c.name)
			continue
		}
		added, err := attachTriggers(ctx, tx, out.Schema, c.name)
		if err != nil {
			return out, err
		}
		if added {
			out.Attached = append(out.Attached, c.name)
		} else {
			out.Present = append(out.Present, c.name)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return out, fmt.Errorf("postgres: install change feed: %w", err)
	}
	return out, nil
}

// triggerFunctionSQL is the trigger function: one log row per changed row
// (a statement-level TRUNCATE logs a resync of the class) and a NOTIFY
// carrying only the log row's seq, so no row size meets NOTIFY's limit.
// The logged rows leave out Parse Server's internal columns (a leading
// "_": `_hashed_password`, `_email_verify_token`, `_auth_data_*` …) but
// the ACL's `_rperm`/`_wperm`: no Change carries them, so the log holds no
// copy of them either.
func triggerFunctionSQL(fn, log string) string {
	strip := func(rec string) string {
		return `(SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each(to_jsonb(` + rec + `)) e WHERE left(e.key, 1) <> '_' OR e.key IN ('_rperm', '_wperm'))`
	}
	return `CREATE OR REPLACE FUNCTION ` + fn + `() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $parsemcp$
DECLARE
	n bigint;
	o jsonb;
	r jsonb;
BEGIN
	IF TG_LEVEL = 'STATEMENT' THEN
		INSERT INTO ` + log + ` (op, class) VALUES ('resync', TG_TABLE_NAME) RETURNING seq INTO n;
	ELSIF TG_OP = 'INSERT' THEN
		r := ` + strip("NEW") + `;
		INSERT INTO ` + log + ` (op, class, object_id, after) VALUES ('create', TG_TABLE_NAME, r->>'objectId', r) RETURNING seq INTO n;
	ELSIF TG_OP = 'UPDATE' THEN
		o := ` + strip("OLD") + `;
		r := ` + strip("NEW") + `;
		INSERT INTO ` + log + ` (op, class, object_id, before, after) VALUES ('update', TG_TABLE_NAME, r->>'objectId', o, r) RETURNING seq INTO n;
	ELSE
		o := ` + strip("OLD") + `;
		INSERT INTO ` + log + ` (op, class, object_id, before) VALUES ('delete', TG_TABLE_NAME, o->>'objectId', o) RETURNING seq INTO n;
	END IF;
	PERFORM pg_notify('` + ChangeChannel + `', n::text);
	RETURN NULL;
END
$parsemcp$`
}

// attachTriggers adds the change triggers missing on a class table and
// reports whether it added any.
func attachTriggers(ctx context.Context, tx pgx.Tx, schema, class string) (bool, error) {
	S := pgx.Identifier{schema}.Sanitize()
	table := S + "." + pgx.Identifier{class}.Sanitize()
	fn := S + "." + pgx.Identifier{changeFunction}.Sanitize() + "()"
	rows, err := tx.Query(ctx, `SELECT tgname FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname IN ($2, $3)`, table, rowTrigger, truncateTrigger)
	if err != nil {
		return false, fmt.Errorf("postgres: triggers of %s: %w", class, err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return false, fmt.Errorf("postgres: triggers of %s: %w", class, err)
	}
	added := false
	if !slices.Contains(have, rowTrigger) {
		if _, err := tx.Exec(ctx, `CREATE TRIGGER `+pgx.Identifier{rowTrigger}.Sanitize()+` AFTER INSERT OR UPDATE OR DELETE ON `+table+` FOR EACH ROW EXECUTE FUNCTION `+fn); err != nil {
			return false, fmt.Errorf("postgres: change trigger on %s: %w", class, err)
		}
		added = true
	}
	if !slices.Contains(have, truncateTrigger) {
		if _, err := tx.Exec(ctx, `CREATE TRIGGER `+pgx.Identifier{truncateTrigger}.Sanitize()+` AFTER TRUNCATE ON `+table+` FOR EACH STATEMENT EXECUTE FUNCTION `+fn); err != nil {
			return false, fmt.Errorf("postgres: truncate trigger on %s: %w", class, err)
		}
		added = true
	}
	return added, nil
}

// attachIfInstalled adds the change triggers to a class table created in
// tx when the change feed is installed (CreateClass).
func attachIfInstalled(ctx context.Context, tx pgx.Tx, class string) error {
	var schema *string
	var installed bool
	if err := tx.QueryRow(ctx, `SELECT current_schema(), to_regprocedure(format('%I.%I()', current_schema(), $1::text)) IS NOT NULL`, changeFunction).Scan(&schema, &installed); err != nil {
		return err
	}
	if !installed || schema == nil {
		return nil
	}
	_, err := attachTriggers(ctx, tx, *schema, class)
	return err
}

// PruneChanges deletes the change log rows older than olderThan and records
// the highest pruned seq (a watcher that had not read that far reports a
// ChangeResync). It returns how many rows it deleted. The feed prunes by
// itself (WithChangeRetention); this is for operators and tests.
func (s *Store) PruneChanges(ctx context.Context, olderThan time.Duration) (int64, error) {
	return pruneChanges(ctx, s.pool, olderThan)
}

type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

func pruneChanges(ctx context.Context, db execer, olderThan time.Duration) (int64, error) {
	var n int64
	err := db.QueryRow(ctx, `WITH d AS (
			DELETE FROM `+pgx.Identifier{ChangeTable}.Sanitize()+` WHERE at < now() - make_interval(secs => $1) RETURNING seq
		), u AS (
			UPDATE `+pgx.Identifier{changeStateTable}.Sanitize()+` SET pruned_upto = greatest(pruned_upto, (SELECT max(seq) FROM d))
			WHERE id = 1 AND EXISTS (SELECT 1 FROM d)
		)
		SELECT count(*) FROM d`, olderThan.Seconds()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune change log: %w", err)
	}
	return n, nil
}

// ---------------------------------------------------------------- listener

// hole is a range of log sequence numbers not seen yet below the highest
// one seen: rows of transactions still in progress (or rolled back).
//
// The transaction that took a missing number had its xid before it took
// the number, so before the snapshot that saw a higher number committed;
// until is an xid assigned after that snapshot, hence above the writer's.
// Once a snapshot's xmin reaches until, every such writer has ended, and a
// read in that snapshot that still misses the range proves it empty. (The
// snapshot's own xmax would not do: it is the latest completed xid + 1, and
// a younger writer still running may be above it.)
type hole struct {
	lo, hi int64
	until  int64
}

// listener reads the change log; its fields belong to its goroutine (and
// to startFeed before that).
type listener struct {
	s             *Store
	conn          *pgx.Conn
	started       bool   // a start point is set
	resyncOnStart bool   // the first start point came late: report a resync
	max           int64  // highest seq seen
	holes         []hole // sorted, disjoint, below max
	lastPrune     time.Time
	lastErr       string
}

// done is the seq up to which every row is read (or known not to exist).
func (l *listener) done() int64 {
	if len(l.holes) > 0 {
		return l.holes[0].lo - 1
	}
	return l.max
}

func (l *listener) closeConn() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		l.conn.Close(ctx)
		cancel()
		l.conn = nil
	}
}

// connect opens the dedicated connection (not from the pool) and LISTENs.
func (l *listener) connect(ctx context.Context) error {
	if hook := l.s.feed.beforeConnect; hook != nil {
		hook()
	}
	cfg := l.s.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = FeedApplicationName
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `LISTEN `+pgx.Identifier{ChangeChannel}.Sanitize()); err != nil {
		conn.Close(ctx)
		return err
	}
	l.conn = conn
	return nil
}

// begin sets the start point: every row visible now was committed before
// Watch returned and is skipped; rows of transactions in progress now, just
// below the newest row, are holes to read when they commit.
func (l *listener) begin(ctx context.Context) error {
	tx, err := l.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var top, pruned int64
	if err := tx.QueryRow(ctx, `SELECT (SELECT coalesce(max(seq), 0) FROM `+pgx.Identifier{ChangeTable}.Sanitize()+`),
			(SELECT coalesce(max(pruned_upto), 0) FROM `+pgx.Identifier{changeStateTable}.Sanitize()+`)`).Scan(&top, &pruned); err != nil {
		return err
	}
	rows, err := tx.Query(ctx, `SELECT seq FROM `+pgx.Identifier{ChangeTable}.Sanitize()+` WHERE seq > $1 ORDER BY seq`, top-startWindow)
	if err != nil {
		return err
	}
	seen, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	l.holes = nil
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	next := max(top-startWindow, pruned) + 1
	for _, seq := range seen {
		if seq > next {
			l.holes = append(l.holes, hole{next, seq - 1, 0})
		}
		next = max(next, seq+1)
	}
	if len(l.holes) > 0 {
		until, err := l.xidAfter(ctx)
		if err != nil {
			return err
		}
		for i := range l.holes {
			l.holes[i].until = until
		}
	}
	l.max, l.started = top, true
	return nil
}

// xidAfter returns a new xid: it is above the xid of every transaction
// that had one when the last snapshot was taken. (This spends an xid; the
// listener asks only when a read found new holes, which needs a concurrent
// writer transaction, so it never spends more xids than the writers.)
func (l *listener) xidAfter(ctx context.Context) (int64, error) {
	var x int64
	err := l.conn.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&x)
	return x, err
}

func (l *listener) run(ctx context.Context) {
	defer close(l.s.feed.done)
	defer l.closeConn()
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		if l.conn == nil {
			if err := l.reconnect(ctx); err != nil {
				if ctx.Err() != nil {
					return
				}
				l.warn("postgres change feed: reconnect failed; retrying", err, "in", backoff)
				l.closeConn()
				select {
				case <-ctx.Done():
					return
				case <-time.After(backoff):
				}
				backoff = min(backoff*2, 5*time.Second)
				continue
			}
			backoff = 100 * time.Millisecond
			l.lastErr = ""
		}
		wait := 5 * time.Second
		if len(l.holes) > 0 {
			wait = 50 * time.Millisecond
		}
		err := l.waitNotification(ctx, wait)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = l.read(ctx)
		}
		if err == nil && time.Since(l.lastPrune) > l.pruneEvery() {
			l.lastPrune = time.Now()
			if _, perr := pruneChanges(ctx, l.conn, l.s.retention()); perr != nil && ctx.Err() == nil {
				l.warn("postgres change feed: prune failed", perr)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			l.warn("postgres change feed: connection lost; reconnecting", err)
			l.closeConn()
		}
	}
}

func (l *listener) warn(msg string, err error, args ...any) {
	if s := err.Error(); s != l.lastErr {
		l.lastErr = s
		l.s.logger().Warn(msg, append([]any{"err", err}, args...)...)
	}
}

func (l *listener) pruneEvery() time.Duration {
	return min(max(l.s.retention()/4, time.Second), time.Minute)
}

// reconnect connects, LISTENs, and reads everything after the last row
// seen (or sets the start point, the first time).
func (l *listener) reconnect(ctx context.Context) error {
	if err := l.connect(ctx); err != nil {
		return err
	}
	if !l.started {
		if err := l.begin(ctx); err != nil {
			return err
		}
		if l.resyncOnStart {
			l.resyncOnStart = false
			l.s.feed.hub.Publish(store.Change{Op: store.ChangeResync, Time: time.Now().UTC()})
		}
		return nil
	}
	return l.read(ctx)
}

// waitNotification waits up to wait for a notification and then drains
// those already received: one read serves them all. A timeout is not an
// error.
func (l *listener) waitNotification(ctx context.Context, wait time.Duration) error {
	for {
		wctx, cancel := context.WithTimeout(ctx, wait)
		_, err := l.conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil && (pgconn.Timeout(err) || errors.Is(err, context.DeadlineExceeded)) && !l.conn.IsClosed() {
				return nil
			}
			return err
		}
		wait = time.Millisecond
	}
}

type logRow struct {
	seq           int64
	op, class     string
	objectID      *string
	before, after *string
	at            time.Time
}

// read reads the log rows not seen yet, in batches, and publishes them.
func (l *listener) read(ctx context.Context) error {
	for {
		full, err := l.readBatch(ctx)
		if err != nil || !full {
			return err
		}
	}
}

// readBatch reads one batch in one snapshot: the rows above max and those
// filling holes, in seq order. It reports whether the batch was full.
func (l *listener) readBatch(ctx context.Context) (bool, error) {
	tx, err := l.conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return false, err
	}
	defer tx.Rollback(ctx)
	var xmin, pruned int64
	if err := tx.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint,
			(SELECT coalesce(max(pruned_upto), 0) FROM `+pgx.Identifier{changeStateTable}.Sanitize()+`)`).Scan(&xmin, &pruned); err != nil {
		return false, err
	}
	where := []string{"seq > $1"}
	args := []any{l.max}
	queried := slices.Clone(l.holes[:min(len(l.holes), maxHoleSets)])
	for _, h := range queried {
		args = append(args, h.lo, h.hi)
		where = append(where, fmt.Sprintf("seq BETWEEN $%d AND $%d", len(args)-1, len(args)))
	}
	args = append(args, readBatch)
	rows, err := tx.Query(ctx, `SELECT seq, op, class, object_id, before::text, after::text, at FROM `+pgx.Identifier{ChangeTable}.Sanitize()+
		` WHERE `+strings.Join(where, " OR ")+` ORDER BY seq LIMIT $`+strconv.Itoa(len(args)), args...)
	if err != nil {
		return false, err
	}
	var batch []logRow
	for rows.Next() {
		var r logRow
		if err := rows.Scan(&r.seq, &r.op, &r.class, &r.objectID, &r.before, &r.after, &r.at); err != nil {
			rows.Close()
			return false, err
		}
		batch = append(batch, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	full := len(batch) == readBatch
	// New holes need an xid bound taken after this snapshot (before any
	// state changes, so that an error leaves the state as it was).
	var until int64
	for i, m := 0, l.max; i < len(batch); i++ {
		if seq := batch[i].seq; seq > m {
			if seq > m+1 && until == 0 {
				if until, err = l.xidAfter(ctx); err != nil {
					return false, err
				}
			}
			m = seq
		}
	}

	var out []store.Change
	// Rows pruned before this listener read them: say so first.
	if pruned > l.done() {
		out = append(out, store.Change{Op: store.ChangeResync, Time: time.Now().UTC()})
		l.trimHoles(pruned)
		l.max = max(l.max, pruned)
	}
	for _, r := range batch {
		if r.seq <= pruned {
			continue // reported by the resync above
		}
		if r.seq > l.max {
			if r.seq > l.max+1 {
				l.holes = append(l.holes, hole{l.max + 1, r.seq - 1, until})
			}
			l.max = r.seq
		} else {
			l.fill(r.seq)
		}
		out = append(out, l.s.decodeLogRow(ctx, r))
	}
	// Every hole range this read covered, whose possible writers had all
	// ended before its snapshot, is empty for good.
	limit := int64(math.MaxInt64)
	if full {
		limit = batch[len(batch)-1].seq
	}
	var keep []hole
	for _, h := range l.holes {
		if xmin >= h.until && h.hi < limit && coveredBy(h, queried) {
			continue
		}
		keep = append(keep, h)
	}
	l.holes = keep
	l.s.feed.hub.Publish(out...)
	return full, nil
}

// coveredBy reports whether h lies inside one of the ranges.
func coveredBy(h hole, ranges []hole) bool {
	for _, q := range ranges {
		if h.lo >= q.lo && h.hi <= q.hi {
			return true
		}
	}
	return false
}

// fill removes seq from the holes.
func (l *listener) fill(seq int64) {
	for i, h := range l.holes {
		if seq < h.lo || seq > h.hi {
			continue
		}
		var parts []hole
		if seq > h.lo {
			parts = append(parts, hole{h.lo, seq - 1, h.until})
		}
		if seq < h.hi {
			parts = append(parts, hole{seq + 1, h.hi, h.until})
		}
		l.holes = slices.Replace(l.holes, i, i+1, parts...)
		return
	}
}

// trimHoles drops the holes at or below seq.
func (l *listener) trimHoles(seq int64) {
	var keep []hole
	for _, h := range l.holes {
		switch {
		case h.hi <= seq:
		case h.lo <= seq:
			keep = append(keep, hole{seq + 1, h.hi, h.until})
		default:
			keep = append(keep, h)
		}
	}
	l.holes = keep
}

// waitInstall runs while the change log is missing: it checks now and then
// whether it was installed, and then switches to it.
func (l *listener) waitInstall(ctx context.Context) {
	every := l.s.opts.installCheck
	if every <= 0 {
		every = 30 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			close(l.s.feed.done)
			return
		case <-t.C:
		}
		installed, err := l.s.ChangeFeedInstalled(ctx)
		if err != nil || !installed {
			continue
		}
		if err := l.connect(ctx); err != nil {
			l.closeConn()
			continue
		}
		// No in-process publication during the switch: what committed
		// before it was published and is below the start point; what
		// commits after it is read from the log.
		f := &l.s.feed
		f.commitMu.Lock()
		err = l.begin(ctx)
		if err == nil {
			f.logMode.Store(true)
			f.inProcess.Store(false)
		}
		f.commitMu.Unlock()
		if err != nil {
			l.closeConn()
			continue
		}
		l.s.logger().Info("postgres change feed: the change log is installed; reading it")
		l.run(ctx)
		return
	}
}

// ---------------------------------------------------------------- decoding

// decodeLogRow turns a log row into a Change, the rows in the REST form
// Find returns (decoded with the class's current schema). A row that
// cannot be decoded becomes a resync of its class. It runs on the
// listener's goroutine.
func (s *Store) decodeLogRow(ctx context.Context, r logRow) store.Change {
	c := store.Change{ID: "pg:" + strconv.FormatInt(r.seq, 10), Op: store.ChangeOp(r.op), Class: r.class, Time: r.at.UTC()}
	if r.objectID != nil {
		c.ObjectID = *r.objectID
	}
	switch c.Op {
	case store.ChangeCreate, store.ChangeUpdate, store.ChangeDelete:
	default:
		c.Op, c.ObjectID = store.ChangeResync, ""
		return c
	}
	before, err := parseLoggedRow(r.before)
	var after map[string]any
	if err == nil {
		after, err = parseLoggedRow(r.after)
	}
	if err == nil {
		sch := s.feedSchema(ctx, r.class, before, after)
		if c.Before, err = decodeColumns(sch, before); err == nil {
			c.After, err = decodeColumns(sch, after)
		}
	}
	if err != nil {
		s.logger().Warn("postgres change feed: undecodable change; reported as a resync of its class", "seq", r.seq, "class", r.class, "err", err)
		return store.Change{ID: c.ID, Op: store.ChangeResync, Class: r.class, Time: c.Time}
	}
	return c
}

// feedSchema returns the class's schema for decoding rows holding cols. A
// class or a column (other than Parse Server's internal "_" columns) the
// cached schema does not know means another server changed `_SCHEMA`: the
// cache is reloaded, at most once a second. A class that is not in
// `_SCHEMA` (any more) is decoded with its system fields only.
func (s *Store) feedSchema(ctx context.Context, class string, cols ...map[string]any) parse.Schema {
	stale := func(sch parse.Schema, err error) bool {
		if err != nil {
			return true
		}
		for _, m := range cols {
			for k := range m {
				if _, ok := sch.Fields[k]; !ok && !strings.HasPrefix(k, "_") {
					return true
				}
			}
		}
		return false
	}
	sch, err := s.schemas.Shared(ctx, class)
	if stale(sch, err) && time.Since(s.feed.schemaReload) > store.SchemaTTL {
		s.feed.schemaReload = time.Now()
		s.schemas.Invalidate()
		sch, err = s.schemas.Shared(ctx, class)
	}
	if err != nil {
		return parse.NewSchema(class)
	}
	return sch
}

// parseLoggedRow parses a row as to_jsonb wrote it (nil: none).
func parseLoggedRow(raw *string) (map[string]any, error) {
	if raw == nil {
		return nil, nil
	}
	var cols map[string]any
	if err := json.Unmarshal([]byte(*raw), &cols); err != nil {
		return nil, err
	}
	return cols, nil
}

// decodeColumns decodes a logged row (nil: none) as Find returns it.
func decodeColumns(sch parse.Schema, cols map[string]any) (parse.Object, error) {
	if cols == nil {
		return nil, nil
	}
	return sqlkit.DecodeColumns(codec, sch, cols, jsonColumn)
}

// jsonColumn turns a column as to_jsonb renders it into the value pgx reads
// for that column (what decodeValue expects).
func jsonColumn(f parse.Field, v any) (any, error) {
	switch f.Type {
	case parse.TypeNumber:
		if s, ok := v.(string); ok { // NaN, Infinity
			return strconv.ParseFloat(s, 64)
		}
	case parse.TypeDate:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected %T for a timestamp", v)
		}
		return parseTimestamp(s)
	case parse.TypeGeoPoint:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected %T for a point", v)
		}
		var p pgtype.Point
		if err := p.Scan(s); err != nil {
			return nil, err
		}
		return p, nil
	case parse.TypePolygon:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("unexpected %T for a polygon", v)
		}
		var p pgtype.Polygon
		if err := p.Scan(s); err != nil {
			return nil, err
		}
		return p, nil
	}
	return v, nil
}

// parseTimestamp reads a timestamp as to_jsonb renders it (ISO 8601, with
// an offset for timestamptz; none for a timestamp column, taken as UTC).
func parseTimestamp(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a timestamp", s)
}
