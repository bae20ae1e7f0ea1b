package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Pruning of the change log: rows older than the retention are deleted and
// the highest pruned seq is recorded (by the listener, or PruneChanges).

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

func (l *listener) pruneEvery() time.Duration {
	return min(max(l.s.retention()/4, time.Second), time.Minute)
}
