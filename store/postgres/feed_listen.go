package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/parsemcp/parsemcp/store"
)

// The feed's listener: its dedicated LISTEN connection, the loop that waits
// for notifications, reads and reconnects, and the wait for the change log
// to be installed.

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
