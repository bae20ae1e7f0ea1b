package bench

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// The baseline ("direct") runs the exact SQL a store runs — its FindSQL,
// its CountSQL and sqlcompile.CompilePipeline rendered with the store's own
// dialect — on the store's own *sql.DB or pgx pool, and decodes the rows
// with the store's own codecs (FindSQL's decoder, sqlcompile.DecodeRow). The
// pipeline dialect and codec come from the stores' SQLShape.

// SQLRunner runs a store's SQL without the store's Go API around it.
type SQLRunner interface {
	// Find runs the store's FindSQL for q on sch (the raw, stored schema, as the
	// store uses) and decodes the rows as the store does.
	Find(ctx context.Context, sch parse.Schema, q *query.Query) ([]parse.Object, error)
	// Count runs the store's CountSQL for q.
	Count(ctx context.Context, q *query.Query) (int64, error)
	// Aggregate runs sqlcompile.CompilePipeline for p and decodes the rows with
	// sqlcompile.DecodeRow, as the store's Aggregate does.
	Aggregate(ctx context.Context, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error)
}

// NewSQLRunner returns the direct runner of a SQLite or PostgreSQL store.
func NewSQLRunner(st store.Store) (SQLRunner, error) {
	switch s := st.(type) {
	case *sqlite.Store:
		pd, pcodec := s.SQLShape()
		return &sqliteDirect{db: s.DB(), st: s, pd: pd, pcodec: pcodec}, nil
	case *postgres.Store:
		pd, pcodec := s.SQLShape()
		return &pgDirect{pool: s.Pool(), st: s, pd: pd, pcodec: pcodec}, nil
	}
	return nil, fmt.Errorf("bench: no direct SQL runner for %T", st)
}

// statements is what a SQL store renders for the baseline: the statements
// its Find and Count run, and the decoder of a find's rows.
type statements interface {
	FindSQL(sch parse.Schema, q *query.Query) (sqlText string, args []any, decode func(vals []any) (parse.Object, error))
	CountSQL(q *query.Query) (sqlText string, args []any)
}

type sqliteDirect struct {
	db     *sql.DB
	st     statements
	pd     sqlcompile.PipelineDialect
	pcodec sqlcompile.ValueCodec
}

// Find mirrors sqlite.Store.Find after its schema lookup.
func (r *sqliteDirect) Find(ctx context.Context, sch parse.Schema, q *query.Query) ([]parse.Object, error) {
	text, args, decode := r.st.FindSQL(sch, q)
	rows, err := r.db.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []parse.Object
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		obj, err := decode(vals)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, rows.Err()
}

func (r *sqliteDirect) Count(ctx context.Context, q *query.Query) (int64, error) {
	text, args := r.st.CountSQL(q)
	var n int64
	err := r.db.QueryRowContext(ctx, text, args...).Scan(&n)
	return n, err
}

// Aggregate mirrors sqlite.Store.Aggregate after its schema lookup.
func (r *sqliteDirect) Aggregate(ctx context.Context, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error) {
	text, args := sqlcompile.CompilePipeline(r.pd, p, readACL)
	rows, err := r.db.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	out := []map[string]any{}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row, err := sqlcompile.DecodeRow(p, r.pcodec, vals)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}

type pgDirect struct {
	pool   *pgxpool.Pool
	st     statements
	pd     sqlcompile.PipelineDialect
	pcodec sqlcompile.ValueCodec
}

// Find mirrors postgres.Store.Find after its schema lookup.
func (r *pgDirect) Find(ctx context.Context, sch parse.Schema, q *query.Query) ([]parse.Object, error) {
	text, args, decode := r.st.FindSQL(sch, q)
	rows, err := r.pool.Query(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []parse.Object
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		obj, err := decode(vals)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
	}
	return out, rows.Err()
}

func (r *pgDirect) Count(ctx context.Context, q *query.Query) (int64, error) {
	text, args := r.st.CountSQL(q)
	var n int64
	err := r.pool.QueryRow(ctx, text, args...).Scan(&n)
	return n, err
}

// Aggregate mirrors postgres.Store.Aggregate after its schema lookup.
func (r *pgDirect) Aggregate(ctx context.Context, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error) {
	text, args := sqlcompile.CompilePipeline(r.pd, p, readACL)
	rows, err := r.pool.Query(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []map[string]any{}
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			return nil, err
		}
		row, err := sqlcompile.DecodeRow(p, r.pcodec, vals)
		if err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, rows.Err()
}
