package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
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

// queryRows runs a statement returning rows of fields in tx and decodes them.
func queryRows(ctx context.Context, tx pgx.Tx, sch parse.Schema, fields []string, sqlText string, args []any) ([]parse.Object, error) {
	rows, err := tx.Query(ctx, sqlText, args...)
	if err != nil {
		return nil, wrapErr(ctx, err)
	}
	return collect(ctx, rows, func(vals []any) (parse.Object, error) {
		return sqlkit.DecodeRow(codec, sch, fields, vals)
	})
}

// Update changes one object in one transaction: the row is read and locked
// (SELECT … FOR UPDATE), then updated by one statement repeating w's checks.
func (s *Store) Update(ctx context.Context, w store.Write, set parse.Object) (before, after parse.Object, err error) {
	if err := store.CheckWrite(w); err != nil {
		return nil, nil, err
	}
	sch, err := s.schemas.Shared(ctx, w.Class)
	if err != nil {
		return nil, nil, wrapErr(ctx, err)
	}
	change, err := store.PrepareUpdate(sch, set)
	if err != nil {
		return nil, nil, err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, nil, wrapErr(ctx, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	sqlText, args, fields := sqlkit.SelectWriteSQL(s.d, sch, w, " FOR UPDATE")
	rows, err := queryRows(ctx, tx, sch, fields, sqlText, args)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, store.ObjectNotFound(w)
	}
	before = rows[0]
	sets, err := sqlkit.Assignments(change, encoder, sqlkit.NextUpdatedAt(before, time.Now()))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	sqlText, args, fields = sqlkit.UpdateSQL(s.d, sch, w, sets)
	rows, err = queryRows(ctx, tx, sch, fields, sqlText, args)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, store.ObjectNotFound(w)
	}
	after = rows[0]
	var changes []store.Change
	if s.feed.inProcessWanted() {
		changes = []store.Change{{Op: store.ChangeUpdate, Class: w.Class, ObjectID: w.ID, Before: store.CloneObject(before), After: store.CloneObject(after)}}
	}
	if err := s.feed.commit(ctx, tx, changes); err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// Delete removes one object and its rows in the class's join tables in one
// transaction.
func (s *Store) Delete(ctx context.Context, w store.Write) (parse.Object, error) {
	if err := store.CheckWrite(w); err != nil {
		return nil, err
	}
	sch, err := s.schemas.Shared(ctx, w.Class)
	if err != nil {
		return nil, wrapErr(ctx, err)
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, wrapErr(ctx, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	sqlText, args, fields := sqlkit.DeleteSQL(s.d, sch, w)
	rows, err := queryRows(ctx, tx, sch, fields, sqlText, args)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, store.ObjectNotFound(w)
	}
	for _, jt := range sqlkit.JoinTables(sch) {
		if _, err := tx.Exec(ctx, `DELETE FROM `+s.d.Ident(jt)+` WHERE "owningId" = $1`, w.ID); err != nil {
			return nil, fmt.Errorf("delete %s relations: %w", jt, wrapErr(ctx, err))
		}
	}
	var changes []store.Change
	if s.feed.inProcessWanted() {
		changes = []store.Change{{Op: store.ChangeDelete, Class: w.Class, ObjectID: w.ID, Before: store.CloneObject(rows[0])}}
	}
	if err := s.feed.commit(ctx, tx, changes); err != nil {
		return nil, err
	}
	return rows[0], nil
}

// DeleteClass drops an empty class's table, join tables and `_SCHEMA` row
// in one transaction. The table is locked before it is counted, so no row
// can arrive between the count and the drop.
func (s *Store) DeleteClass(ctx context.Context, class string) error {
	if err := store.CheckDeleteClass(class); err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return wrapErr(ctx, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	var raw string
	err = tx.QueryRow(ctx, `SELECT "schema"::text FROM "_SCHEMA" WHERE "className" = $1 FOR UPDATE`, class).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.ClassNotFound(class)
	}
	if err != nil {
		return wrapErr(ctx, err)
	}
	sch, err := parse.UnmarshalStoredSchema(class, []byte(raw))
	if err != nil {
		return err
	}
	table := s.d.Ident(class)
	if _, err := tx.Exec(ctx, `LOCK TABLE `+table+` IN ACCESS EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("delete class %s: %w", class, wrapErr(ctx, err))
	}
	var n int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		return fmt.Errorf("count %s: %w", class, wrapErr(ctx, err))
	}
	if n > 0 {
		return store.ClassNotEmpty(class, n)
	}
	stmts := []string{`DROP TABLE ` + table}
	for _, jt := range sqlkit.JoinTables(sch) {
		stmts = append(stmts, `DROP TABLE IF EXISTS `+s.d.Ident(jt))
	}
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st); err != nil {
			return fmt.Errorf("delete class %s: %w", class, wrapErr(ctx, err))
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM "_SCHEMA" WHERE "className" = $1`, class); err != nil {
		return fmt.Errorf("delete class %s: %w", class, wrapErr(ctx, err))
	}
	if err := tx.Commit(ctx); err != nil {
		return wrapErr(ctx, err)
	}
	s.schemas.Invalidate()
	// Every pooled connection caches statement descriptions (the column
	// types of finds, of COPY's target): a class created again under this
	// name with other field types would be read and written with stale
	// types. Replace the connections (busy ones when they are released).
	s.pool.Reset()
	return nil
}
