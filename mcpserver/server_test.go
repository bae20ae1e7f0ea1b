package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
)

var builtinTools = map[string]string{
	"list_tools": "discovery", "get_all_schemas": "schema", "get_schema": "schema",
	"query_class": "query", "count_objects": "query", "get_object": "query", "get_objects": "query", "get_sample_objects": "query",
	"explain_query": "query", "export_data": "export",
	"text_search": "search", "autocomplete": "search", "faceted_search": "search",
	"aggregate": "aggregate", "group_by": "aggregate", "group_by_date": "aggregate", "distinct": "aggregate",
	"call_method": "mutation",
}

var protocolVersions = []string{"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"}

func TestProtocolVersions(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	for _, v := range protocolVersions {
		t.Run(v, func(t *testing.T) {
			cs := connect(t, srv, v)
			ctx := context.Background()
			if got := cs.InitializeResult().ProtocolVersion; got != v {
				t.Fatalf("negotiated %q, want %q", got, v)
			}
			if got := cs.InitializeResult().ServerInfo.Name; got != "parsemcp" {
				t.Errorf("server name %q", got)
			}
			if err := cs.Ping(ctx, nil); err != nil {
				t.Fatalf("ping: %v", err)
			}
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, tool := range res.Tools {
				got[tool.Name], _ = tool.Meta["category"].(string)
			}
			if d := cmp.Diff(builtinTools, got); d != "" {
				t.Fatalf("tools/list (-want +got):\n%s", d)
			}
			out := ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
			if out["count"] != 5.0 {
				t.Fatalf("count = %v, want 5", out["count"])
			}
			pr, err := cs.ListPrompts(ctx, nil)
			if err != nil || len(pr.Prompts) != 8 {
				t.Fatalf("prompts/list: %d prompts, err %v", len(pr.Prompts), err)
			}
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://Project/count"})
			if err != nil {
				t.Fatal(err)
			}
			if rr.Contents[0].Text != `{"class_name":"Project","count":3}` {
				t.Fatalf("resource: %s", rr.Contents[0].Text)
			}
		})
	}
}

func TestToolsListCategoryFilter(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	cs := connect(t, srv, "")
	for _, tc := range []struct {
		category string
		want     []string
	}{
		{"schema", []string{"get_all_schemas", "get_schema"}},
		{"SCHEMA", []string{"get_all_schemas", "get_schema"}},
		{"discovery", []string{"list_tools"}},
		{"export", []string{"export_data"}},
		{"no-such-category", nil},
	} {
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Meta: mcp.Meta{"category": tc.category}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, tool := range res.Tools {
			got = append(got, tool.Name)
		}
		sort.Strings(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("category %q: got %v, want %v", tc.category, got, tc.want)
		}
	}
}

func TestListTools(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	out := ok(t, cs, "list_tools", map[string]any{})
	if n := len(out["tools"].([]any)); n != len(builtinTools) {
		t.Fatalf("list_tools: %d tools", n)
	}
	if _, ok := out["categories"].(map[string]any)["query"]; !ok {
		t.Fatal("categories missing query")
	}
	out = ok(t, cs, "list_tools", map[string]any{"category": "Query"})
	var names []string
	for _, tool := range out["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	want := []string{"count_objects", "explain_query", "get_object", "get_objects", "get_sample_objects", "query_class"}
	if !slices.Equal(names, want) {
		t.Fatalf("list_tools(query) = %v", names)
	}
	fails(t, cs, "list_tools", map[string]any{"category": 3}, "invalid_argument")
}

func TestSchemaTools(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	out := ok(t, cs, "get_all_schemas", map[string]any{})
	var custom, builtIn []string
	for _, c := range out["custom"].([]any) {
		custom = append(custom, c.(map[string]any)["name"].(string))
	}
	for _, c := range out["built_in"].([]any) {
		builtIn = append(builtIn, c.(map[string]any)["name"].(string))
	}
	// _Session is hidden from every agent, the master key included, unless
	// the policy unhides it.
	if !slices.Equal(custom, []string{"Payroll", "Project", "Ticket"}) || !slices.Equal(builtIn, []string{"_Role", "_User"}) {
		t.Fatalf("custom %v, built_in %v", custom, builtIn)
	}
	fields := out["custom"].([]any)[1].(map[string]any)["fields"].(map[string]any)
	if fields["owner"] != "Pointer<_User>" || fields["members"] != "Relation<_User>" || fields["tags"] != "Array" {
		t.Fatalf("Project fields: %v", fields)
	}
	out = ok(t, cs, "get_all_schemas", map[string]any{"names": []string{"Project", "Ticket", "Nope"}, "prefix": "T"})
	if len(out["custom"].([]any)) != 1 || out["total"] != 1.0 {
		t.Fatalf("names+prefix: %v", out)
	}
	out = ok(t, cs, "get_all_schemas", map[string]any{"names": "Ticket"}) // comma-string form
	if out["total"] != 1.0 {
		t.Fatalf("names as string: %v", out)
	}

	out = ok(t, cs, "get_schema", map[string]any{"class_name": "Project"})
	byName := map[string]map[string]any{}
	for _, f := range out["fields"].([]any) {
		m := f.(map[string]any)
		byName[m["name"].(string)] = m
	}
	if byName["owner"]["type"] != "Pointer" || byName["owner"]["target_class"] != "_User" || !strings.Contains(byName["owner"]["query_hint"].(string), `"className":"_User"`) {
		t.Fatalf("owner field: %v", byName["owner"])
	}
	if byName["name"]["required"] != true {
		t.Fatalf("name should be required: %v", byName["name"])
	}
	if out["indexes"] != nil { // unless the operator exposes them (TestExplainHiddenByDefault)
		t.Fatalf("indexes: %v", out["indexes"])
	}
	fails(t, cs, "get_schema", map[string]any{"class_name": "NoSuchClass"}, "access_denied")
	fails(t, cs, "get_schema", map[string]any{}, "invalid_argument")
	fails(t, cs, "get_schema", map[string]any{"class_name": "Project", "extra": 1}, "invalid_argument")
}

func TestQueryClass(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	q := func(args map[string]any) []string {
		t.Helper()
		args["class_name"] = "Ticket"
		out := ok(t, cs, "query_class", args)
		return ids(out["results"])
	}
	cases := []struct {
		name string
		args map[string]any
		want []string
	}{
		{"all", map[string]any{}, []string{"t000000001", "t000000002", "t000000003", "t000000004", "t000000005"}},
		{"equality", map[string]any{"where": map[string]any{"status": "open"}}, []string{"t000000001", "t000000003", "t000000005"}},
		{"where as string", map[string]any{"where": `{"status":"closed"}`}, []string{"t000000002"}},
		{"$gte+order", map[string]any{"where": map[string]any{"priority": map[string]any{"$gte": 2}}, "order": "-priority"}, []string{"t000000005", "t000000002", "t000000003"}},
		{"$in", map[string]any{"where": map[string]any{"status": map[string]any{"$in": []any{"closed", "in_progress"}}}}, []string{"t000000002", "t000000004"}},
		{"pointer by id", map[string]any{"where": map[string]any{"project": "pApollo001"}}, []string{"t000000001", "t000000002"}},
		{"pointer object", map[string]any{"where": map[string]any{"project": map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pBorealis2"}}}, []string{"t000000003"}},
		{"date", map[string]any{"where": map[string]any{"createdAt": map[string]any{"$gt": date("2025-05-03T00:00:00.000Z")}}}, []string{"t000000004", "t000000005"}},
		{"$exists false", map[string]any{"where": map[string]any{"project": map[string]any{"$exists": false}}}, []string{"t000000005"}},
		{"$regex i", map[string]any{"where": map[string]any{"title": map[string]any{"$regex": "^(fuel|ICE)", "$options": "i"}}}, []string{"t000000001", "t000000003"}},
		{"$or", map[string]any{"where": map[string]any{"$or": []any{map[string]any{"priority": 5}, map[string]any{"status": "closed"}}}}, []string{"t000000002", "t000000005"}},
		{"limit+skip", map[string]any{"limit": 2, "skip": 1, "order": "createdAt"}, []string{"t000000002", "t000000003"}},
		{"multi-key order", map[string]any{"order": "priority,-createdAt", "limit": 3}, []string{"t000000004", "t000000001", "t000000003"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := q(tc.args); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}

	t.Run("pagination next_call", func(t *testing.T) {
		out := ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "limit": 2, "where": map[string]any{"priority": map[string]any{"$lt": 10}}, "order": "createdAt", "keys": []string{"title"}})
		want := map[string]any{"tool": "query_class", "arguments": map[string]any{
			"class_name": "Ticket", "limit": 2.0, "skip": 2.0, "order": "createdAt", "keys": []any{"title"},
			"where": map[string]any{"priority": map[string]any{"$lt": 10.0}},
		}}
		if d := cmp.Diff(want, out["next_call"]); d != "" {
			t.Fatalf("next_call (-want +got):\n%s", d)
		}
		if d := cmp.Diff(map[string]any{"limit": 2.0, "skip": 0.0, "has_more": true}, out["pagination"]); d != "" {
			t.Fatal(d)
		}
		last := ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "limit": 2, "skip": 4})
		if _, has := last["next_call"]; has || last["pagination"].(map[string]any)["has_more"] != false {
			t.Fatalf("last page: %v", last)
		}
	})

	t.Run("keys and include", func(t *testing.T) {
		out := ok(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"objectId": "t000000001"},
			"keys": "title,project.name", "include": []string{"project"}})
		row := out["results"].([]any)[0].(map[string]any)
		want := map[string]any{
			"objectId": "t000000001", "createdAt": "2025-05-01T00:00:00.000Z", "updatedAt": "2025-05-01T00:00:00.000Z", "title": "Fuel leak",
			"project": map[string]any{"__type": "Object", "className": "Project", "objectId": "pApollo001", "name": "Apollo",
				"createdAt": "2025-02-01T00:00:00.000Z", "updatedAt": "2025-02-01T00:00:00.000Z",
				"members": map[string]any{"__type": "Relation", "className": "_User"}}, // Relation markers come with any keys
		}
		if d := cmp.Diff(want, row); d != "" {
			t.Fatalf("row (-want +got):\n%s", d)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			args map[string]any
			code string
			msg  string
		}{
			{map[string]any{"class_name": "Nope"}, "access_denied", `class "Nope" was not found`},
			{map[string]any{"class_name": "Ticket", "where": "{not json"}, "invalid_argument", "where"},
			{map[string]any{"class_name": "Ticket", "where": []any{1}}, "invalid_argument", "JSON object"},
			{map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, "access_denied", `where.nope: "nope" is not a field of Ticket`},
			{map[string]any{"class_name": "Ticket", "where": map[string]any{"priority": "high"}}, "invalid_query", "where.priority"},
			{map[string]any{"class_name": "Ticket", "where": map[string]any{"status": map[string]any{"$in": "open"}}}, "invalid_query", "where.status.$in"},
			{map[string]any{"class_name": "Ticket", "where": map[string]any{"status": map[string]any{"$bogus": 1}}}, "invalid_query", "unknown operator $bogus"},
			{map[string]any{"class_name": "Ticket", "where": map[string]any{"title": map[string]any{"$regex": "("}}}, "invalid_query", "invalid regular expression"},
			{map[string]any{"class_name": "Ticket", "limit": 0}, "invalid_argument", "between 1 and 1000"},
			{map[string]any{"class_name": "Ticket", "limit": 1001}, "invalid_argument", "between 1 and 1000"},
			{map[string]any{"class_name": "Ticket", "limit": "ten"}, "invalid_argument", `"limit"`},
			{map[string]any{"class_name": "Ticket", "skip": -1}, "invalid_argument", "skip"},
			{map[string]any{"class_name": "Ticket", "order": "-nope"}, "access_denied", `order: "nope" is not a field of Ticket`},
			{map[string]any{"class_name": "Ticket", "keys": []string{"nope"}}, "access_denied", `keys: "nope" is not a field of Ticket`},
			{map[string]any{"class_name": "Ticket", "include": []string{"title"}}, "invalid_argument", "only Pointer fields"},
			{map[string]any{"class_name": "Ticket", "include": []string{"project.nope"}}, "access_denied", `include: "nope" is not a field of Project`},
			{map[string]any{"class_name": "Ticket", "include": []string{"project.owner.a.b"}}, "invalid_query", "at most 3 pointers deep"},
			{map[string]any{"class_name": "Ticket", "bogus": true}, "invalid_argument", `unknown argument "bogus"`},
		} {
			out := fails(t, cs, "query_class", tc.args, tc.code)
			if !strings.Contains(out["error"].(string), tc.msg) {
				t.Errorf("%v: message %q does not mention %q", tc.args, out["error"], tc.msg)
			}
		}
	})
}

func TestCountAndGet(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	if out := ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open"}}); out["count"] != 3.0 {
		t.Fatalf("count open = %v", out["count"])
	}
	fails(t, cs, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": map[string]any{"$gt": nil}}}, "invalid_query")

	out := ok(t, cs, "get_object", map[string]any{"class_name": "Project", "object_id": "pApollo001", "include": []string{"owner"}})
	obj := out["object"].(map[string]any)
	if obj["name"] != "Apollo" || obj["owner"].(map[string]any)["username"] != "alice" {
		t.Fatalf("get_object: %v", obj)
	}
	if _, leaked := obj["owner"].(map[string]any)["sessionToken"]; leaked {
		t.Fatal("sessionToken leaked")
	}
	msg := fails(t, cs, "get_object", map[string]any{"class_name": "Project", "object_id": "missing123"}, "not_found")
	if msg["error"] != "Object not found: Project#missing123" {
		t.Fatalf("message: %v", msg["error"])
	}
	fails(t, cs, "get_object", map[string]any{"class_name": "Project", "object_id": "bad id!"}, "invalid_argument")
	fails(t, cs, "get_object", map[string]any{"class_name": "Project"}, "invalid_argument")

	out = ok(t, cs, "get_objects", map[string]any{"class_name": "Project", "ids": []string{"pComet0003", "pApollo001", "pApollo001", "zzzzzzzzzz"}})
	if out["requested"] != 3.0 || out["found"] != 2.0 {
		t.Fatalf("get_objects counts: %v", out)
	}
	if d := cmp.Diff([]any{"zzzzzzzzzz"}, out["missing"]); d != "" {
		t.Fatal(d)
	}
	if _, ok := out["objects"].(map[string]any)["pComet0003"]; !ok {
		t.Fatalf("objects keyed by id: %v", out["objects"])
	}
	many := make([]string, 51)
	for i := range many {
		many[i] = "id" + strings.Repeat("x", 3) + string(rune('A'+i%26)) + string(rune('a'+i/26))
	}
	fails(t, cs, "get_objects", map[string]any{"class_name": "Project", "ids": many}, "invalid_argument")
	fails(t, cs, "get_objects", map[string]any{"class_name": "Project", "ids": []string{}}, "invalid_argument")

	out = ok(t, cs, "get_sample_objects", map[string]any{"class_name": "Ticket", "limit": 2})
	if d := cmp.Diff([]string{"t000000005", "t000000004"}, ids(out["results"])); d != "" {
		t.Fatalf("samples: %s", d)
	}
	if out := ok(t, cs, "get_sample_objects", map[string]any{"class_name": "Ticket"}); out["sample_count"] != 5.0 {
		t.Fatalf("default sample: %v", out["sample_count"])
	}
	fails(t, cs, "get_sample_objects", map[string]any{"class_name": "Ticket", "limit": 21}, "invalid_argument")
}

// An agent acting as a user sees what Parse's ACLs and CLPs let that user see.
func TestACLAndCLP(t *testing.T) {
	st := fixtureStore(t)
	bobCS := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), "")
	out := ok(t, bobCS, "query_class", map[string]any{"class_name": "Project"})
	if d := cmp.Diff([]string{"pApollo001", "pBorealis2"}, ids(out["results"])); d != "" {
		t.Fatalf("bob's projects: %s", d)
	}
	if out := ok(t, bobCS, "count_objects", map[string]any{"class_name": "Ticket"}); out["count"] != 4.0 {
		t.Fatalf("bob's ticket count %v (the no-ACL ticket must stay hidden)", out["count"])
	}
	fails(t, bobCS, "get_object", map[string]any{"class_name": "Project", "object_id": "pComet0003"}, "not_found")
	fails(t, bobCS, "query_class", map[string]any{"class_name": "Payroll"}, "permission_denied")
	// protected fields (the _User email) are gone from rows and schema.
	u := ok(t, bobCS, "get_object", map[string]any{"class_name": "_User", "object_id": alice})
	if _, has := u["object"].(map[string]any)["email"]; has {
		t.Fatal("email is protected for other users")
	}
	fails(t, bobCS, "query_class", map[string]any{"class_name": "_User", "where": map[string]any{"email": "alice@example.com"}}, "access_denied")
	// the include of a project bob cannot read is removed, as Parse
	// Server does.
	tk := ok(t, bobCS, "get_object", map[string]any{"class_name": "Ticket", "object_id": "t000000004", "include": []string{"project"}})
	if p, has := tk["object"].(map[string]any)["project"]; has {
		t.Fatalf("unreadable include kept: %v", p)
	}

	admin := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Admin"}}), "")
	out = ok(t, admin, "query_class", map[string]any{"class_name": "Project"})
	if d := cmp.Diff([]string{"pApollo001", "pComet0003"}, ids(out["results"])); d != "" {
		t.Fatalf("Admin role's projects: %s", d)
	}

	anon := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}), "")
	out = ok(t, anon, "get_all_schemas", map[string]any{})
	for _, c := range out["built_in"].([]any) {
		if c.(map[string]any)["name"] == "_Session" {
			t.Fatal("_Session must be hidden")
		}
	}
	a := fails(t, anon, "get_schema", map[string]any{"class_name": "_Session"}, "access_denied")
	b := fails(t, anon, "get_schema", map[string]any{"class_name": "_Nothing"}, "access_denied")
	if strings.ReplaceAll(a["error"].(string), "_Session", "X") != strings.ReplaceAll(b["error"].(string), "_Nothing", "X") {
		t.Fatalf("hidden and unknown classes must look the same: %q vs %q", a["error"], b["error"])
	}
}

func TestPrompts(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	ctx := context.Background()
	res, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	want := []string{"class_overview", "count_by", "created_in_range", "explore_database", "find_relationship", "parse_conventions", "parse_relations", "recent_activity"}
	if !slices.Equal(names, want) {
		t.Fatalf("prompts: %v", names)
	}
	args := map[string]map[string]string{
		"class_overview":    {"class_name": "Ticket"},
		"count_by":          {"class_name": "Ticket", "group_by": "status"},
		"created_in_range":  {"class_name": "Ticket", "since": "2025-05-01"},
		"explore_database":  {},
		"find_relationship": {"parent_class": "Project", "parent_id": "pApollo001", "child_class": "Ticket", "pointer_field": "project"},
		"parse_conventions": {},
		"parse_relations":   {},
		"recent_activity":   {"class_name": "Ticket", "limit": "3"},
	}
	for name, a := range args {
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: a})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(r.Messages) != 1 || r.Messages[0].Content.(*mcp.TextContent).Text == "" {
			t.Fatalf("%s: empty prompt", name)
		}
	}
	r, _ := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "parse_relations"})
	text := r.Messages[0].Content.(*mcp.TextContent).Text
	if !strings.Contains(text, "Ticket") || !strings.Contains(text, "Project") {
		t.Fatalf("parse_relations does not show Ticket→Project:\n%s", text)
	}
	for _, bad := range []mcp.GetPromptParams{
		{Name: "class_overview"},
		{Name: "class_overview", Arguments: map[string]string{"class_name": "Nope"}},
		{Name: "recent_activity", Arguments: map[string]string{"class_name": "Ticket", "limit": "1000"}},
		{Name: "created_in_range", Arguments: map[string]string{"class_name": "Ticket", "since": "yesterday"}},
		{Name: "no_such_prompt"},
	} {
		_, err := cs.GetPrompt(ctx, &bad)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%s %v: want -32602, got %v", bad.Name, bad.Arguments, err)
		}
	}
}

func TestResources(t *testing.T) {
	st := fixtureStore(t)
	cs := connect(t, newServer(t, st, agent.Readonly, master), "")
	ctx := context.Background()
	tpl, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, rt := range tpl.ResourceTemplates {
		uris = append(uris, rt.URITemplate)
	}
	sort.Strings(uris)
	if d := cmp.Diff([]string{"parse://{class_name}/count", "parse://{class_name}/samples", "parse://{class_name}/schema"}, uris); d != "" {
		t.Fatal(d)
	}
	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range list.Resources {
		if strings.HasPrefix(r.URI, "parse://Project/") {
			got = append(got, r.URI)
		}
	}
	if d := cmp.Diff([]string{"parse://Project/schema", "parse://Project/count", "parse://Project/samples"}, got); d != "" {
		t.Fatal(d)
	}
	rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://Ticket/samples"})
	if err != nil {
		t.Fatal(err)
	}
	var samples map[string]any
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &samples); err != nil || samples["sample_count"] != 5.0 || rr.Contents[0].MIMEType != "application/json" {
		t.Fatalf("samples: %v %v", samples, err)
	}
	rr, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://Project/schema"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, `"class_name":"Project"`) {
		t.Fatalf("schema resource: %v", err)
	}
	for _, uri := range []string{"parse://Nope/count", "parse://Project/bogus", "parse://Project", "parse://../etc/count"} {
		_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		var je *jsonrpc.Error
		if !errors.As(err, &je) || (je.Code != jsonrpc.CodeInvalidParams && je.Code != mcp.CodeResourceNotFound) {
			t.Errorf("%s: want an invalid-params or not-found error, got %v", uri, err)
		}
	}
	// An anonymous agent cannot list or read a hidden class.
	anon := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}), "")
	list, _ = anon.ListResources(ctx, nil)
	for _, r := range list.Resources {
		if strings.HasPrefix(r.URI, "parse://_Session/") {
			t.Fatal("hidden class listed")
		}
	}
	if _, err := anon.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://_Session/count"}); err == nil {
		t.Fatal("hidden class readable")
	}
}

func TestCompletion(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}), "")
	ctx := context.Background()
	complete := func(ref *mcp.CompleteReference, arg, value string) []string {
		t.Helper()
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Completion.Values
	}
	tpl := &mcp.CompleteReference{Type: "ref/resource", URI: "parse://{class_name}/count"}
	if got := complete(tpl, "class_name", "P"); !slices.Equal(got, []string{"Payroll", "Project"}) {
		t.Fatalf("P → %v", got)
	}
	// The old template spelling is still accepted.
	old := &mcp.CompleteReference{Type: "ref/resource", URI: "parse://{className}/count"}
	if got := complete(old, "className", "P"); !slices.Equal(got, []string{"Payroll", "Project"}) {
		t.Fatalf("old spelling: P → %v", got)
	}
	if got := complete(tpl, "className", "_"); !slices.Equal(got, []string{"_Role", "_User"}) {
		t.Fatalf("_ → %v (hidden _Session must not complete)", got)
	}
	if got := complete(&mcp.CompleteReference{Type: "ref/prompt", Name: "class_overview"}, "class_name", "ti"); !slices.Equal(got, []string{"Ticket"}) {
		t.Fatalf("prompt arg → %v", got)
	}
}

// logging/setLevel takes the eight levels of the spec and refuses any
// other with a JSON-RPC error; the session goes on either way.
func TestLoggingSetLevel(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "2025-06-18")
	ctx := context.Background()
	for _, level := range []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"} {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			t.Fatalf("level %s: %v", level, err)
		}
	}
	for _, level := range []mcp.LoggingLevel{"verbose", "", "DEBUG"} {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err == nil || !strings.Contains(err.Error(), "level must be one of debug, info") {
			t.Errorf("level %q: %v, want invalid params naming the levels", level, err)
		}
	}
	if out := ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"}); out["count"] != float64(5) {
		t.Fatalf("after setLevel: count %v", out["count"])
	}
}
