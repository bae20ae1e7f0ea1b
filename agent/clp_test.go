package agent_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// Pointer permissions become the same row constraint on both SQL stores:
// a Pointer field equal to the user, an Array field holding its Pointer
// (readUserFields on find and count, pointerFields on update); an
// anonymous agent reaches no row, a refused operation is refused.
func TestPointerPermissionsOnBothStores(t *testing.T) {
	ctx := context.Background()
	stores := map[string]func(t *testing.T) store.Store{
		"sqlite": func(t *testing.T) store.Store {
			st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "clp.sqlite"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"postgres": func(t *testing.T) store.Store {
			st, err := postgres.Create(ctx, pgtest.Schema(t, "clp_ptr"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			sch := parse.NewSchema("Doc")
			sch.Fields["owner"] = parse.Field{Type: parse.TypePointer, TargetClass: parse.ClassUser}
			sch.Fields["editors"] = parse.Field{Type: parse.TypeArray}
			sch.Fields["title"] = parse.Field{Type: parse.TypeString}
			none := func() *parse.OpPerm { return &parse.OpPerm{Entries: map[string]bool{}} }
			sch.CLP = parse.CLP{Find: none(), Count: none(), Get: none(), Update: &parse.OpPerm{PointerFields: []string{"owner"}},
				ReadUserFields: []string{"editors"}}
			if err := st.CreateClass(ctx, sch); err != nil {
				t.Fatal(err)
			}
			ptr := func(id string) map[string]any {
				return map[string]any{"__type": "Pointer", "className": parse.ClassUser, "objectId": id}
			}
			if err := st.Create(ctx, "Doc", []parse.Object{
				{parse.FieldObjectID: "d1", "title": "ann's", "owner": ptr("uAnn00001"), "editors": []any{ptr("uAnn00001")}},
				{parse.FieldObjectID: "d2", "title": "ben's, ann edits", "owner": ptr("uBen00001"), "editors": []any{ptr("uBen00001"), ptr("uAnn00001")}},
				{parse.FieldObjectID: "d3", "title": "nobody's", "editors": []any{}},
			}); err != nil {
				t.Fatal(err)
			}
			find := func(id agent.Identity) ([]string, int64) {
				t.Helper()
				s := agent.NewScope(agent.New(agent.Write, id), st)
				rows, err := s.Find(ctx, &query.Query{Class: "Doc", Limit: -1})
				if err != nil {
					t.Fatal(err)
				}
				n, err := s.Count(ctx, &query.Query{Class: "Doc", Limit: -1})
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, r := range rows {
					ids = append(ids, r[parse.FieldObjectID].(string))
				}
				slices.Sort(ids)
				return ids, n
			}
			ann := agent.Identity{Mode: agent.AuthUser, UserID: "uAnn00001"}
			ben := agent.Identity{Mode: agent.AuthUser, UserID: "uBen00001"}
			for _, c := range []struct {
				who  string
				id   agent.Identity
				want []string
			}{
				{"ann", ann, []string{"d1", "d2"}},
				{"ben", ben, []string{"d2"}},
				{"anonymous", agent.Identity{Mode: agent.AuthAnonymous}, nil},
				{"master", agent.Identity{Mode: agent.AuthMaster}, []string{"d1", "d2", "d3"}},
			} {
				if got, n := find(c.id); !slices.Equal(got, c.want) || n != int64(len(c.want)) {
					t.Errorf("%s finds %v (count %d), want %v", c.who, got, n, c.want)
				}
			}
			// update: pointerFields owner; ann may not change ben's doc even
			// though she edits it (writeUserFields are not readUserFields).
			s := agent.NewScope(agent.New(agent.Write, ann), st)
			if _, err := s.Update(ctx, "Doc", "d2", parse.Object{"title": "PWNED"}); err == nil {
				t.Error("ann updated ben's doc")
			}
			if _, err := s.Update(ctx, "Doc", "d1", parse.Object{"title": "ann's, edited"}); err != nil {
				t.Errorf("ann updates her doc: %v", err)
			}
		})
	}
}
