package pgtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// Things creates class Thing in st with n analyzed rows {objectId
// id000000…, name "thing i", n i} and an index on n only, so that the
// planner scans the whole class for a where on name and uses the index
// for one on n (the tests of full-scan detection).
func Things(t testing.TB, st *postgres.Store, n int) {
	t.Helper()
	ctx := context.Background()
	sch := parse.NewSchema("Thing")
	sch.Fields["name"] = parse.Field{Type: parse.TypeString}
	sch.Fields["n"] = parse.Field{Type: parse.TypeNumber}
	sch.Indexes = map[string]map[string]int{"n_1": {"n": 1}}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	objs := make([]parse.Object, n)
	for i := range objs {
		objs[i] = parse.Object{"objectId": fmt.Sprintf("id%06d", i), "name": fmt.Sprintf("thing %d", i), "n": float64(i)}
	}
	if err := st.Create(ctx, "Thing", objs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `ANALYZE "Thing"`); err != nil {
		t.Fatal(err)
	}
}
