package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/prepare"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// encoder writes SQLite's columns.
var encoder = sqlkit.ColumnEncoder{
	Value: encodeValue,
	Perms: jsonOrNil,
	Date:  func(t time.Time) any { return parse.FormatDate(t) },
}

// conn runs the kit's statements on a *sql.DB or a *sql.Tx.
type conn struct {
	q interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
		ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	}
}

// Query scans every row into a reused value slice and hands it to row.
func (c conn) Query(ctx context.Context, sqlText string, args []any, row func(vals []any) error) error {
	rows, err := c.q.QueryContext(ctx, sqlText, args...)
	if err != nil {
		return wrapErr(ctx, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	scan := func() ([]any, error) { return vals, rows.Scan(ptrs...) }
	return sqlkit.Each(ctx, rows, scan, row, wrapErr)
}

// Exec runs a statement returning no rows.
func (c conn) Exec(ctx context.Context, sqlText string, args ...any) error {
	if _, err := c.q.ExecContext(ctx, sqlText, args...); err != nil {
		return wrapErr(ctx, err)
	}
	return nil
}

// writeTx is a write transaction: the write lock is taken at BEGIN
// (_txlock=immediate), so a row read in it cannot change before it is
// written.
type writeTx struct {
	conn
	tx *sql.Tx
	s  *Store
}

func (s *Store) beginWrite(ctx context.Context) (*writeTx, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	return &writeTx{conn: conn{tx}, tx: tx, s: s}, nil
}

// Watched reports whether a Watch was made.
func (t *writeTx) Watched() bool { return t.s.feed.on.Load() }

// Commit commits through the feed (see feed.commit).
func (t *writeTx) Commit(ctx context.Context, w sqlkit.Written) error {
	return t.s.feed.commit(ctx, t.tx, w)
}

// Rollback ends the transaction unless it was committed.
func (t *writeTx) Rollback() { t.tx.Rollback() }

// insert inserts rows with one prepared INSERT per set of columns.
func (s *Store) insert(ctx context.Context, tx *writeTx, class string, prepared []prepare.Row) (err error) {
	// One span per prepared statement, with the rows it inserted.
	type stmt struct {
		st   *sql.Stmt
		ctx  context.Context
		rows int
		end  func(int, error)
	}
	stmts := map[string]*stmt{}
	defer func() {
		for _, st := range stmts {
			st.end(st.rows, err)
		}
	}()
	for _, r := range prepared {
		rp, wp := r.ACL.Perms()
		cols := append([]string{parse.FieldObjectID, parse.FieldCreatedAt, parse.FieldUpdatedAt, "_rperm", "_wperm"}, r.Fields...)
		args := []any{r.ObjectID, parse.FormatDate(r.CreatedAt), parse.FormatDate(r.UpdatedAt), jsonOrNil(rp), jsonOrNil(wp)}
		for i, n := range r.Values {
			v, err := encodeValue(r.Types[i], n)
			if err != nil {
				return err
			}
			args = append(args, v)
		}
		sig := strings.Join(cols, "\x00")
		st, ok := stmts[sig]
		if !ok {
			quoted := make([]string, len(cols))
			phs := make([]string, len(cols))
			for i, c := range cols {
				quoted[i] = s.d.Ident(c)
				phs[i] = "?"
			}
			text := "INSERT INTO " + s.d.Ident(class) + " (" + strings.Join(quoted, ", ") + ") VALUES (" + strings.Join(phs, ", ") + ")"
			st = &stmt{}
			st.ctx, st.end = sqlkit.TraceStatement(ctx, text)
			stmts[sig] = st
			if st.st, err = tx.tx.PrepareContext(st.ctx, text); err != nil {
				return err
			}
			defer st.st.Close()
		}
		if _, err := st.st.ExecContext(st.ctx, args...); err != nil {
			if strings.Contains(err.Error(), "UNIQUE constraint failed") {
				return fmt.Errorf("%w: duplicate objectId %v in %s", store.ErrInvalid, r.ObjectID, class)
			}
			return wrapErr(ctx, err)
		}
		st.rows++
	}
	return nil
}

// Create inserts objs in one transaction.
func (s *Store) Create(ctx context.Context, class string, objs []parse.Object) error {
	return s.kit.Create(ctx, class, objs)
}

// Update changes one object in one transaction: the write lock is taken at
// BEGIN, the row read, then updated by one statement repeating w's checks.
func (s *Store) Update(ctx context.Context, w store.Write, set parse.Object) (before, after parse.Object, err error) {
	return s.kit.Update(ctx, w, set)
}

// DeleteClass drops an empty class's table, join tables and _SCHEMA row in
// one transaction.
func (s *Store) DeleteClass(ctx context.Context, class string) error {
	return s.kit.DeleteClass(ctx, class)
}

// Delete removes one object and its rows in the class's join tables in one
// transaction.
func (s *Store) Delete(ctx context.Context, w store.Write) (parse.Object, error) {
	return s.kit.Delete(ctx, w)
}
