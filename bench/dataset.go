package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/url"
	"os"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/democache"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// CachedSQLite returns the path of the demo dataset of the given size in
// the OS cache directory (<cache>/parsemcp/demo-<demo.Version>-<rows>.sqlite,
// the file `parsemcp serve --demo --demo-rows N` uses too), generating it
// into a temporary file renamed into place when it is absent.
func CachedSQLite(ctx context.Context, rows int, log io.Writer) (string, error) {
	start := time.Now()
	ds, err := democache.SQLite(ctx, rows, nil)
	switch {
	case err != nil:
		return "", err
	case ds.Generated == nil:
		fmt.Fprintf(log, "sqlite: reusing cached demo dataset %s\n", ds.Path)
	default:
		fmt.Fprintf(log, "sqlite: generated %d demo objects into %s in %s\n", ds.Generated.Objects, ds.Path, time.Since(start).Round(time.Millisecond))
	}
	return ds.Path, nil
}

// PostgresURL is the server the benchmark creates its database on:
// PARSEMCP_BENCH_PG, else PARSEMCP_TEST_PG, else the local server.
func PostgresURL() string {
	for _, k := range []string{"PARSEMCP_BENCH_PG", "PARSEMCP_TEST_PG"} {
		if u := os.Getenv(k); u != "" {
			return u
		}
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// PostgresDB is a fresh database holding the demo dataset.
type PostgresDB struct {
	URL   string // connection URL of the database
	Name  string
	admin string
}

// Reachable reports whether the PostgreSQL server answers.
func Reachable(ctx context.Context, adminURL string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

// NewPostgresDB creates a database parsemcp_bench_<random> on the server at
// adminURL, writes the demo dataset into it and analyzes it. Drop it with
// Drop, also on failure of later steps.
func NewPostgresDB(ctx context.Context, adminURL string, rows int, log io.Writer) (*PostgresDB, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "parsemcp_bench_" + hex.EncodeToString(b[:])
	c, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())
	if _, err := c.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	u, err := url.Parse(adminURL)
	if err != nil {
		return nil, err
	}
	u.Path = "/" + name
	db := &PostgresDB{URL: u.String(), Name: name, admin: adminURL}
	start := time.Now()
	st, err := postgres.Create(ctx, db.URL)
	if err != nil {
		return db, err
	}
	defer st.Close()
	stats, err := demo.Generate(ctx, st, demo.Options{Rows: rows})
	if err != nil {
		return db, fmt.Errorf("demo data: %w", err)
	}
	// Fresh tables have no planner statistics until autovacuum gets to them;
	// analyze now so every run plans the same way.
	if _, err := st.Pool().Exec(ctx, "ANALYZE"); err != nil {
		return db, err
	}
	fmt.Fprintf(log, "postgres: loaded %d demo objects into database %s in %s\n", stats.Objects, name, time.Since(start).Round(time.Millisecond))
	return db, nil
}

// Drop drops the database (connections still open are terminated).
func (db *PostgresDB) Drop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, db.admin)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	_, err = c.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{db.Name}.Sanitize()+` WITH (FORCE)`)
	return err
}
