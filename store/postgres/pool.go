package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
)

// DefaultMaxConns is the connection pool's size when neither WithMaxConns
// nor the URL's pool_max_conns sets it. pgx's own default, max(4, CPUs),
// lets four slow aggregates hold every connection while a cheap count of
// another agent waits for them; the server bounds each principal's calls
// in flight (serve --max-inflight, default 8) below this, so one agent
// cannot take the whole pool.
const DefaultMaxConns = 20

// WithMaxConns sets the connection pool's size (serve --db-max-conns). It
// takes precedence over the URL's pool_max_conns; 0 or less keeps that
// (or DefaultMaxConns).
func WithMaxConns(n int) Option {
	return func(o *options) {
		if n > 0 {
			o.maxConns = n
		}
	}
}

// poolConfig parses url and sizes the pool: WithMaxConns, else the URL's
// pool_max_conns, else DefaultMaxConns.
func poolConfig(url string, o options) (*pgxpool.Config, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg.AfterConnect = func(_ context.Context, c *pgx.Conn) error {
		fastJSON(c.TypeMap())
		return nil
	}
	switch {
	case o.maxConns > 0:
		cfg.MaxConns = int32(min(o.maxConns, 1<<20))
	case !strings.Contains(url, "pool_max_conns"):
		cfg.MaxConns = DefaultMaxConns
	}
	return cfg, nil
}

// fastJSON has a connection decode json and jsonb columns as every store
// decodes JSON written by others (jsonenc.Unmarshal: encoding/json's
// answers, by segmentio's decoder for all but deeply nested text). Values
// written are still encoded by encoding/json.
func fastJSON(m *pgtype.Map) {
	m.RegisterType(&pgtype.Type{Name: "json", OID: pgtype.JSONOID, Codec: &pgtype.JSONCodec{Marshal: json.Marshal, Unmarshal: jsonenc.Unmarshal}})
	m.RegisterType(&pgtype.Type{Name: "jsonb", OID: pgtype.JSONBOID, Codec: &pgtype.JSONBCodec{Marshal: json.Marshal, Unmarshal: jsonenc.Unmarshal}})
}
