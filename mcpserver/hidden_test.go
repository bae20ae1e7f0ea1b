package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// The personal access tokens (_AccessToken) are hidden from every agent,
// the master key's included: not listed, not readable, not countable, and
// refused exactly like a class that does not exist.
func TestAccessTokensHiddenFromMaster(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	sch := parse.NewSchema("_AccessToken")
	sch.Fields["token"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, "_AccessToken", []parse.Object{{parse.FieldObjectID: "tok0000001", "token": "SECRET-TOKEN"}}); err != nil {
		t.Fatal(err)
	}
	cs := govClient(t, st, allGates, agent.Admin, master, agent.Policy{})
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"count_objects", map[string]any{"class_name": "_AccessToken"}},
		{"query_class", map[string]any{"class_name": "_AccessToken"}},
		{"get_object", map[string]any{"class_name": "_AccessToken", "object_id": "tok0000001"}},
		{"get_schema", map[string]any{"class_name": "_AccessToken"}},
	} {
		out, isErr := call(t, cs, c.tool, c.args)
		other := map[string]any{}
		for k, v := range c.args {
			other[k] = v
		}
		other["class_name"] = "_NoSuchClass"
		twin, _ := call(t, cs, c.tool, other)
		if !isErr || mustJSON(t, out) != strings.ReplaceAll(mustJSON(t, twin), "_NoSuchClass", "_AccessToken") {
			t.Errorf("%s on _AccessToken with the master key: %s; a missing class: %s", c.tool, mustJSON(t, out), mustJSON(t, twin))
		}
	}
	res, err := cs.ListResources(ctx, &mcp.ListResourcesParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Resources {
		if strings.Contains(r.URI, "_AccessToken") {
			t.Errorf("listed: %s", r.URI)
		}
	}
	if out := ok(t, cs, "get_all_schemas", map[string]any{}); strings.Contains(mustJSON(t, out), "_AccessToken") {
		t.Errorf("get_all_schemas names it: %s", mustJSON(t, out))
	}
}

// Internal fields never leave the server, whoever asks: the master key,
// with _Session unhidden for it by the policy, reads _Session without its
// sessionToken, in rows and in the schema.
func TestSessionTokenNeverLeaves(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	if err := st.Create(ctx, parse.ClassSession, []parse.Object{{parse.FieldObjectID: "s000000001", "sessionToken": "r:SECRET-SESSION",
		"user": parse.Pointer(parse.ClassUser, bob)}}); err != nil {
		t.Fatal(err)
	}
	// _Session is hidden from every agent unless the policy unhides it.
	hidden := govClient(t, st, allGates, agent.Admin, master, agent.Policy{})
	refused(t, hidden, "query_class", map[string]any{"class_name": parse.ClassSession}, "access_denied", "class_not_found", `class "_Session" was not found (or is not accessible to this agent)`)
	unhide := agent.Policy{Catalog: &agent.Catalog{Classes: map[string]*agent.ClassMeta{parse.ClassSession: {Hidden: agent.HiddenExceptMaster}}}}
	cs := govClient(t, st, allGates, agent.Admin, master, unhide)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"query_class", map[string]any{"class_name": parse.ClassSession}},
		{"get_object", map[string]any{"class_name": parse.ClassSession, "object_id": "s000000001"}},
		{"get_schema", map[string]any{"class_name": parse.ClassSession}},
		{"export_data", map[string]any{"class_name": parse.ClassSession}},
	} {
		out := ok(t, cs, c.tool, c.args)
		if js := mustJSON(t, out); strings.Contains(js, "sessionToken") || strings.Contains(js, "SECRET-SESSION") {
			t.Errorf("%s: %s", c.tool, js)
		}
	}
	if out := ok(t, cs, "get_object", map[string]any{"class_name": parse.ClassSession, "object_id": "s000000001"}); !strings.Contains(mustJSON(t, out), bob) {
		t.Fatalf("the master key reads the session (its user): %s", mustJSON(t, out))
	}
}
