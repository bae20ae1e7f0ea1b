package mcpserver_test

import (
	"context"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// What a write answers with is what the writer may read: an object whose
// ACL lets the agent write but not read comes back as its id and times
// only, through a real client.
func TestWriteEchoNeedsRead(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	sch := parse.NewSchema("Note")
	sch.Fields["text"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	cs := govClient(t, st, allGates, agent.Write, agent.Identity{Mode: agent.AuthUser, UserID: bob}, agent.Policy{})
	writeOnly := map[string]any{bob: map[string]any{"write": true}}
	readWrite := map[string]any{bob: map[string]any{"read": true, "write": true}}

	shown := ok(t, cs, "create_object", map[string]any{"class_name": "Note", "object": map[string]any{"text": "seen", "ACL": readWrite}})
	if obj, _ := shown["created"].(map[string]any); obj["text"] != "seen" {
		t.Fatalf("a readable create answers %v, want its text", shown)
	}
	hidden := ok(t, cs, "create_object", map[string]any{"class_name": "Note", "object": map[string]any{"text": "unseen", "ACL": writeOnly}})
	obj, _ := hidden["created"].(map[string]any)
	if obj == nil || obj[parse.FieldObjectID] == nil {
		t.Fatalf("a write-only create answers %v, want its objectId", hidden)
	}
	if _, leaked := obj["text"]; leaked {
		t.Fatalf("a write-only create shows its fields: %v", hidden)
	}
	if _, leaked := obj["ACL"]; leaked {
		t.Fatalf("a write-only create shows its ACL: %v", hidden)
	}
}
