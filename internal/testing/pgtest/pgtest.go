// Package pgtest gives tests their own PostgreSQL database on the local
// server (PARSEMCP_TEST_PG, default postgres://postgres@127.0.0.1:5432).
// A test run creates one database, drops it at the end, and hands each test
// a fresh schema. Without a reachable server the tests skip, except in CI
// (CI=true), where they fail.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

var (
	baseURL string // the run's database
	skipMsg string
)

func serverURL() string {
	if u := os.Getenv("PARSEMCP_TEST_PG"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

func withDB(raw, db string, params map[string]string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Path = "/" + db
	q := u.Query()
	for k, v := range params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Main creates the run's database, runs the tests and drops it. Use it from
// TestMain: os.Exit(pgtest.Main(m)).
func Main(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, serverURL())
	if err != nil {
		skipMsg = fmt.Sprintf("PostgreSQL not reachable at %s (%v); start it or set PARSEMCP_TEST_PG", serverURL(), err)
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "CI requires PostgreSQL:", skipMsg)
			return 1
		}
		return m.Run()
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	db := "parsemcp_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{db}.Sanitize()); err != nil {
		fmt.Fprintln(os.Stderr, "create test database:", err)
		return 1
	}
	baseURL = withDB(serverURL(), db, nil)
	code := m.Run()
	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	if _, err := admin.Exec(dctx, `DROP DATABASE `+pgx.Identifier{db}.Sanitize()+` WITH (FORCE)`); err != nil {
		fmt.Fprintln(os.Stderr, "drop test database:", err)
	}
	admin.Close(dctx)
	return code
}

// URL returns the run's database URL, skipping the test when there is none.
func URL(t testing.TB) string {
	t.Helper()
	if baseURL == "" {
		t.Skip(skipMsg)
	}
	return baseURL
}

// schemas counts the schemas made under each name, so that a test run
// more than once in a process (go test -count=N) gets a fresh one.
var (
	schemasMu sync.Mutex
	schemas   = map[string]int{}
)

// Schema creates a schema in the run's database and returns a URL whose
// connections use it. A name used before in the process gets a numbered
// suffix (name_2, name_3, …).
func Schema(t testing.TB, name string) string {
	t.Helper()
	schemasMu.Lock()
	schemas[name]++
	if n := schemas[name]; n > 1 {
		name = fmt.Sprintf("%s_%d", name, n)
	}
	schemasMu.Unlock()
	base := URL(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	return withDB(base, u.Path[1:], map[string]string{"search_path": name})
}
