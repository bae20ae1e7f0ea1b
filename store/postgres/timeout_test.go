package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/pgtest"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// A query whose context ends is cancelled in PostgreSQL: it stops consuming
// the database instead of running on after the caller gave up.
func TestDeadlineCancelsInDatabase(t *testing.T) {
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.Schema(t, "timeout"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sch := parse.NewSchema("Big")
	sch.Fields["title"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `INSERT INTO "Big" ("objectId", "title") SELECT 'id' || g, repeat(md5(g::text), 8) FROM generate_series(1, 300000) g`); err != nil {
		t.Fatal(err)
	}
	var ors []any
	for i := range 40 {
		ors = append(ors, map[string]any{"title": map[string]any{"$regex": fmt.Sprintf("^%d.*(a|b)+.*z$", i)}})
	}
	w, err := query.ParseWhere(sch, map[string]any{"$or": ors})
	if err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = st.Count(qctx, &query.Query{Class: "Big", Where: w})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
	// The statement is gone from the server (the cancel request may take a
	// moment to land). Uncancelled, this query runs for tens of seconds.
	var running int
	for range 50 {
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE 'SELECT count(*) FROM "Big"%'`).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the query still runs in PostgreSQL after its deadline (%d active)", running)
}
