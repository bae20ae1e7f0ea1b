package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// A query whose context ends is cancelled in PostgreSQL: it stops consuming
// the database instead of running on after the caller gave up.
func TestDeadlineCancelsInDatabase(t *testing.T) {
	ctx := context.Background()
	st, err := postgres.Create(ctx, pgtest.Schema(t, "timeout"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sch, where := pgtest.SlowClass(t, st)
	w, err := query.ParseWhere(sch, where)
	if err != nil {
		t.Fatal(err)
	}
	qctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = st.Count(qctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Big", Where: w})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want a deadline error, got %v", err)
	}
	// The statement is gone from the server (the cancel request may take a
	// moment to land). Uncancelled, this query runs for tens of seconds.
	var running int
	for range 50 {
		if running = pgtest.ActiveCounts(t, st); running == 0 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the query still runs in PostgreSQL after its deadline (%d active)", running)
}
