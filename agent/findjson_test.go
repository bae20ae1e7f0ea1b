package agent_test

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// FindJSON and GetJSON give, byte for byte, the encoding of what Find and
// Get give, whoever asks: the rows the agent may read, without the fields
// it may not see (protected fields, a user's own _User row seen whole,
// keys), though the SQL store writes them straight from its columns.
func TestFindJSONIsFindEncoded(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	agents := map[string]agent.Identity{
		"master":    {Mode: agent.AuthMaster},
		"alice":     {Mode: agent.AuthUser, UserID: fixture.Alice},
		"bob":       {Mode: agent.AuthUser, UserID: fixture.Bob},
		"role only": {Mode: agent.AuthUser, Roles: []string{"staff"}},
	}
	for name, id := range agents {
		s := agent.NewScope(agent.New(agent.Readonly, id), st)
		for _, q := range []query.Query{
			{Class: "Ticket", Limit: 100},
			{Class: "Project", Limit: 100},
			{Class: "Project", Limit: 100, Keys: []string{"name", "owner"}},
			{Class: parse.ClassUser, Limit: 100},
		} {
			q.Order = []query.OrderKey{{Field: parse.FieldObjectID}}
			objs, err := s.Find(ctx, &q)
			if err != nil {
				t.Fatalf("%s: Find %s: %v", name, q.Class, err)
			}
			want, err := agent.EncodeRows(objs)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.FindJSON(ctx, &q)
			if err != nil {
				t.Fatalf("%s: FindJSON %s: %v", name, q.Class, err)
			}
			sameRows(t, name+" find "+q.Class, got, want)
			ids := make([]string, 0, len(objs))
			for _, o := range objs {
				ids = append(ids, o[parse.FieldObjectID].(string))
			}
			if len(ids) == 0 {
				continue
			}
			gobjs, err := s.Get(ctx, q.Class, ids, q.Keys)
			if err != nil {
				t.Fatal(err)
			}
			gwant, _ := agent.EncodeRows(gobjs)
			cls, err := s.Class(ctx, q.Class)
			if err != nil {
				t.Fatal(err)
			}
			gotGet, err := cls.GetJSON(ctx, ids, q.Keys)
			if err != nil {
				t.Fatalf("%s: GetJSON %s: %v", name, q.Class, err)
			}
			sameRows(t, name+" get "+q.Class, gotGet, gwant)
		}
	}
}

func sameRows[R ~[]byte](t *testing.T, what string, got, want []R) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d rows, want %d", what, len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("%s row %d:\n got %s\nwant %s", what, i, got[i], want[i])
		}
	}
}

// The scope reads the store's cached schema without copying it; what it
// hands out is a copy all the same: changing it changes neither the next
// answer nor the store's.
func TestScopeSchemaIsTheCallersOwn(t *testing.T) {
	ctx := context.Background()
	st := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	s := agent.NewScope(agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), st)
	for _, class := range []string{"Project", "Payroll"} { // indexes; a CLP
		before, err := st.Schema(ctx, class)
		if err != nil {
			t.Fatal(err)
		}
		first, err := s.Schema(ctx, class)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := s.Schema(ctx, class)
		for name := range first.Fields {
			first.Fields[name] = parse.Field{Type: parse.TypeNumber}
		}
		first.Fields["extra"] = parse.Field{Type: parse.TypeString}
		for _, keys := range first.Indexes {
			keys["extra"] = -1
		}
		for _, p := range []*parse.OpPerm{first.CLP.Find, first.CLP.Get, first.CLP.Count} {
			if p != nil && p.Entries != nil {
				p.Entries["role:intruder"] = true
			}
		}
		first.CLP.ProtectedFields = map[string][]string{"*": {"name"}}
		if again, _ := s.Schema(ctx, class); !reflect.DeepEqual(again, want) {
			t.Errorf("%s: the scope's next answer changed:\n got %+v\nwant %+v", class, again, want)
		}
		if after, _ := st.Schema(ctx, class); !reflect.DeepEqual(after, before) {
			t.Errorf("%s: the store's schema changed:\n got %+v\nwant %+v", class, after, before)
		}
	}
}
