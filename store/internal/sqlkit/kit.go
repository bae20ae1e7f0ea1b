package sqlkit

import (
	"context"
	"fmt"
	"time"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/object"
	"github.com/parsemcp/parsemcp/store/internal/prepare"
	"github.com/parsemcp/parsemcp/store/internal/schemacache"
)

// Dialect is a SQL backend's dialect as the kit uses it.
type Dialect interface {
	sqlcompile.Dialect
	// NoLimit is the LIMIT bind value meaning no limit.
	NoLimit() any
}

// Querier runs statements on a connection pool or in a transaction. A
// backend adapts its driver to it and reports the driver's errors as its
// own (a stopped context as such).
type Querier interface {
	// Query runs sqlText and calls row with the column values of each row
	// it returns, in order; the slice may be reused between rows. An error
	// of row ends the query and is returned as it is.
	Query(ctx context.Context, sqlText string, args []any, row func(vals []any) error) error
	// Exec runs a statement that returns no rows.
	Exec(ctx context.Context, sqlText string, args ...any) error
}

// Cursor is what the rows of database/sql and of pgx share.
type Cursor interface {
	Next() bool
	Err() error
}

// Each calls row with each row of rows, as values reads it; the errors of
// values and of rows (not row's) are reported through wrap.
func Each(ctx context.Context, rows Cursor, values func() ([]any, error), row func(vals []any) error, wrap func(context.Context, error) error) error {
	for rows.Next() {
		vals, err := values()
		if err != nil {
			return wrap(ctx, err)
		}
		if err := row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return wrap(ctx, err)
	}
	return nil
}

// Tx is a backend's write transaction.
type Tx interface {
	Querier
	// Watched reports whether watchers want the changes this transaction
	// commits, with their rows.
	Watched() bool
	// Commit commits what was written; the backend's feed then learns of
	// it and publishes w.Changes in commit order.
	Commit(ctx context.Context, w Written) error
	// Rollback ends the transaction unless it was committed.
	Rollback()
}

// Written is what a write transaction did, for the backend's change feed.
type Written struct {
	Class            string
	Created, Deleted int            // objects created and deleted
	Changes          []store.Change // nil unless the Tx was Watched
}

// Kit is the find, count and write path of a SQL backend: the backend
// plugs in its dialect, its column codecs and its driver, and each of its
// Store methods is one call here.
type Kit[T Tx] struct {
	D       Dialect
	Codec   ColumnCodec
	Encoder ColumnEncoder
	Schemas *schemacache.Cache
	// DB runs the statements of reads (the connection pool).
	DB Querier
	// Begin opens a write transaction.
	Begin func(ctx context.Context) (T, error)
	// Insert writes rows, prepared for class, in tx (the backend's bulk
	// path). A duplicate objectId is an error wrapping store.ErrInvalid.
	Insert func(ctx context.Context, tx T, class string, rows []prepare.Row) error
	// WrapErr reports err, met while ctx ran, as the backend reports its
	// driver's errors.
	WrapErr func(ctx context.Context, err error) error
	// Lock is appended to the read of a row about to be written: " FOR
	// UPDATE" where the database locks rows, "" where a write transaction
	// holds the database's write lock from its start.
	Lock string
	// LockTable is the mode in which DeleteClass locks the class's table
	// before it counts its rows (" IN ACCESS EXCLUSIVE MODE"), so no row
	// arrives between the count and the drop; "" where a write transaction
	// holds the database's write lock from its start.
	LockTable string
	// ClassDropped, if set, runs after DeleteClass committed.
	ClassDropped func()
	// ReadBackChunk is how many ids one read-back statement selects.
	ReadBackChunk int
}

// Rows runs a statement returning rows of fields and decodes them.
func (k *Kit[T]) Rows(ctx context.Context, db Querier, sch parse.Schema, fields []string, sqlText string, args []any) ([]parse.Object, error) {
	return Collect(ctx, db, sqlText, args, func(vals []any) (parse.Object, error) {
		return DecodeRow(k.Codec, sch, fields, vals)
	})
}

// Collect runs sqlText and decodes each row.
func Collect[R any](ctx context.Context, db Querier, sqlText string, args []any, decode func(vals []any) (R, error)) ([]R, error) {
	var out []R
	err := traced(ctx, db.Query, sqlText, args, func(vals []any) error {
		r, err := decode(vals)
		if err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FindSQL renders the statement Find runs for q on sch.
func (k *Kit[T]) FindSQL(sch parse.Schema, q *query.Query) (sqlText string, args []any, fields []string) {
	return FindSQL(k.D, sch, q, k.D.NoLimit())
}

// FindStatement renders the statement Find runs for q on sch and returns
// the decoder of its rows.
func (k *Kit[T]) FindStatement(sch parse.Schema, q *query.Query) (sqlText string, args []any, decode func(vals []any) (parse.Object, error)) {
	sqlText, args, fields := k.FindSQL(sch, q)
	return sqlText, args, func(vals []any) (parse.Object, error) { return DecodeRow(k.Codec, sch, fields, vals) }
}

// Find is Store.Find.
func (k *Kit[T]) Find(ctx context.Context, q *query.Query) ([]parse.Object, error) {
	if err := query.CheckScore(q); err != nil {
		return nil, err
	}
	sch, err := k.Schemas.Shared(ctx, q.Class)
	if err != nil {
		return nil, err
	}
	sqlText, args, fields := k.FindSQL(sch, q)
	return k.Rows(ctx, k.DB, sch, fields, sqlText, args)
}

// Count is Store.Count.
func (k *Kit[T]) Count(ctx context.Context, q *query.Query) (int64, error) {
	if _, err := k.Schemas.Shared(ctx, q.Class); err != nil {
		return 0, err
	}
	sqlText, args := CountSQL(k.D, q)
	return k.count(ctx, k.DB, sqlText, args)
}

// count runs a statement returning one count.
func (k *Kit[T]) count(ctx context.Context, db Querier, sqlText string, args []any) (int64, error) {
	var n int64
	err := traced(ctx, db.Query, sqlText, args, func(vals []any) error {
		v, ok := vals[0].(int64)
		if !ok {
			return fmt.Errorf("count: unexpected %T", vals[0])
		}
		n = v
		return nil
	})
	return n, err
}

// ReadBack reads, in tx, the rows of ids as Find returns them, in the order
// of ids.
func (k *Kit[T]) ReadBack(ctx context.Context, tx Querier, sch parse.Schema, ids []string) ([]parse.Object, error) {
	return ReadBack(k.D, sch, ids, k.ReadBackChunk, func(sqlText string, args []any, fields []string) ([]parse.Object, error) {
		return k.Rows(ctx, tx, sch, fields, sqlText, args)
	})
}

// begin opens a write transaction, its error reported as the driver's.
func (k *Kit[T]) begin(ctx context.Context) (T, error) {
	tx, err := k.Begin(ctx)
	if err != nil {
		return tx, k.WrapErr(ctx, err)
	}
	return tx, nil
}

// Create is Store.Create: objs are prepared (now, at Parse's millisecond
// precision, for what is missing), inserted by k.Insert and, when watched,
// read back for the feed in the same transaction; objs learn what was
// assigned once the transaction is committed.
func (k *Kit[T]) Create(ctx context.Context, class string, objs []parse.Object) (err error) {
	ctx, end := traceWrite(ctx, "insert", class, len(objs))
	defer func() { end(err) }()
	sch, err := k.Schemas.Shared(ctx, class)
	if err != nil {
		return err
	}
	rows, err := prepare.Create(sch, objs, time.Now().UTC().Truncate(time.Millisecond))
	if err != nil {
		return err
	}
	tx, err := k.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := k.Insert(ctx, tx, class, rows); err != nil {
		return err
	}
	var changes []store.Change
	if len(rows) > 0 && tx.Watched() {
		ids := make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ObjectID
		}
		after, err := k.ReadBack(ctx, tx, sch, ids)
		if err != nil {
			return err
		}
		changes = make([]store.Change, len(after))
		for i, a := range after {
			changes[i] = store.Change{Op: store.ChangeCreate, Class: class, ObjectID: ids[i], After: a}
		}
	}
	if err := commit(ctx, tx, Written{Class: class, Created: len(rows), Changes: changes}); err != nil {
		return err
	}
	writeBack(rows, objs) // only a committed batch changes the objects passed in
	return nil
}

// writeSchema returns the schema of the class w writes, after checking w.
func (k *Kit[T]) writeSchema(ctx context.Context, w store.Write) (parse.Schema, error) {
	if err := prepare.CheckWrite(w); err != nil {
		return parse.Schema{}, err
	}
	sch, err := k.Schemas.Shared(ctx, w.Class)
	if err != nil {
		return parse.Schema{}, k.WrapErr(ctx, err)
	}
	return sch, nil
}

// Update is Store.Update, in one transaction: the row is read (with
// k.Lock), then updated by one statement repeating w's checks.
func (k *Kit[T]) Update(ctx context.Context, w store.Write, set parse.Object) (before, after parse.Object, err error) {
	ctx, end := traceWrite(ctx, "update", w.Class, 1)
	defer func() { end(err) }()
	sch, err := k.writeSchema(ctx, w)
	if err != nil {
		return nil, nil, err
	}
	change, err := prepare.Update(sch, set)
	if err != nil {
		return nil, nil, err
	}
	tx, err := k.begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer tx.Rollback()
	sqlText, args, fields := SelectWriteSQL(k.D, sch, w, k.Lock)
	rows, err := k.Rows(ctx, tx, sch, fields, sqlText, args)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, prepare.ObjectNotFound(w)
	}
	before = rows[0]
	sets, err := Assignments(change, k.Encoder, NextUpdatedAt(before, time.Now()))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	sqlText, args, fields = UpdateSQL(k.D, sch, w, sets)
	rows, err = k.Rows(ctx, tx, sch, fields, sqlText, args)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, prepare.ObjectNotFound(w)
	}
	after = rows[0]
	var changes []store.Change
	if tx.Watched() {
		changes = []store.Change{{Op: store.ChangeUpdate, Class: w.Class, ObjectID: w.ID, Before: object.Clone(before), After: object.Clone(after)}}
	}
	if err := commit(ctx, tx, Written{Class: w.Class, Changes: changes}); err != nil {
		return nil, nil, err
	}
	return before, after, nil
}

// Delete is Store.Delete: the row and its rows in the class's join tables
// go in one transaction.
func (k *Kit[T]) Delete(ctx context.Context, w store.Write) (_ parse.Object, err error) {
	ctx, end := traceWrite(ctx, "delete", w.Class, 1)
	defer func() { end(err) }()
	sch, err := k.writeSchema(ctx, w)
	if err != nil {
		return nil, err
	}
	tx, err := k.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	sqlText, args, fields := DeleteSQL(k.D, sch, w)
	rows, err := k.Rows(ctx, tx, sch, fields, sqlText, args)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, prepare.ObjectNotFound(w)
	}
	for _, jt := range JoinTables(sch) {
		b := &sqlcompile.Builder{D: k.D}
		if err := exec(ctx, tx, `DELETE FROM `+k.D.Ident(jt)+` WHERE "owningId" = `+b.Param(w.ID), b.Args...); err != nil {
			return nil, fmt.Errorf("delete %s relations: %w", jt, err)
		}
	}
	var changes []store.Change
	if tx.Watched() {
		changes = []store.Change{{Op: store.ChangeDelete, Class: w.Class, ObjectID: w.ID, Before: object.Clone(rows[0])}}
	}
	if err := commit(ctx, tx, Written{Class: w.Class, Deleted: 1, Changes: changes}); err != nil {
		return nil, err
	}
	return rows[0], nil
}

// DeleteClass is Store.DeleteClass: an empty class's table, join tables
// and `_SCHEMA` row are dropped in one transaction.
func (k *Kit[T]) DeleteClass(ctx context.Context, class string) error {
	if err := prepare.CheckDeleteClass(class); err != nil {
		return err
	}
	tx, err := k.begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	b := &sqlcompile.Builder{D: k.D}
	raws, err := Collect(ctx, tx, `SELECT CAST("schema" AS text) FROM "_SCHEMA" WHERE "className" = `+b.Param(class)+k.Lock, b.Args, func(vals []any) (string, error) {
		raw, ok := vals[0].(string)
		if !ok {
			return "", fmt.Errorf("_SCHEMA %s: unexpected %T for a schema", class, vals[0])
		}
		return raw, nil
	})
	if err != nil {
		return err
	}
	if len(raws) == 0 {
		return store.ClassNotFound(class)
	}
	sch, err := parse.UnmarshalStoredSchema(class, []byte(raws[0]))
	if err != nil {
		return err
	}
	if err := k.dropClass(ctx, tx, sch); err != nil {
		return err
	}
	if err := commit(ctx, tx, Written{Class: class}); err != nil {
		return err
	}
	k.Schemas.Invalidate()
	if k.ClassDropped != nil {
		k.ClassDropped()
	}
	return nil
}

// dropClass drops class, whose stored schema is sch, in tx if it holds no
// object: its table, its join tables and its `_SCHEMA` row.
func (k *Kit[T]) dropClass(ctx context.Context, tx Querier, sch parse.Schema) error {
	class := sch.ClassName
	table := k.D.Ident(class)
	if k.LockTable != "" {
		if err := exec(ctx, tx, `LOCK TABLE `+table+k.LockTable); err != nil {
			return fmt.Errorf("delete class %s: %w", class, err)
		}
	}
	n, err := k.count(ctx, tx, `SELECT count(*) FROM `+table, nil)
	if err != nil {
		return fmt.Errorf("count %s: %w", class, err)
	}
	if n > 0 {
		return store.ClassNotEmpty(class, n)
	}
	stmts := []string{`DROP TABLE ` + table}
	for _, jt := range JoinTables(sch) {
		stmts = append(stmts, `DROP TABLE IF EXISTS `+k.D.Ident(jt))
	}
	for _, st := range stmts {
		if err := exec(ctx, tx, st); err != nil {
			return fmt.Errorf("delete class %s: %w", class, err)
		}
	}
	b := &sqlcompile.Builder{D: k.D}
	if err := exec(ctx, tx, `DELETE FROM "_SCHEMA" WHERE "className" = `+b.Param(class), b.Args...); err != nil {
		return fmt.Errorf("delete class %s: %w", class, err)
	}
	return nil
}

// RelationField checks that class's field is a Relation.
func (k *Kit[T]) RelationField(ctx context.Context, class, field string) error {
	sch, err := k.Schemas.Shared(ctx, class)
	if err != nil {
		return err
	}
	if f, ok := sch.Fields[field]; !ok || f.Type != parse.TypeRelation {
		return fmt.Errorf("%w: %s.%s is not a Relation field", store.ErrInvalid, class, field)
	}
	return nil
}

// RelatedIDs is Store.RelatedIDs.
func (k *Kit[T]) RelatedIDs(ctx context.Context, class, field, owningID string) ([]string, error) {
	if err := k.RelationField(ctx, class, field); err != nil {
		return nil, err
	}
	b := &sqlcompile.Builder{D: k.D}
	sqlText := `SELECT "relatedId" FROM ` + k.D.Ident(JoinTable(field, class)) + ` WHERE "owningId" = ` + b.Param(owningID) + ` ORDER BY "relatedId"`
	return Collect(ctx, k.DB, sqlText, b.Args, func(vals []any) (string, error) {
		id, ok := vals[0].(string)
		if !ok {
			return "", fmt.Errorf("%s: unexpected %T for a relatedId", JoinTable(field, class), vals[0])
		}
		return id, nil
	})
}

// writeBack records in objs what prepare.Create assigned, after
// commit.
func writeBack(rows []prepare.Row, objs []parse.Object) {
	for i, r := range rows {
		objs[i][parse.FieldObjectID] = r.ObjectID
		objs[i][parse.FieldCreatedAt] = parse.FormatDate(r.CreatedAt)
		objs[i][parse.FieldUpdatedAt] = parse.FormatDate(r.UpdatedAt)
	}
}
