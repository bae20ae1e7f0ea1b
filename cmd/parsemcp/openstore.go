package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/democache"
	"github.com/parsemcp/parsemcp/internal/flagconfig"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// openStore opens the configured store, creating the demo data if asked.
func (f *storeFlags) openStore(ctx context.Context, log *slog.Logger) (store.Store, error) {
	spec := f.store
	if spec == "" {
		if !f.demo {
			return nil, fmt.Errorf("no store: pass --store sqlite:PATH, or --demo to serve the demo dataset")
		}
		path, err := cachedDemo(ctx, log, f.demoRows)
		if err != nil {
			return nil, err
		}
		spec = "sqlite:" + path
	}
	// Only --demo sets a database up (creating a SQLite file); serving
	// never runs DDL otherwise.
	st, where, err := openSpec(ctx, spec, log, f.dbMaxConns, f.demo && f.store != "")
	if err != nil {
		return nil, err
	}
	if f.demo && f.store != "" {
		if err := ensureDemo(ctx, log, st, f.demoRows); err != nil {
			st.Close()
			return nil, err
		}
	}
	log.Info("store opened", "store", where)
	return st, nil
}

// openSpec opens sqlite:PATH (or a .sqlite/.db path) or a postgres:// URL,
// and returns the store with a printable description (no password). log,
// when not nil, is the PostgreSQL change feed's logger; maxConns, when
// positive, sizes the connection pool (--db-max-conns). With create, the
// store is set up (a SQLite file created, `_SCHEMA` and the system
// classes made where missing: demo, migrate); without it, opening runs no
// DDL and a database that is not set up is an error.
func openSpec(ctx context.Context, spec string, log *slog.Logger, maxConns int, create bool) (store.Store, string, error) {
	if parserest.IsURL(spec) {
		return openParse(ctx, spec, log)
	}
	if strings.HasPrefix(spec, "postgres://") || strings.HasPrefix(spec, "postgresql://") {
		opts := []postgres.Option{postgres.WithMaxConns(maxConns)}
		if log != nil {
			opts = append(opts, postgres.WithLogger(log))
		}
		open := postgres.Open
		if create {
			open = postgres.Create
		}
		st, err := open(ctx, spec, opts...)
		if err != nil {
			return nil, "", fmt.Errorf("open %s: %w", redact(spec), err)
		}
		return st, redact(spec), nil
	}
	path, err := sqlitePath(spec)
	if err != nil {
		return nil, "", err
	}
	open := sqlite.Open
	if create {
		open = sqlite.Create
	}
	st, err := open(ctx, path, sqlite.WithMaxConns(maxConns))
	if err != nil {
		return nil, "", err
	}
	return st, "sqlite:" + path, nil
}

// poolSize returns how many database connections st opens at most (0
// when it has no pool of its own).
func poolSize(st store.Store) int {
	switch st := st.(type) {
	case *postgres.Store:
		return int(st.Pool().Config().MaxConns)
	case *sqlite.Store:
		return st.DB().Stats().MaxOpenConnections
	}
	return 0
}

func sqlitePath(spec string) (string, error) {
	switch {
	case strings.HasPrefix(spec, "sqlite:"):
		p := strings.TrimPrefix(strings.TrimPrefix(spec, "sqlite:"), "//")
		if p == "" {
			return "", fmt.Errorf("store %q: missing path after sqlite:", spec)
		}
		return p, nil
	case strings.HasSuffix(spec, ".sqlite"), strings.HasSuffix(spec, ".db"), strings.HasSuffix(spec, ".sqlite3"):
		return spec, nil
	}
	return "", fmt.Errorf("store %q: unknown store; use sqlite:PATH, postgres://USER@HOST/DB or parse+https://APP_ID@HOST/parse", redact(spec))
}

// redact hides the secrets of a store address (flagconfig.Redact).
func redact(spec string) string { return flagconfig.Redact(spec) }

// ensureDemo fills st with the demo data unless it already holds it.
func ensureDemo(ctx context.Context, log *slog.Logger, st store.Store, rows int) error {
	schemas, err := st.Schemas(ctx)
	if err != nil {
		return err
	}
	for _, s := range schemas {
		if s.ClassName == demo.Classes()[0] {
			return nil // already there
		}
	}
	log.Info("writing demo dataset", "rows", rows)
	_, err = demo.Generate(ctx, st, demo.Options{Rows: rows})
	return err
}

// cachedDemo returns the path of the cached demo database of the given
// size (internal/democache), logging whether it was reused or created.
func cachedDemo(ctx context.Context, log *slog.Logger, rows int) (string, error) {
	ds, err := democache.SQLite(ctx, rows, func(path string) { log.Info("creating demo dataset", "rows", rows, "path", path) })
	if err == nil && ds.Generated == nil {
		log.Info("reusing cached demo dataset", "path", ds.Path)
	}
	return ds.Path, err
}

// agentFactory returns the factory of the agents this process serves, from
// the identity flags. Without an identity flag the agent holds the master
// key (sees every row), read-only unless --permission says otherwise.
// SessionHeader carries a Parse session token: a request with one acts as
// that token's user (its roles resolved from _Role); an invalid or expired
// token is refused with 401.
const SessionHeader = "X-Parse-Session-Token"
