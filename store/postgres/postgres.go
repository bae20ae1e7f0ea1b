// Package postgres is the PostgreSQL store, in Parse Server's own table
// layout, so it reads and writes a database that Parse Server uses: one
// table per class with typed columns (text, double precision, boolean,
// timestamptz, jsonb for Object/Array/Bytes, point for GeoPoint, polygon),
// `_rperm`/`_wperm` as text[], pointers as the bare objectId, Relations in
// `"_Join:<field>:<Class>"(relatedId, owningId)` tables, and the `_SCHEMA`
// table holding each class's fields, CLP and indexes.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/schemacache"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// Store is the PostgreSQL store.
type Store struct {
	pool    *pgxpool.Pool
	d       dialect
	schemas schemacache.Cache
	kit     sqlkit.Kit[*writeTx]
	opts    options
	feed    feed
	closed  atomic.Bool
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at url (postgres://…). It runs no DDL,
// so a role that may only read serves every read: the database must hold
// the `_SCHEMA` table already (Parse Server creates it; so do Create,
// `parsemcp migrate` and `parsemcp demo`), otherwise the error wraps
// store.ErrNotSetUp.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	s, err := connect(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass('"_SCHEMA"') IS NOT NULL`).Scan(&ok); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if !ok {
		s.pool.Close()
		return nil, fmt.Errorf("postgres: %w", store.ErrNotSetUp)
	}
	return s, nil
}

// Create connects to the database at url and sets it up (Setup): the
// `_SCHEMA` table and the system classes, where missing. It needs a role
// that may create tables.
func Create(ctx context.Context, url string, opts ...Option) (*Store, error) {
	s, err := connect(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if err := s.Setup(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

func connect(ctx context.Context, url string, opts []Option) (*Store, error) {
	s := &Store{}
	for _, o := range opts {
		o(&s.opts)
	}
	cfg, err := poolConfig(url, s.opts)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	s.pool = pool
	s.feed.hub.Logger = s.opts.logger
	s.schemas.Load = s.loadSchemas
	s.kit = sqlkit.Kit[*writeTx]{
		D: s.d, Codec: codec, Encoder: encoder, Schemas: &s.schemas,
		DB: conn{pool}, Begin: s.beginWrite, Insert: s.insert, WrapErr: wrapErr,
		Lock: " FOR UPDATE", LockTable: " IN ACCESS EXCLUSIVE MODE", ClassDropped: s.classDropped,
		ReadBackChunk: 1000,
	}
	return s, nil
}

// Pool exposes the connection pool (benchmarks compare against raw SQL).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Close stops the change feed and closes the pool.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.stopFeed()
	s.pool.Close()
	return nil
}

// Setup creates the `_SCHEMA` table and the system classes where missing
// (`parsemcp migrate`, `parsemcp demo`); it changes nothing already there.
func (s *Store) Setup(ctx context.Context) error {
	if _, err := s.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS "_SCHEMA" ("className" varChar(120), "schema" jsonb, "isParseClass" bool, PRIMARY KEY ("className"))`); err != nil {
		return fmt.Errorf("postgres: create _SCHEMA: %w", err)
	}
	for _, sch := range parse.SystemSchemas() {
		if err := s.CreateClass(ctx, sch); err != nil && !errors.Is(err, store.ErrClassExists) {
			return err
		}
	}
	return nil
}

func (s *Store) loadSchemas(ctx context.Context) (map[string]parse.Schema, error) {
	rows, err := s.pool.Query(ctx, `SELECT "className", "schema"::text FROM "_SCHEMA"`)
	if err != nil {
		return nil, fmt.Errorf("read _SCHEMA: %w", err)
	}
	defer rows.Close()
	return sqlkit.ReadSchemaRows(rows)
}

// Schemas returns every class's schema, sorted by name.
func (s *Store) Schemas(ctx context.Context) ([]parse.Schema, error) { return s.schemas.All(ctx) }

// Schema returns one class's schema.
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
		return "double precision"
	case parse.TypeBoolean:
		return "boolean"
	case parse.TypeDate:
		return "timestamp with time zone"
	case parse.TypeObject, parse.TypeArray, parse.TypeBytes:
		return "jsonb"
	case parse.TypeGeoPoint:
		return "point"
	case parse.TypePolygon:
		return "polygon"
	}
	return "text"
}

// CreateClass creates the class's table, join tables, indexes and
// `_SCHEMA` row in one transaction.
func (s *Store) CreateClass(ctx context.Context, sch parse.Schema) error {
	if err := sch.Validate(); err != nil {
		return fmt.Errorf("%w: %v", store.ErrInvalid, err)
	}
	sch = sch.Clone() // the caller's schema stays as it was
	if sch.Fields == nil {
		sch.Fields = map[string]parse.Field{}
	}
	for k, f := range parse.DefaultFields() {
		sch.Fields[k] = f
	}
	d := s.d
	cols := []string{
		d.Ident(parse.FieldObjectID) + " text",
		d.Ident(parse.FieldCreatedAt) + " timestamp with time zone",
		d.Ident(parse.FieldUpdatedAt) + " timestamp with time zone",
		d.Ident("_rperm") + " text[]",
		d.Ident("_wperm") + " text[]",
	}
	var stmts []string
	for _, name := range sch.FieldNames() {
		f := sch.Fields[name]
		if parse.IsSystemField(name) {
			continue
		}
		if f.Type == parse.TypeRelation {
			jt := d.Ident(sqlkit.JoinTable(name, sch.ClassName))
			stmts = append(stmts, `CREATE TABLE IF NOT EXISTS `+jt+` ("relatedId" varChar(120), "owningId" varChar(120), PRIMARY KEY ("relatedId", "owningId"))`,
				`CREATE INDEX IF NOT EXISTS `+d.Ident(sqlkit.JoinTable(name, sch.ClassName)+"_owning")+` ON `+jt+` ("owningId")`)
			continue
		}
		cols = append(cols, d.Ident(name)+" "+columnType(f.Type))
	}
	cols = append(cols, systemColumns(sch.ClassName)...)
	cols = append(cols, "PRIMARY KEY ("+d.Ident(parse.FieldObjectID)+")")
	stmts = append(stmts, systemIndexes(sch.ClassName)...)
	for _, name := range slices.Sorted(maps.Keys(sch.Indexes)) {
		keys := sch.Indexes[name]
		var parts []string
		for _, f := range slices.Sorted(maps.Keys(keys)) {
			if _, ok := sch.Fields[f]; !ok {
				return fmt.Errorf("%w: index %s names unknown field %q", store.ErrInvalid, name, f)
			}
			parts = append(parts, d.Ident(f))
		}
		if len(parts) > 0 {
			// Prefixed: SQL index names are per database, Parse's per class.
			stmts = append(stmts, `CREATE INDEX IF NOT EXISTS `+d.Ident(sch.ClassName+"_"+name)+` ON `+d.Ident(sch.ClassName)+` (`+strings.Join(parts, ", ")+`)`)
		}
	}
	raw, err := parse.MarshalStoredSchema(sch)
	if err != nil {
		return err
	}
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	var n int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM "_SCHEMA" WHERE "className" = $1`, sch.ClassName).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return fmt.Errorf("%w: %s", store.ErrClassExists, sch.ClassName)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+d.Ident(sch.ClassName)+` (`+strings.Join(cols, ", ")+`)`); err != nil {
		return fmt.Errorf("create table %s: %w", sch.ClassName, err)
	}
	if err := attachIfInstalled(ctx, tx, sch.ClassName); err != nil {
		return fmt.Errorf("create class %s: %w", sch.ClassName, err)
	}
	for _, st := range stmts {
		if _, err := tx.Exec(ctx, st); err != nil {
			return fmt.Errorf("create class %s: %w", sch.ClassName, err)
		}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO "_SCHEMA" ("className", "schema", "isParseClass") VALUES ($1, $2::jsonb, true)`, sch.ClassName, string(raw)); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	s.schemas.Invalidate()
	return nil
}

// codec reads PostgreSQL's columns back.
var codec = sqlkit.ColumnCodec{Perms: textArray, Value: decodeValue}

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

// wrapErr reports a cancelled or timed-out context, or a statement the
// database cancelled for its timeout, as such, and an outage (unavailable)
// as store.ErrUnavailable, which tools answer as the retryable
// "unavailable".
func wrapErr(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("query stopped: %w", ctxErr)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "57014" { // query_canceled (statement_timeout)
		return fmt.Errorf("query stopped by the database: %w", context.DeadlineExceeded)
	}
	if unavailable(err) {
		return fmt.Errorf("%w: PostgreSQL: %v", store.ErrUnavailable, err)
	}
	return err
}

func textArray(v any) ([]string, bool, error) {
	switch x := v.(type) {
	case nil:
		return nil, false, nil
	case []string:
		return x, true, nil
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, false, fmt.Errorf("unexpected %T in a permission array", e)
			}
			out = append(out, s)
		}
		return out, true, nil
	}
	return nil, false, fmt.Errorf("unexpected %T for a permission array", v)
}

func decodeValue(f parse.Field, v any) (parse.Normalized, error) {
	var n parse.Normalized
	bad := func() (parse.Normalized, error) { return n, fmt.Errorf("unexpected %T for a %s", v, f.Type) }
	switch f.Type {
	case parse.TypeNumber:
		x, ok := v.(float64)
		if !ok {
			return bad()
		}
		n.Number = x
	case parse.TypeBoolean:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		n.Bool = x
	case parse.TypeDate:
		x, ok := v.(time.Time)
		if !ok {
			return bad()
		}
		n.Time = x.UTC()
	case parse.TypeObject, parse.TypeArray:
		n.JSON = v
	case parse.TypeBytes:
		m, ok := v.(map[string]any)
		if !ok {
			return bad()
		}
		n.String, _ = m["base64"].(string)
	case parse.TypeGeoPoint:
		p, ok := v.(pgtype.Point)
		if !ok {
			return bad()
		}
		n.Lng, n.Lat = p.P.X, p.P.Y
	case parse.TypePolygon:
		p, ok := v.(pgtype.Polygon)
		if !ok {
			return bad()
		}
		coords := make([]any, len(p.P))
		for i, pt := range p.P {
			coords[i] = []any{pt.Y, pt.X}
		}
		n.JSON = coords
	default:
		switch x := v.(type) {
		case string:
			n.String = x
		case *sqlkit.RawText: // QueryRawText's, valid for this row only
			n.String = string(x.B)
		default:
			return bad()
		}
	}
	return n, nil
}

// encodeValue renders a normalized value as the column's Go value for pgx.
func encodeValue(f parse.Field, n parse.Normalized) any {
	if n.Null {
		return nil
	}
	switch f.Type {
	case parse.TypeNumber:
		return n.Number
	case parse.TypeBoolean:
		return n.Bool
	case parse.TypeDate:
		return n.Time
	case parse.TypeObject, parse.TypeArray:
		return n.JSON
	case parse.TypeBytes:
		return map[string]any{"__type": "Bytes", "base64": n.String}
	case parse.TypeGeoPoint:
		return pgtype.Point{P: pgtype.Vec2{X: n.Lng, Y: n.Lat}, Valid: true}
	case parse.TypePolygon:
		coords, _ := n.JSON.([]any)
		pts := make([]pgtype.Vec2, 0, len(coords)+1)
		for _, c := range coords {
			pair, _ := c.([]any)
			lat, _ := pair[0].(float64)
			lng, _ := pair[1].(float64)
			pts = append(pts, pgtype.Vec2{X: lng, Y: lat})
		}
		return pgtype.Polygon{P: pts, Valid: true}
	}
	return n.String
}

// AddRelation links owningID's Relation field to relatedIDs.
func (s *Store) AddRelation(ctx context.Context, class, field, owningID string, relatedIDs []string) error {
	if err := s.kit.RelationField(ctx, class, field); err != nil {
		return err
	}
	if len(relatedIDs) == 0 {
		return nil
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO `+s.d.Ident(sqlkit.JoinTable(field, class))+` ("relatedId", "owningId") SELECT unnest($1::text[]), $2 ON CONFLICT DO NOTHING`, relatedIDs, owningID)
	return wrapErr(ctx, err)
}

// RelatedIDs returns the ids owningID's Relation field links to.
func (s *Store) RelatedIDs(ctx context.Context, class, field, owningID string) ([]string, error) {
	return s.kit.RelatedIDs(ctx, class, field, owningID)
}

// Ping is store.Pinger: one round trip to PostgreSQL.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return &store.Outage{Backend: "PostgreSQL", Err: err}
	}
	return nil
}
