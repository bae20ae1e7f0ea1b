package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
)

// query_class with a format renders its page as export_data would (the
// same renderers, the same envelope), pages by query_class's own limits
// and names itself in next_call; json (the default) returns the rows.
func TestQueryClassFormat(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	args := map[string]any{"class_name": "Ticket", "keys": []string{"title", "priority"}, "order": "-priority,title", "limit": 2, "format": "csv"}
	res := ok(t, cs, "query_class", args)
	sameText(t, "csv page 1", "title,priority\nHidden task,5\nPaint hull,3\n", res["output"].(string))
	if res["format"] != "csv" || res["row_count"] != 2.0 || res["class_name"] != "Ticket" {
		t.Fatalf("envelope: %v", res)
	}
	next, _ := res["next_call"].(map[string]any)
	if next["tool"] != "query_class" {
		t.Fatalf("next_call: %v", res["next_call"])
	}
	nargs, _ := next["arguments"].(map[string]any)
	if nargs["format"] != "csv" || nargs["skip"] != 2.0 {
		t.Fatalf("next_call arguments: %v", nargs)
	}
	res = ok(t, cs, "query_class", nargs)
	sameText(t, "csv page 2", "title,priority\nIce survey,2\nFuel leak,1\n", res["output"].(string))

	// Markdown and the guide's table name; the envelope says which.
	res = ok(t, cs, "query_class", map[string]any{"class_name": "Project", "keys": []string{"name"}, "order": "name", "format": "Table"})
	sameText(t, "table", "+----------+\n| name     |\n+----------+\n| Apollo   |\n| Borealis |\n| Comet    |\n+----------+\n", res["output"].(string))
	if res["format"] != "table" {
		t.Fatalf("format %v", res["format"])
	}
	res = ok(t, cs, "query_class", map[string]any{"class_name": "Project", "keys": []string{"name"}, "order": "name", "limit": 1, "format": "markdown"})
	sameText(t, "markdown", "| name |\n| --- |\n| Apollo |\n", res["output"].(string))

	// json is the rows, as without a format.
	res = ok(t, cs, "query_class", map[string]any{"class_name": "Project", "keys": []string{"name"}, "order": "name", "format": "json"})
	if res["result_count"] != 3.0 || res["output"] != nil {
		t.Fatalf("json: %v", res)
	}
	msg := fails(t, cs, "query_class", map[string]any{"class_name": "Project", "format": "xml"}, "invalid_argument")
	if !strings.Contains(msg["error"].(string), "format") {
		t.Fatalf("message %q", msg["error"])
	}
}

// A formatted query is governed like the rows: bob sees his rows only,
// and a protected field is neither a default column nor nameable.
func TestQueryClassFormatGoverned(t *testing.T) {
	bobCS := connect(t, newServer(t, fixtureStore(t), agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), "")
	res := ok(t, bobCS, "query_class", map[string]any{"class_name": "_User", "order": "username", "format": "csv"})
	out := res["output"].(string)
	if strings.Contains(out, "example.com") || strings.Contains(out, "email,") {
		t.Fatalf("protected email rendered:\n%s", out)
	}
	if !strings.HasPrefix(out, "objectId,createdAt,updatedAt,emailVerified,username\n") || res["row_count"] != 2.0 {
		t.Fatalf("bob's users: %v", res)
	}
	msg := fails(t, bobCS, "query_class", map[string]any{"class_name": "_User", "keys": []string{"username", "email"}, "format": "csv"}, "access_denied")
	if !strings.Contains(msg["error"].(string), `"email"`) {
		t.Fatalf("message %q", msg["error"])
	}
	res = ok(t, bobCS, "query_class", map[string]any{"class_name": "Ticket", "keys": []string{"objectId"}, "order": "objectId", "format": "csv"})
	sameText(t, "bob's tickets", "objectId\nt000000001\nt000000002\nt000000003\nt000000004\n", res["output"].(string))
}
