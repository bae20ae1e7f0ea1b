package pgtest

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Database creates a database of its own for t on the shared server and
// drops it when t ends; it returns the database's URL. Use it for a
// program that keeps its tables in the default schema (Parse Server),
// where Schema's search_path cannot reach. The name gets a random suffix.
// Like URL, it skips without a server (fails in CI, through Main).
func Database(t testing.TB, name string) string {
	t.Helper()
	base := URL(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := dbName(base) + "_"
	if max := 63 - len(prefix) - 9; len(name) > max {
		name = name[:max]
	}
	db := fmt.Sprintf("%s%s_%x", prefix, strings.ToLower(name), b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, serverURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{db}.Sanitize()); err != nil {
		t.Fatalf("create database %s: %v", db, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, serverURL())
		if err != nil {
			t.Logf("drop database %s: %v", db, err)
			return
		}
		defer c.Close(context.Background())
		if _, err := c.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{db}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Logf("drop database %s: %v", db, err)
		}
	})
	return withDB(serverURL(), db, nil)
}

func dbName(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || len(u.Path) < 2 {
		return "db"
	}
	return u.Path[1:]
}
