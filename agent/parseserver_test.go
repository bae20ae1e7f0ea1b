package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// TestWritesReadBackThroughParseServer creates objects as an agent acting
// as a Parse user, on a database Parse Server made, and reads them back
// through Parse Server: the created object is its creator's alone (the
// default ACL without a policy), its schema defaultValue is applied, and a
// write pointing at a missing object writes nothing.
func TestWritesReadBackThroughParseServer(t *testing.T) {
	ps := parseserver.Start(t, parseserver.Options{})
	ctx := context.Background()
	call := ps.RequestJSON
	type user struct{ id, token string }
	users := map[string]user{}
	for _, name := range []string{"alice", "bob"} {
		id, token := ps.SignUp(name)
		users[name] = user{id, token}
	}
	if code, out := call(http.MethodPost, "/schemas/Note", map[string]any{"className": "Note", "fields": map[string]any{
		"title":  map[string]any{"type": "String", "required": true},
		"status": map[string]any{"type": "String", "defaultValue": "open"},
		"owner":  map[string]any{"type": "Pointer", "targetClass": "_User"},
	}}, "", true); code != http.StatusOK {
		t.Fatalf("create Note: %d %v", code, out)
	}

	st, err := postgres.Open(ctx, ps.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	id, err := agent.UserIdentity(ctx, st, users["alice"].id)
	if err != nil {
		t.Fatal(err)
	}
	scope := agent.NewScope(agent.New(agent.Write, id), st)

	ptr := func(id string) map[string]any {
		return map[string]any{"__type": "Pointer", "className": "_User", "objectId": id}
	}
	created, err := scope.Create(ctx, "Note", parse.Object{"title": "mine", "owner": ptr(users["alice"].id)})
	if err != nil {
		t.Fatal(err)
	}
	noteID := created[parse.FieldObjectID].(string)
	code, out := call(http.MethodGet, "/classes/Note/"+noteID, nil, users["alice"].token, false)
	if code != http.StatusOK || out["status"] != "open" || out["title"] != "mine" {
		t.Fatalf("alice reads her note through Parse Server: %d %v (want status defaulted to open)", code, out)
	}
	if acl, _ := json.Marshal(out["ACL"]); string(acl) != `{"`+users["alice"].id+`":{"read":true,"write":true}}` {
		t.Fatalf("ACL of the created note: %s", acl)
	}
	if code, out := call(http.MethodGet, "/classes/Note/"+noteID, nil, users["bob"].token, false); code != http.StatusNotFound {
		t.Fatalf("bob reads alice's note through Parse Server: %d %v", code, out)
	}
	if code, out := call(http.MethodGet, "/classes/Note/"+noteID, nil, "", false); code != http.StatusNotFound {
		t.Fatalf("anonymous reads alice's note through Parse Server: %d %v", code, out)
	}

	// Pointers to a user alice cannot read (Parse Server 9 makes new users
	// private: bob's row is his alone) and to one that does not exist:
	// refused alike, nothing written.
	if code, _ := call(http.MethodGet, "/users/"+users["bob"].id, nil, users["alice"].token, false); code != http.StatusNotFound {
		t.Fatalf("alice reads bob's user row through Parse Server: %d", code)
	}
	for _, target := range []string{users["bob"].id, "NoSuchUser"} {
		_, err = scope.Create(ctx, "Note", parse.Object{"title": "dangling", "owner": ptr(target)})
		var pe *agent.PointerError
		if !errors.As(err, &pe) || pe.Field != "owner" || pe.ID != target {
			t.Fatalf("create pointing at user %s: %v", target, err)
		}
	}
	_, out = call(http.MethodGet, "/classes/Note?count=1&limit=0&where=%7B%22title%22%3A%22dangling%22%7D", nil, "", true)
	if out["count"] != 0.0 {
		t.Fatalf("a refused create wrote: %v", out)
	}
}
