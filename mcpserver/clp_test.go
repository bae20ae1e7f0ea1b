package mcpserver_test

import (
	"context"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// requiresAuthentication admits a signed-in user and nobody else: an
// anonymous agent and an agent acting only as roles (no user, so no
// session Parse Server would accept) are refused every operation it
// guards, through a real client; a user is admitted even though no entry
// names them.
func TestCLPRequiresAuthentication(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	sch := parse.NewSchema("Notice")
	sch.Fields["text"] = parse.Field{Type: parse.TypeString}
	members := &parse.OpPerm{RequiresAuthentication: true}
	sch.CLP.Find, sch.CLP.Count, sch.CLP.Get, sch.CLP.Create = members, members, members, members
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	public := map[string]any{"*": map[string]any{"read": true}}
	if err := st.Create(ctx, "Notice", []parse.Object{
		{parse.FieldObjectID: "N000000001", "text": "members only", "ACL": public},
		{parse.FieldObjectID: "N000000002", "text": "members only too", "ACL": public},
	}); err != nil {
		t.Fatal(err)
	}

	refusedIDs := map[string]agent.Identity{
		"anonymous": {Mode: agent.AuthAnonymous},
		"role only": {Mode: agent.AuthRole, Roles: []string{"Admin"}},
	}
	for name, id := range refusedIDs {
		t.Run(name, func(t *testing.T) {
			cs := govClient(t, st, allGates, agent.Write, id, agent.Policy{})
			for _, c := range []struct {
				tool string
				args map[string]any
				op   parse.Op
			}{
				{"count_objects", map[string]any{"class_name": "Notice"}, parse.OpCount},
				{"query_class", map[string]any{"class_name": "Notice"}, parse.OpFind},
				{"get_object", map[string]any{"class_name": "Notice", "object_id": "N000000001"}, parse.OpGet},
				{"create_object", map[string]any{"class_name": "Notice", "object": map[string]any{"text": "anonymous note"}}, parse.OpCreate},
			} {
				refused(t, cs, c.tool, c.args, "permission_denied", "clp", "class-level permissions of Notice do not allow "+string(c.op)+" for this agent")
			}
			if n := countRaw(t, st, "Notice"); n != 2 {
				t.Fatalf("a refused create wrote: %d notices", n)
			}
		})
	}

	t.Run("user", func(t *testing.T) {
		cs := govClient(t, st, allGates, agent.Write, agent.Identity{Mode: agent.AuthUser, UserID: bob}, agent.Policy{})
		if out := ok(t, cs, "count_objects", map[string]any{"class_name": "Notice"}); out["count"] != float64(2) {
			t.Fatalf("count %v, want 2", out["count"])
		}
		if out := ok(t, cs, "get_object", map[string]any{"class_name": "Notice", "object_id": "N000000002"}); out["object"].(map[string]any)["text"] != "members only too" {
			t.Fatalf("get: %v", out)
		}
		ok(t, cs, "create_object", map[string]any{"class_name": "Notice", "object": map[string]any{"text": "bob's note"}})
		if n := countRaw(t, st, "Notice"); n != 3 {
			t.Fatalf("%d notices after bob's create, want 3", n)
		}
	})
}

// countRaw counts the rows of class in the store itself (no governance).
func countRaw(t *testing.T, st store.Store, class string) int64 {
	t.Helper()
	n, err := st.Count(context.Background(), &query.Query{ReadACL: query.NoACLFilter, Class: class})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
