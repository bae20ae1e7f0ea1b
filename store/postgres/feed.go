package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/hub"
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
//
// This file holds the feed's options, state and public API and the
// in-process publication; feed_install.go installs the log, feed_prune.go
// prunes it, feed_listen.go holds the LISTEN connection and its loop,
// feed_read.go reads the log and feed_decode.go decodes its rows.

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
	hub       hub.Hub
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
