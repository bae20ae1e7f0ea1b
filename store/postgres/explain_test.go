package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/parsemcp/parsemcp/internal/pgtest"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
)

func TestExplain(t *testing.T) {
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.Schema(t, "explain"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	sch := parse.NewSchema("Thing")
	sch.Fields["name"] = parse.Field{Type: parse.TypeString}
	sch.Fields["n"] = parse.Field{Type: parse.TypeNumber}
	sch.Indexes = map[string]map[string]int{"n_1": {"n": 1}}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	objs := make([]parse.Object, 5000)
	for i := range objs {
		objs[i] = parse.Object{"objectId": fmt.Sprintf("id%06d", i), "name": fmt.Sprintf("thing %d", i), "n": float64(i)}
	}
	if err := st.Create(ctx, "Thing", objs); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool().Exec(ctx, `ANALYZE "Thing"`); err != nil {
		t.Fatal(err)
	}
	plan := func(where string) (full bool, idx []string) {
		t.Helper()
		s, _ := st.Schema(ctx, "Thing")
		w, err := query.ParseWhereJSON(s, where)
		if err != nil {
			t.Fatal(err)
		}
		p, err := st.Explain(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: "Thing", Where: w, Limit: 100})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Detail) == 0 {
			t.Fatal("no plan detail")
		}
		return p.FullScan, p.Indexes
	}
	if full, _ := plan(`{"name": "thing 7"}`); !full {
		t.Error("a where on an unindexed field should be a full scan")
	}
	if full, idx := plan(`{"n": 42}`); full || len(idx) != 1 || idx[0] != "Thing_n_1" {
		t.Errorf("a where on an indexed field: full=%v indexes=%v", full, idx)
	}
}
