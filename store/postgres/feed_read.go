package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/store"
)

// Reading the change log: the start point, the batches read in one
// snapshot each, and the holes (sequence numbers of transactions still in
// progress) they track.

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

// done is the seq up to which every row is read (or known not to exist).
func (l *listener) done() int64 {
	if len(l.holes) > 0 {
		return l.holes[0].lo - 1
	}
	return l.max
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
