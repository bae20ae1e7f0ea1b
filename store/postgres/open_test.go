package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// Open runs no DDL: on a schema without `_SCHEMA` it fails with
// ErrNotSetUp and leaves the schema empty.
func TestOpenNotSetUp(t *testing.T) {
	ctx := context.Background()
	u := pgtest.Schema(t, "open_empty")
	_, err := postgres.Open(ctx, u)
	if !errors.Is(err, store.ErrNotSetUp) {
		t.Fatalf("Open = %v, want ErrNotSetUp", err)
	}
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = current_schema()::regnamespace`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d relations after Open (%v), want none", n, err)
	}
}

// A SELECT-only role opens and reads a set-up database; the change feed
// then reports that nothing can be watched.
func TestOpenReadOnlyRole(t *testing.T) {
	ctx := context.Background()
	u := pgtest.Schema(t, "open_ro")
	st, err := postgres.Create(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	sch := parse.NewSchema("Note")
	sch.Fields["text"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, "Note", []parse.Object{{"text": "hello"}}); err != nil {
		t.Fatal(err)
	}
	reach, err := st.FeedReach(ctx)
	if reach != store.FeedOwnWrites || !errors.Is(err, store.ErrFeedNotInstalled) {
		t.Fatalf("owner's feed reach = %v, %v; want FeedOwnWrites", reach, err)
	}
	st.Close()

	ro, err := postgres.Open(ctx, pgtest.ReadOnlyRole(t, u))
	if err != nil {
		t.Fatalf("Open as a SELECT-only role: %v", err)
	}
	defer ro.Close()
	rows, err := ro.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Note", Limit: 10})
	if err != nil || len(rows) != 1 || rows[0]["text"] != "hello" {
		t.Fatalf("Find as a SELECT-only role: %v %v", rows, err)
	}
	if n, err := ro.Count(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Note"}); err != nil || n != 1 {
		t.Fatalf("Count as a SELECT-only role: %d %v", n, err)
	}
	reach, err = ro.FeedReach(ctx)
	if reach != store.FeedNone || !errors.Is(err, store.ErrFeedNotInstalled) {
		t.Fatalf("read-only feed reach = %v, %v; want FeedNone", reach, err)
	}
	if err := ro.Create(ctx, "Note", []parse.Object{{"text": "no"}}); err == nil {
		t.Fatal("a SELECT-only role wrote a row")
	}
	if err := ro.Setup(ctx); err == nil {
		t.Fatal("Setup succeeded for a SELECT-only role")
	}
}
