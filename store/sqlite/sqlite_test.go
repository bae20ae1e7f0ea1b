package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/store/storetest"
)

func openTemp(t *testing.T) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "parse.db"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, openTemp)
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.Open(context.Background(), ":memory:")
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

// TestReopen: classes, rows and relations survive closing the database.
func TestReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parse.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	sch := parse.Schema{ClassName: "Game", Fields: map[string]parse.Field{
		"title": {Type: parse.TypeString}, "players": {Type: parse.TypeRelation, TargetClass: parse.ClassUser},
	}}
	if err := s.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "Game", []parse.Object{{"objectId": "g1", "title": "Go"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddRelation(ctx, "Game", "players", "g1", []string{"u1"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = sqlite.Open(ctx, path) // system classes already exist: no error
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	rows, err := s.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Game", Limit: -1, Keys: []string{"title"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0]["title"] != "Go" {
		t.Errorf("rows after reopen: %v", rows)
	}
	ids, err := s.RelatedIDs(ctx, "Game", "players", "g1")
	if err != nil || len(ids) != 1 || ids[0] != "u1" {
		t.Errorf("relation after reopen: %v %v", ids, err)
	}
	all, err := s.Schemas(ctx)
	if err != nil || len(all) != 4 {
		t.Errorf("schemas after reopen: %d %v", len(all), err)
	}
}

// TestOddPath: the database path is a file name, not a URI fragment.
func TestOddPath(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a dir#with?odd%20chars&x=y")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "parse #1.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at %q: %v", path, err)
	}
}
