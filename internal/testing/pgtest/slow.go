package pgtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// SlowClass creates the class Big (300,000 rows) in st and returns a where
// constraint whose count runs for tens of seconds, for tests of
// cancellation and time limits reaching PostgreSQL. The statement it
// becomes starts with `SELECT count(*) FROM "Big"`.
func SlowClass(t testing.TB, st *postgres.Store) (parse.Schema, map[string]any) {
	t.Helper()
	ctx := context.Background()
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
	return sch, map[string]any{"$or": ors}
}

// ActiveCounts returns how many client statements counting Big are
// running (parallel workers not included).
func ActiveCounts(t testing.TB, st *postgres.Store) int {
	t.Helper()
	var n int
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active' AND backend_type = 'client backend' AND query LIKE 'SELECT count(*) FROM "Big"%'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
