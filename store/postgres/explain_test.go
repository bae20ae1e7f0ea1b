package postgres_test

import (
	"context"
	"testing"

	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
)

func TestExplain(t *testing.T) {
	ctx := context.Background()
	st, err := postgres.Create(ctx, pgtest.Schema(t, "explain"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pgtest.Things(t, st, 5000)
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
