package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// Open never creates a database: a mistyped path is an error naming the
// path, and no file appears.
func TestOpenMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mistyped", "parse.db")
	_, err := sqlite.Open(context.Background(), path)
	if err == nil || !strings.Contains(err.Error(), "no such database file") || !strings.Contains(err.Error(), path) {
		t.Fatalf("Open(%q) = %v, want a no-such-file error naming the path", path, err)
	}
	if _, statErr := os.Stat(path); !errors.Is(statErr, os.ErrNotExist) {
		t.Fatalf("Open created %s (%v)", path, statErr)
	}
	if _, err := sqlite.Open(context.Background(), ":memory:"); err == nil {
		t.Fatal("Open(:memory:) succeeded: an in-memory database is always new, only Create makes one")
	}
}

// A file that is not a Parse database is refused with ErrNotSetUp, and
// Open runs no DDL on it.
func TestOpenNotSetUp(t *testing.T) {
	path := filepath.Join(t.TempDir(), "other.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE notes (id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	_, err = sqlite.Open(context.Background(), path)
	if !errors.Is(err, store.ErrNotSetUp) {
		t.Fatalf("Open = %v, want ErrNotSetUp", err)
	}
	var tables int
	if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&tables); err != nil || tables != 1 {
		t.Fatalf("%d tables after Open (%v), want only the one that was there", tables, err)
	}
	db.Close()
}
