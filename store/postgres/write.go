package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/prepare"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// encoder writes PostgreSQL's columns.
var encoder = sqlkit.ColumnEncoder{
	Value: func(f parse.Field, n parse.Normalized) (any, error) { return encodeValue(f, n), nil },
	Perms: func(entries []string) any {
		if entries == nil {
			return nil
		}
		return entries
	},
	Date: func(t time.Time) any { return t },
}

// conn runs the kit's statements on the pool or in a transaction.
type conn struct {
	q interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
		Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	}
}

// Query hands each row's values to row.
func (c conn) Query(ctx context.Context, sqlText string, args []any, row func(vals []any) error) error {
	return c.query(ctx, sqlText, args, row, false)
}

// QueryRawText is Query with text columns as *sqlkit.RawText: their bytes
// in pgx's read buffer, not strings (sqlkit.RawTextQuerier). The slice of
// values is the same for every row.
func (c conn) QueryRawText(ctx context.Context, sqlText string, args []any, row func(vals []any) error) error {
	return c.query(ctx, sqlText, args, row, true)
}

func (c conn) query(ctx context.Context, sqlText string, args []any, row func(vals []any) error, rawText bool) error {
	rows, err := c.q.Query(ctx, sqlText, args...)
	if err != nil {
		return wrapErr(ctx, err)
	}
	defer rows.Close()
	r := newRowReader(rows, rawText)
	defer r.release()
	return sqlkit.Each(ctx, rows, r.next, row, wrapErr)
}

// Exec runs a statement returning no rows.
func (c conn) Exec(ctx context.Context, sqlText string, args ...any) error {
	if _, err := c.q.Exec(ctx, sqlText, args...); err != nil {
		return wrapErr(ctx, err)
	}
	return nil
}

// writeTx is a write transaction.
type writeTx struct {
	conn
	tx  pgx.Tx
	s   *Store
	ctx context.Context // the write's, for Rollback
}

func (s *Store) beginWrite(ctx context.Context) (*writeTx, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &writeTx{conn: conn{tx}, tx: tx, s: s, ctx: ctx}, nil
}

// Watched reports whether the write should prepare its change for
// in-process publication (see feed.inProcessWanted).
func (t *writeTx) Watched() bool { return t.s.feed.inProcessWanted() }

// Commit commits through the feed (see feed.commit).
func (t *writeTx) Commit(ctx context.Context, w sqlkit.Written) error {
	return t.s.feed.commit(ctx, t.tx, w.Changes)
}

// Rollback ends the transaction unless it was committed, even when the
// write's context has ended.
func (t *writeTx) Rollback() { t.tx.Rollback(context.WithoutCancel(t.ctx)) }

// insert copies rows in, one COPY for each group of objects with the same
// fields.
func (s *Store) insert(ctx context.Context, tx *writeTx, class string, rows []prepare.Row) error {
	type group struct {
		cols []string
		vals [][]any
	}
	groups := map[string]*group{}
	var order []string
	for _, r := range rows {
		sig := strings.Join(r.Fields, "\x00")
		g, ok := groups[sig]
		if !ok {
			g = &group{cols: append([]string{parse.FieldObjectID, parse.FieldCreatedAt, parse.FieldUpdatedAt, "_rperm", "_wperm"}, r.Fields...)}
			groups[sig] = g
			order = append(order, sig)
		}
		rp, wp := r.ACL.Perms()
		vals := []any{r.ObjectID, r.CreatedAt, r.UpdatedAt, rp, wp}
		for i, n := range r.Values {
			vals = append(vals, encodeValue(r.Types[i], n))
		}
		g.vals = append(g.vals, vals)
	}
	for _, sig := range order {
		g := groups[sig]
		quoted := make([]string, len(g.cols))
		for i, c := range g.cols {
			quoted[i] = s.d.Ident(c)
		}
		sctx, end := sqlkit.TraceStatement(ctx, "COPY "+s.d.Ident(class)+" ("+strings.Join(quoted, ", ")+") FROM STDIN")
		n, err := tx.tx.CopyFrom(sctx, pgx.Identifier{class}, g.cols, pgx.CopyFromRows(g.vals))
		end(int(n), err)
		if err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "23505" {
				return fmt.Errorf("%w: duplicate objectId in %s", store.ErrInvalid, class)
			}
			return wrapErr(ctx, err)
		}
	}
	return nil
}

// Create inserts objs in one transaction (COPY for each group of objects
// with the same fields).
func (s *Store) Create(ctx context.Context, class string, objs []parse.Object) error {
	return s.kit.Create(ctx, class, objs)
}

// Update changes one object in one transaction: the row is read and locked
// (SELECT … FOR UPDATE), then updated by one statement repeating w's checks.
func (s *Store) Update(ctx context.Context, w store.Write, set parse.Object) (before, after parse.Object, err error) {
	return s.kit.Update(ctx, w, set)
}

// DeleteClass drops an empty class's table, join tables and `_SCHEMA` row
// in one transaction. The table is locked before it is counted, so no row
// can arrive between the count and the drop.
func (s *Store) DeleteClass(ctx context.Context, class string) error {
	return s.kit.DeleteClass(ctx, class)
}

// classDropped runs after DeleteClass. Every pooled connection caches
// statement descriptions (the column types of finds, of COPY's target): a
// class created again under this name with other field types would be read
// and written with stale types. Replace the connections (busy ones when
// they are released).
func (s *Store) classDropped() { s.pool.Reset() }

// Delete removes one object and its rows in the class's join tables in one
// transaction.
func (s *Store) Delete(ctx context.Context, w store.Write) (parse.Object, error) {
	return s.kit.Delete(ctx, w)
}
