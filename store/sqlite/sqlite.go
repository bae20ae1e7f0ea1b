// Package sqlite is the embedded store: Parse Server's PostgreSQL table
// layout adapted to SQLite (modernc.org/sqlite, pure Go).
//
// One table per class with a column per field; Object and Array fields,
// GeoPoints, Polygons and the `_rperm`/`_wperm` permission arrays as JSON
// text; pointers as the bare objectId (the target class lives in `_SCHEMA`);
// Relations in `_Join:<field>:<Class>(relatedId, owningId)` tables; dates as
// fixed-width ISO-8601 text; booleans as 0/1.
package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/schemacache"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"

	"modernc.org/sqlite" // also registers the "sqlite" driver
	sqlite3 "modernc.org/sqlite/lib"
)

// Store is the SQLite store.
type Store struct {
	db      *sql.DB
	d       dialect
	schemas schemacache.Cache
	kit     sqlkit.Kit[*writeTx]
	path    string
	opts    options
	feed    feed
	closed  atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Open opens the existing database at path; it runs no DDL. A missing file
// is an error, and so is a file without the `_SCHEMA` table
// (store.ErrNotSetUp): Create makes a new store.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	if path == ":memory:" {
		return nil, fmt.Errorf("open sqlite :memory:: an in-memory database is always new; use Create")
	}
	if _, err := os.Stat(path); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("open sqlite %s: no such database file (create one with `parsemcp demo --out sqlite:%s` or `parsemcp migrate --store sqlite:%s`)", path, path, path)
		}
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	s, err := open(path, "rw", opts)
	if err != nil {
		return nil, err
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '_SCHEMA'`).Scan(&n); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if n == 0 {
		s.db.Close()
		return nil, fmt.Errorf("open sqlite %s: %w", path, store.ErrNotSetUp)
	}
	return s, nil
}

// Create opens the database at path, creating the file if needed, and sets
// it up (Setup): the `_SCHEMA` table and the system classes. Use ":memory:"
// only for throwaway tests: each pooled connection would see its own
// database, so the pool is limited to one connection in that case.
func Create(ctx context.Context, path string, opts ...Option) (*Store, error) {
	s, err := open(path, "rwc", opts)
	if err != nil {
		return nil, err
	}
	if err := s.Setup(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

func open(path, mode string, opts []Option) (*Store, error) {
	q := url.Values{}
	if path != ":memory:" {
		q.Set("mode", mode)
	}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(1)"} {
		q.Add("_pragma", p)
	}
	// Every transaction here writes: take the write lock when it begins, so
	// a read-then-write transaction (Update) waits for other writers under
	// busy_timeout instead of failing to upgrade its snapshot.
	q.Set("_txlock", "immediate")
	dsn := fileURI(path) + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	if path == ":memory:" {
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(DefaultMaxConns)
	}
	s := &Store{db: db, path: path}
	for _, o := range opts {
		o(&s.opts)
	}
	if s.opts.maxConns > 0 && path != ":memory:" {
		db.SetMaxOpenConns(s.opts.maxConns)
	}
	s.feed.hub.Logger = s.opts.logger
	s.schemas.Load = s.loadSchemas
	s.kit = sqlkit.Kit[*writeTx]{
		D: s.d, Codec: codec, Encoder: encoder, Schemas: &s.schemas,
		DB: conn{db}, Begin: s.beginWrite, Insert: s.insert, WrapErr: wrapErr,
		ReadBackChunk: 500,
	}
	return s, nil
}

// uriEscaper escapes what SQLite's URI filenames would otherwise read as the
// start of the query ('?'), of a fragment ('#') or of an escape ('%').
var uriEscaper = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")

// fileURI renders path as an SQLite URI filename.
func fileURI(path string) string { return "file:" + uriEscaper.Replace(path) }

// DB exposes the database for benchmarks that compare against raw SQL.
func (s *Store) DB() *sql.DB { return s.db }

// Close stops the change feed and closes the database.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.stopFeed()
	return s.db.Close()
}

// Setup creates the `_SCHEMA` table and the system classes where missing
// (`parsemcp migrate`, `parsemcp demo`); it changes nothing already there.
func (s *Store) Setup(ctx context.Context) error {
	if err := s.createSchemaTable(ctx); err != nil {
		return err
	}
	// The system classes exist in every Parse database.
	for _, sch := range parse.SystemSchemas() {
		if err := s.CreateClass(ctx, sch); err != nil && !errors.Is(err, store.ErrClassExists) {
			return err
		}
	}
	// The change feed's scans read by updatedAt (files made before
	// CreateClass added the index get it here).
	schemas, err := s.loadSchemas(ctx)
	if err != nil {
		return err
	}
	for name := range schemas {
		if _, err := s.db.ExecContext(ctx, updatedAtIndex(name)); err != nil && !strings.Contains(err.Error(), "no such table") {
			return fmt.Errorf("index %s.updatedAt: %w", name, err)
		}
	}
	return nil
}

// createSchemaTable creates the `_SCHEMA` table where missing.
func (s *Store) createSchemaTable(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS "_SCHEMA" ("className" TEXT PRIMARY KEY, "schema" TEXT NOT NULL, "isParseClass" INTEGER NOT NULL DEFAULT 1)`); err != nil {
		return fmt.Errorf("create _SCHEMA: %w", err)
	}
	return nil
}

// updatedAtIndex is the index the change feed's scans read by.
func updatedAtIndex(class string) string {
	var d dialect
	return `CREATE INDEX IF NOT EXISTS ` + d.Ident(class+"_updatedAt") + ` ON ` + d.Ident(class) + ` (` + d.Ident(parse.FieldUpdatedAt) + `)`
}

func (s *Store) loadSchemas(ctx context.Context) (map[string]parse.Schema, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT "className", "schema" FROM "_SCHEMA"`)
	if err != nil {
		return nil, fmt.Errorf("read _SCHEMA: %w", err)
	}
	defer rows.Close()
	return sqlkit.ReadSchemaRows(rows)
}

// Schemas returns every class's schema, sorted by name.
func (s *Store) Schemas(ctx context.Context) ([]parse.Schema, error) { return s.schemas.All(ctx) }

// Schema returns a copy of one class's schema.
func (s *Store) Schema(ctx context.Context, class string) (parse.Schema, error) {
	return s.schemas.One(ctx, class)
}

// SharedSchema is store.SharedSchemas: the cached schema itself, read-only.
func (s *Store) SharedSchema(ctx context.Context, class string) (parse.Schema, error) {
	return s.schemas.Shared(ctx, class)
}

func columnType(t parse.FieldType) string {
	switch t {
	case parse.TypeNumber:
		return "REAL"
	case parse.TypeBoolean:
		return "INTEGER"
	}
	return "TEXT"
}

// CreateClass creates the class's table, join tables, indexes and _SCHEMA row
// in one transaction.
func (s *Store) CreateClass(ctx context.Context, sch parse.Schema) error {
	if err := sch.Validate(); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	fields := make(map[string]parse.Field, len(sch.Fields)+4)
	for k, f := range sch.Fields { // a copy: the caller's map stays as it was
		fields[k] = f
	}
	for k, f := range parse.DefaultFields() {
		fields[k] = f
	}
	sch.Fields = fields
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM "_SCHEMA" WHERE "className" = ?`, sch.ClassName).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: %s", store.ErrClassExists, sch.ClassName)
	}
	d := s.d
	cols := []string{
		d.Ident(parse.FieldObjectID) + " TEXT PRIMARY KEY",
		d.Ident(parse.FieldCreatedAt) + " TEXT",
		d.Ident(parse.FieldUpdatedAt) + " TEXT",
		d.Ident("_rperm") + " TEXT",
		d.Ident("_wperm") + " TEXT",
	}
	var stmts []string
	for _, name := range sch.FieldNames() {
		f := sch.Fields[name]
		if parse.IsSystemField(name) {
			continue
		}
		if f.Type == parse.TypeRelation {
			jt := d.Ident(sqlkit.JoinTable(name, sch.ClassName))
			stmts = append(stmts,
				`CREATE TABLE IF NOT EXISTS `+jt+` ("relatedId" TEXT NOT NULL, "owningId" TEXT NOT NULL, PRIMARY KEY ("relatedId", "owningId"))`,
				`CREATE INDEX IF NOT EXISTS `+d.Ident(sqlkit.JoinTable(name, sch.ClassName)+"_owning")+` ON `+jt+` ("owningId")`)
			continue
		}
		cols = append(cols, d.Ident(name)+" "+columnType(f.Type))
		if f.Type == parse.TypePointer {
			stmts = append(stmts, `CREATE INDEX `+d.Ident(sch.ClassName+"_"+name+"_ptr")+` ON `+d.Ident(sch.ClassName)+` (`+d.Ident(name)+`)`)
		}
	}
	create := `CREATE TABLE ` + d.Ident(sch.ClassName) + ` (` + strings.Join(cols, ", ") + `)`
	if _, err := tx.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("create table %s: %w", sch.ClassName, err)
	}
	stmts = append(stmts, `CREATE INDEX `+d.Ident(sch.ClassName+"_createdAt")+` ON `+d.Ident(sch.ClassName)+` ("createdAt")`,
		updatedAtIndex(sch.ClassName))
	for name, keys := range sch.Indexes {
		if len(keys) == 0 {
			continue
		}
		var parts []string
		fields := make([]string, 0, len(keys))
		for f := range keys {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		for _, f := range fields {
			if _, ok := sch.Fields[f]; !ok {
				return fmt.Errorf("%w: index %s names unknown field %q", store.ErrInvalid, name, f)
			}
			dir := " ASC"
			if keys[f] < 0 {
				dir = " DESC"
			}
			parts = append(parts, d.Ident(f)+dir)
		}
		// SQLite index names are global to the database, Parse's are per
		// class ("name_1" on many classes): qualify them with the class
		// (class names hold no ':').
		stmts = append(stmts, `CREATE INDEX `+d.Ident(sch.ClassName+":"+name)+` ON `+d.Ident(sch.ClassName)+` (`+strings.Join(parts, ", ")+`)`)
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("create class %s: %w", sch.ClassName, err)
		}
	}
	raw, err := parse.MarshalStoredSchema(sch)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO "_SCHEMA" ("className", "schema", "isParseClass") VALUES (?, ?, 1)`, sch.ClassName, string(raw)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	s.schemas.Invalidate()
	return nil
}

// codec reads SQLite's columns back.
var codec = sqlkit.ColumnCodec{Perms: permArray, Value: decodeValue}

// Find runs q.
func (s *Store) Find(ctx context.Context, q *query.Query) ([]parse.Object, error) {
	return s.kit.Find(ctx, q)
}

// FindJSON is store.JSONFinder: Find's rows written as JSON text.
func (s *Store) FindJSON(ctx context.Context, q *query.Query, keep func(field string) bool) ([]json.RawMessage, error) {
	return s.kit.FindJSON(ctx, q, keep)
}

// Count counts the rows q's constraints select.
func (s *Store) Count(ctx context.Context, q *query.Query) (int64, error) {
	return s.kit.Count(ctx, q)
}

// wrapErr reports a cancelled or timed-out context as such rather than as
// the driver's interrupt error, and a database still locked by another
// process once busy_timeout ran out as store.ErrUnavailable (retryable).
func wrapErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("query stopped: %w", ctxErr)
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w: SQLite: %v", store.ErrUnavailable, err)
		}
	}
	return err
}

func permArray(v any) ([]string, bool, error) {
	s, ok := asText(v)
	if !ok {
		return nil, false, nil
	}
	var out []string
	if err := jsonenc.Unmarshal([]byte(s), &out); err != nil {
		return nil, false, fmt.Errorf("permission array: %w", err)
	}
	return out, true, nil
}

func asText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

func decodeValue(f parse.Field, v any) (parse.Normalized, error) {
	var n parse.Normalized
	switch f.Type {
	case parse.TypeNumber:
		switch x := v.(type) {
		case float64:
			n.Number = x
		case int64:
			n.Number = float64(x)
		default:
			return n, fmt.Errorf("unexpected %T for a Number", v)
		}
		return n, nil
	case parse.TypeBoolean:
		x, ok := v.(int64)
		if !ok {
			return n, fmt.Errorf("unexpected %T for a Boolean", v)
		}
		n.Bool = x != 0
		return n, nil
	}
	s, ok := asText(v)
	if !ok {
		return n, fmt.Errorf("unexpected %T for a %s", v, f.Type)
	}
	switch f.Type {
	case parse.TypeDate:
		t, err := parse.ParseDate(s)
		if err != nil {
			return n, err
		}
		n.Time = t
	case parse.TypeObject, parse.TypeArray, parse.TypePolygon:
		// Decoded into its own variable: the address of n.JSON would move
		// n, every column's value, to the heap.
		var x any
		if err := jsonenc.Unmarshal([]byte(s), &x); err != nil {
			return n, err
		}
		n.JSON = x
	case parse.TypeGeoPoint:
		var p struct{ Latitude, Longitude float64 }
		if err := jsonenc.Unmarshal([]byte(s), &p); err != nil {
			return n, err
		}
		n.Lat, n.Lng = p.Latitude, p.Longitude
	default:
		n.String = s
	}
	return n, nil
}

// encodeValue renders a normalized value as the column value.
func encodeValue(f parse.Field, n parse.Normalized) (any, error) {
	if n.Null {
		return nil, nil
	}
	switch f.Type {
	case parse.TypeNumber:
		return n.Number, nil
	case parse.TypeBoolean:
		if n.Bool {
			return int64(1), nil
		}
		return int64(0), nil
	case parse.TypeDate:
		return parse.FormatDate(n.Time), nil
	case parse.TypeObject, parse.TypeArray:
		b, err := json.Marshal(n.JSON)
		return string(b), err
	case parse.TypePolygon:
		b, err := json.Marshal(n.JSON)
		return string(b), err
	case parse.TypeGeoPoint:
		b, err := json.Marshal(map[string]float64{"latitude": n.Lat, "longitude": n.Lng})
		return string(b), err
	}
	return n.String, nil
}

func jsonOrNil(a []string) any {
	if a == nil {
		return nil
	}
	b, _ := json.Marshal(a)
	return string(b)
}

// AddRelation links owningID's Relation field to relatedIDs.
func (s *Store) AddRelation(ctx context.Context, class, field, owningID string, relatedIDs []string) error {
	if err := s.kit.RelationField(ctx, class, field); err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st, err := tx.PrepareContext(ctx, `INSERT OR IGNORE INTO `+s.d.Ident(sqlkit.JoinTable(field, class))+` ("relatedId", "owningId") VALUES (?, ?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for _, id := range relatedIDs {
		if _, err := st.ExecContext(ctx, id, owningID); err != nil {
			return wrapErr(ctx, err)
		}
	}
	return tx.Commit()
}

// RelatedIDs returns the ids owningID's Relation field links to.
func (s *Store) RelatedIDs(ctx context.Context, class, field, owningID string) ([]string, error) {
	return s.kit.RelatedIDs(ctx, class, field, owningID)
}

// DefaultMaxConns is how many connections a Store opens at most (readers
// run in parallel under WAL; writers take turns). It is above the HTTP
// server's per-principal in-flight cap (mcpserver.DefaultMaxInFlight, 8),
// so one agent's slow queries leave connections for the others.
const DefaultMaxConns = 16

// WithMaxConns sets how many connections the Store opens at most (serve
// --db-max-conns); 0 or less keeps DefaultMaxConns.
func WithMaxConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = n
		}
	}
}

// Ping is store.Pinger: one statement on the database file.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return &store.Outage{Backend: "SQLite", Err: err}
	}
	return nil
}
