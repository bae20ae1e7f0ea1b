package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

// exportOut runs export_data, which must succeed, and returns its output
// text and the whole result.
func exportOut(t *testing.T, cs *mcp.ClientSession, args map[string]any) (string, map[string]any) {
	t.Helper()
	out := ok(t, cs, "export_data", args)
	s, isString := out["output"].(string)
	if !isString {
		t.Fatalf("export_data(%v): output is %T", args, out["output"])
	}
	return s, out
}

// sameText fails with a line diff when got differs from want.
func sameText(t *testing.T, what, want, got string) {
	t.Helper()
	if d := cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")); d != "" {
		t.Fatalf("%s (-want +got):\n%s\ngot:\n%s", what, d, got)
	}
}

func mustCreate(t *testing.T, st store.Store, class string, objs ...parse.Object) {
	t.Helper()
	if err := st.Create(context.Background(), class, objs); err != nil {
		t.Fatalf("create %s: %v", class, err)
	}
}

func TestExportListed(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}), "")
	res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Meta: mcp.Meta{"category": "export"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "export_data" {
		t.Fatalf("export category: %v", res.Tools)
	}
	tool := res.Tools[0]
	if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
		t.Fatal("export_data must be marked read-only")
	}
	schema, _ := tool.InputSchema.(map[string]any)
	props, _ := schema["properties"].(map[string]any)
	for _, arg := range []string{"class_name", "where", "order", "columns", "keys", "include", "format", "limit", "skip"} {
		if _, has := props[arg]; !has {
			t.Errorf("input schema lacks %q: %v", arg, props)
		}
	}
	// The column forms: an example in the schema, the rest in the
	// resource the description points to.
	if ex, _ := json.Marshal(props["columns"].(map[string]any)["examples"]); !strings.Contains(string(ex), `"as":"Project"`) {
		t.Errorf("columns has no example: %s", ex)
	}
	if !strings.Contains(tool.Description, tools.QueryLanguageURI) {
		t.Errorf("description does not point to the docs: %s", tool.Description)
	}
	doc, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: tools.QueryLanguageURI})
	if err != nil || !strings.Contains(doc.Contents[0].Text, `{"field": "project.name",`) || doc.Contents[0].MIMEType != "text/markdown" {
		t.Errorf("the docs resource does not document the column forms: %v %v", err, doc)
	}
}

func TestExportFormats(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	cols := []any{"objectId", "title", map[string]any{"field": "project.name", "as": "Project"}, "priority", "due"}
	base := func(format string) map[string]any {
		args := map[string]any{"class_name": "Ticket", "columns": cols, "order": "-priority,title"}
		if format != "" {
			args["format"] = format
		}
		return args
	}

	out, res := exportOut(t, cs, base(""))
	sameText(t, "csv", `objectId,title,Project,priority,due
t000000005,Hidden task,,5,
t000000002,Paint hull,Apollo,3,
t000000003,Ice survey,Borealis,2,
t000000001,Fuel leak,Apollo,1,2025-06-01T00:00:00.000Z
t000000004,Orbit calc,Comet,1,
`, out)
	want := map[string]any{
		"class_name": "Ticket", "format": "csv", "row_count": 5.0, "output": out,
		"headers":    []any{"objectId", "title", "Project", "priority", "due"},
		"pagination": map[string]any{"limit": 1000.0, "skip": 0.0, "has_more": false},
	}
	if d := cmp.Diff(want, res); d != "" {
		t.Fatalf("envelope (-want +got):\n%s", d)
	}

	out, res = exportOut(t, cs, base("markdown"))
	sameText(t, "markdown", `| objectId | title | Project | priority | due |
| --- | --- | --- | --- | --- |
| t000000005 | Hidden task |  | 5 |  |
| t000000002 | Paint hull | Apollo | 3 |  |
| t000000003 | Ice survey | Borealis | 2 |  |
| t000000001 | Fuel leak | Apollo | 1 | 2025-06-01T00:00:00.000Z |
| t000000004 | Orbit calc | Comet | 1 |  |
`, out)
	if res["format"] != "markdown" {
		t.Fatalf("format %v", res["format"])
	}

	out, res = exportOut(t, cs, base("text"))
	sameText(t, "text", `+------------+-------------+----------+----------+--------------------------+
| objectId   | title       | Project  | priority | due                      |
+------------+-------------+----------+----------+--------------------------+
| t000000005 | Hidden task |          |        5 |                          |
| t000000002 | Paint hull  | Apollo   |        3 |                          |
| t000000003 | Ice survey  | Borealis |        2 |                          |
| t000000001 | Fuel leak   | Apollo   |        1 | 2025-06-01T00:00:00.000Z |
| t000000004 | Orbit calc  | Comet    |        1 |                          |
+------------+-------------+----------+----------+--------------------------+
`, out)
	if res["format"] != "table" {
		t.Fatalf("format %v", res["format"])
	}

	// The names models often use for the formats, in any case.
	for alias, canonical := range map[string]string{"MD": "markdown", "text": "table", "Table": "table", "CSV": "csv", " Markdown ": "markdown"} {
		if _, res := exportOut(t, cs, base(alias)); res["format"] != canonical {
			t.Errorf("format %q → %v, want %s", alias, res["format"], canonical)
		}
	}
}

// Without columns, every field but ACL and Relations is a column, in schema
// order; objects and arrays are compact JSON, quoted per RFC 4180.
func TestExportDefaultColumns(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	out, res := exportOut(t, cs, map[string]any{"class_name": "Ticket"})
	sameText(t, "Ticket", `objectId,createdAt,updatedAt,due,priority,project,status,title
t000000001,2025-05-01T00:00:00.000Z,2025-05-01T00:00:00.000Z,2025-06-01T00:00:00.000Z,1,pApollo001,open,Fuel leak
t000000002,2025-05-02T00:00:00.000Z,2025-05-02T00:00:00.000Z,,3,pApollo001,closed,Paint hull
t000000003,2025-05-03T00:00:00.000Z,2025-05-03T00:00:00.000Z,,2,pBorealis2,open,Ice survey
t000000004,2025-05-04T00:00:00.000Z,2025-05-04T00:00:00.000Z,,1,pComet0003,in_progress,Orbit calc
t000000005,2025-05-05T00:00:00.000Z,2025-05-05T00:00:00.000Z,,5,,open,Hidden task
`, out)
	if _, has := res["truncated"]; has {
		t.Fatalf("5 rows under the default limit are not truncated: %v", res)
	}

	out, _ = exportOut(t, cs, map[string]any{"class_name": "Project", "format": "csv"})
	sameText(t, "Project", `objectId,createdAt,updatedAt,active,budget,meta,name,owner,tags
pApollo001,2025-02-01T00:00:00.000Z,2025-02-01T00:00:00.000Z,true,1000,"{""plan"":""pro"",""seats"":10}",Apollo,uAlice0001,"[""space"",""nasa""]"
pBorealis2,2025-03-01T00:00:00.000Z,2025-03-01T00:00:00.000Z,false,250,"{""plan"":""free""}",Borealis,uBob000002,"[""arctic""]"
pComet0003,2025-04-01T00:00:00.000Z,2025-04-01T00:00:00.000Z,true,5000,,Comet,,"[""space""]"
`, out)
}

func TestExportColumnsAndAliases(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	where := map[string]any{"objectId": map[string]any{"$in": []any{"pApollo001", "pBorealis2"}}}
	for _, tc := range []struct {
		name    string
		columns any
		keys    any
		raw     string // the arguments as JSON, when key order matters
		want    string
	}{
		{"all three entry forms", []any{"name", map[string]any{"field": "budget", "as": "Budget ($)"}, map[string]any{"meta.plan": "Plan"}}, nil,
			"", "name,Budget ($),Plan\nApollo,1000,pro\nBorealis,250,free\n"},
		{"empty as keeps the path", []any{map[string]any{"field": "meta.seats", "as": ""}, map[string]any{"name": ""}}, nil,
			"", "meta.seats,name\n10,Apollo\n,Borealis\n"},
		{"one object, in the order written", nil, nil,
			`{"class_name":"Project","where":{"objectId":{"$in":["pApollo001","pBorealis2"]}},"columns":{"meta.plan":"Plan","name":"Name","active":""}}`,
			"Plan,Name,active\npro,Apollo,true\nfree,Borealis,false\n"},
		{"comma-separated string", "name, active", nil, "", "name,active\nApollo,true\nBorealis,false\n"},
		{"keys", nil, []any{"name", "tags"}, "", "name,tags\nApollo,\"[\"\"space\"\",\"\"nasa\"\"]\"\nBorealis,\"[\"\"arctic\"\"]\"\n"},
		{"keys as a string", nil, "objectId,owner", "", "objectId,owner\npApollo001,uAlice0001\npBorealis2,uBob000002\n"},
		{"pointer id and ACL as JSON", []any{"owner", "owner.objectId", "ACL"}, nil,
			"", "owner,owner.objectId,ACL\nuAlice0001,uAlice0001,\nuBob000002,uBob000002,\"{\"\"uBob000002\"\":{\"\"read\"\":true,\"\"write\"\":true}}\"\n"},
		{"repeated column", []any{"name", "name"}, nil, "", "name,name\nApollo,Apollo\nBorealis,Borealis\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := map[string]any{"class_name": "Project", "where": where}
			if tc.columns != nil {
				args["columns"] = tc.columns
			}
			if tc.keys != nil {
				args["keys"] = tc.keys
			}
			var out string
			if tc.raw != "" {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "export_data", Arguments: json.RawMessage(tc.raw)})
				if err != nil || res.IsError {
					t.Fatalf("%v %v", err, res)
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &m); err != nil {
					t.Fatal(err)
				}
				out = m["output"].(string)
			} else {
				out, _ = exportOut(t, cs, args)
			}
			sameText(t, tc.name, tc.want, out)
		})
	}
}

func TestExportInclude(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	// include without columns: the pointer's column is followed by one per
	// field of the target class.
	out, res := exportOut(t, cs, map[string]any{"class_name": "Ticket", "include": []string{"project"}, "where": map[string]any{"status": "open"}})
	wantHeaders := []any{"objectId", "createdAt", "updatedAt", "due", "priority", "project",
		"project.active", "project.budget", "project.meta", "project.name", "project.owner", "project.tags", "status", "title"}
	if d := cmp.Diff(wantHeaders, res["headers"]); d != "" {
		t.Fatalf("headers (-want +got):\n%s", d)
	}
	sameText(t, "include", `objectId,createdAt,updatedAt,due,priority,project,project.active,project.budget,project.meta,project.name,project.owner,project.tags,status,title
t000000001,2025-05-01T00:00:00.000Z,2025-05-01T00:00:00.000Z,2025-06-01T00:00:00.000Z,1,pApollo001,true,1000,"{""plan"":""pro"",""seats"":10}",Apollo,uAlice0001,"[""space"",""nasa""]",open,Fuel leak
t000000003,2025-05-03T00:00:00.000Z,2025-05-03T00:00:00.000Z,,2,pBorealis2,false,250,"{""plan"":""free""}",Borealis,uBob000002,"[""arctic""]",open,Ice survey
t000000005,2025-05-05T00:00:00.000Z,2025-05-05T00:00:00.000Z,,5,,,,,,,,open,Hidden task
`, out)

	// A dotted column through a pointer includes it without being asked;
	// an Object path inside the included object works too.
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": []any{"title", "project.name", "project.meta.plan", "project.owner"}, "where": map[string]any{"priority": 1}, "format": "markdown"})
	sameText(t, "auto include", `| title | project.name | project.meta.plan | project.owner |
| --- | --- | --- | --- |
| Fuel leak | Apollo | pro | uAlice0001 |
| Orbit calc | Comet |  |  |
`, out)

	// Two pointers deep, by column or by include.
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": []any{"title", map[string]any{"project.owner.username": "Owner"}}, "order": "createdAt"})
	sameText(t, "two levels", "title,Owner\nFuel leak,alice\nPaint hull,alice\nIce survey,bob\nOrbit calc,\nHidden task,\n", out)
	_, res = exportOut(t, cs, map[string]any{"class_name": "Ticket", "include": "project.owner", "limit": 1})
	wantHeaders = []any{"objectId", "createdAt", "updatedAt", "due", "priority", "project",
		"project.active", "project.budget", "project.meta", "project.name", "project.owner", "project.owner.email", "project.owner.emailVerified", "project.owner.username",
		"project.tags", "status", "title"}
	if d := cmp.Diff(wantHeaders, res["headers"]); d != "" {
		t.Fatalf("nested include headers (-want +got):\n%s", d)
	}

	// Through _User: protected fields stay out.
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Project", "columns": []any{"name", map[string]any{"owner.username": "Owner"}}, "include": "owner", "format": "text"})
	sameText(t, "owner", `+----------+-------+
| name     | Owner |
+----------+-------+
| Apollo   | alice |
| Borealis | bob   |
| Comet    |       |
+----------+-------+
`, out)
}

func TestExportWhereOrderLimits(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	cols := []any{"objectId", "priority"}
	out, _ := exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": cols, "where": `{"status":{"$in":["open","closed"]}}`, "order": "-priority"})
	sameText(t, "where+order", "objectId,priority\nt000000005,5\nt000000002,3\nt000000003,2\nt000000001,1\n", out)

	// A page that stops short of the end says where the next one starts.
	out, res := exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": cols, "limit": 2})
	sameText(t, "page 1", "objectId,priority\nt000000001,1\nt000000002,3\n", out)
	if res["truncated"] != true || res["next_skip"] != 2.0 || res["row_count"] != 2.0 {
		t.Fatalf("page 1: %v", res)
	}
	out, res = exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": cols, "limit": 2, "skip": 2})
	sameText(t, "page 2", "objectId,priority\nt000000003,2\nt000000004,1\n", out)
	if res["next_skip"] != 4.0 {
		t.Fatalf("page 2: %v", res)
	}
	out, res = exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": cols, "limit": 2, "skip": 4})
	sameText(t, "last page", "objectId,priority\nt000000005,5\n", out)
	if _, has := res["truncated"]; has || res["row_count"] != 1.0 {
		t.Fatalf("last page: %v", res)
	}
	if _, has := res["next_skip"]; has {
		t.Fatalf("last page has next_skip: %v", res)
	}
	// The limit bounds: 1 and 10000 are accepted.
	for _, limit := range []int{1, 10000} {
		if _, res := exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": cols, "limit": limit}); res["row_count"] != float64(min(limit, 5)) {
			t.Fatalf("limit %d: %v", limit, res)
		}
	}

	// No rows: the header alone, in every format.
	none := map[string]any{"class_name": "Ticket", "columns": []any{"title", "priority"}, "where": map[string]any{"status": "nope"}}
	for format, want := range map[string]string{
		"csv":      "title,priority\n",
		"markdown": "| title | priority |\n| --- | --- |\n",
		"text":     "+-------+----------+\n| title | priority |\n+-------+----------+\n",
	} {
		none["format"] = format
		out, res := exportOut(t, cs, none)
		sameText(t, "empty "+format, want, out)
		if res["row_count"] != 0.0 {
			t.Fatalf("empty %s: %v", format, res)
		}
	}
}

// Cell text is escaped for each format: RFC 4180 quoting in CSV, \| and
// <br> in Markdown, one line per row in text tables. Every value type
// renders as text.
func TestExportEscapingAndValues(t *testing.T) {
	st := fixtureStore(t)
	mustCreate(t, st, "Ticket",
		parse.Object{"objectId": "tEsc000001", "title": `Say "hi", then leave`, "status": "a|b", "priority": 2.5, "createdAt": "2025-07-01T00:00:00.000Z"},
		parse.Object{"objectId": "tEsc000002", "title": "line one\nline two", "status": `back\slash|pipe`, "priority": -0.5, "createdAt": "2025-07-02T00:00:00.000Z"},
		parse.Object{"objectId": "tEsc000003", "title": "tab\there", "status": "ünï", "priority": 1234567.0, "createdAt": "2025-07-03T00:00:00.000Z"},
	)
	cs := connect(t, newServer(t, st, agent.Readonly, master), "")
	args := func(format string) map[string]any {
		return map[string]any{"class_name": "Ticket", "columns": []any{"title", "status", "priority"}, "format": format,
			"where": map[string]any{"createdAt": map[string]any{"$gte": date("2025-07-01T00:00:00.000Z")}}, "order": "createdAt"}
	}
	out, _ := exportOut(t, cs, args("csv"))
	sameText(t, "csv", "title,status,priority\n\"Say \"\"hi\"\", then leave\",a|b,2.5\n\"line one\nline two\",back\\slash|pipe,-0.5\ntab\there,ünï,1234567\n", out)
	out, _ = exportOut(t, cs, args("markdown"))
	sameText(t, "markdown", `| title | status | priority |
| --- | --- | --- |
| Say "hi", then leave | a\|b | 2.5 |
| line one<br>line two | back\\slash\|pipe | -0.5 |
| tab	here | ünï | 1234567 |
`, out)
	out, _ = exportOut(t, cs, args("text"))
	sameText(t, "text", `+----------------------+-----------------+----------+
| title                | status          | priority |
+----------------------+-----------------+----------+
| Say "hi", then leave | a|b             |      2.5 |
| line one\nline two   | back\slash|pipe |     -0.5 |
| tab here             | ünï             |  1234567 |
+----------------------+-----------------+----------+
`, out)

	// Headers are escaped like cells.
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": []any{map[string]any{"title": `T|"x", y`}}, "where": map[string]any{"objectId": "t000000001"}, "format": "csv"})
	sameText(t, "csv header", "\"T|\"\"x\"\", y\"\nFuel leak\n", out)
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": []any{map[string]any{"title": `T|"x", y`}}, "where": map[string]any{"objectId": "t000000001"}, "format": "markdown"})
	sameText(t, "markdown header", "| T\\|\"x\", y |\n| --- |\n| Fuel leak |\n", out)
	// A lone empty CSV field is quoted so the row is not a blank line.
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Ticket", "columns": []any{"due"}, "where": map[string]any{"objectId": map[string]any{"$in": []any{"t000000001", "t000000004"}}}})
	sameText(t, "lone empty field", "due\n2025-06-01T00:00:00.000Z\n\"\"\n", out)

	s := parse.NewSchema("Asset")
	for k, f := range map[string]parse.Field{
		"ok": {Type: parse.TypeBoolean}, "n": {Type: parse.TypeNumber}, "at": {Type: parse.TypeDate},
		"where": {Type: parse.TypeGeoPoint}, "file": {Type: parse.TypeFile}, "raw": {Type: parse.TypeBytes},
		"area": {Type: parse.TypePolygon}, "info": {Type: parse.TypeObject}, "refs": {Type: parse.TypeArray},
	} {
		s.Fields[k] = f
	}
	if err := st.CreateClass(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, st, "Asset", parse.Object{
		"objectId": "a000000001", "ok": false, "n": 0.000001, "at": date("2025-02-03T04:05:06.789Z"),
		"where": parse.GeoPoint(40.5, -74.25), "file": parse.File("f.png", ""), "raw": map[string]any{"__type": "Bytes", "base64": "aGk="},
		"area": map[string]any{"__type": "Polygon", "coordinates": []any{[]any{0.0, 0.0}, []any{0.0, 1.0}, []any{1.0, 1.0}}},
		"info": map[string]any{"when": parse.Date(time.Date(2025, 3, 4, 0, 0, 0, 0, time.UTC)), "html": "<b>&</b>", "big": 1e21},
		"refs": []any{parse.Pointer("Project", "pApollo001"), 1.5, "x"},
	})
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Asset", "format": "markdown",
		"columns": []any{"ok", "n", "at", "where", "file", "raw", "area", "info.when", "info.html", "info.big", "info.nope", "refs"}})
	sameText(t, "values", `| ok | n | at | where | file | raw | area | info.when | info.html | info.big | info.nope | refs |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
| false | 0.000001 | 2025-02-03T04:05:06.789Z | 40.5,-74.25 | f.png | aGk= | [[0,0],[0,1],[1,1],[0,0]] | 2025-03-04T00:00:00.000Z | <b>&</b> | 1e+21 |  | [{"__type":"Pointer","className":"Project","objectId":"pApollo001"},1.5,"x"] |
`, out)
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Asset", "columns": []any{"info"}})
	sameText(t, "object", "info\n\"{\"\"big\"\":1e+21,\"\"html\"\":\"\"<b>&</b>\"\",\"\"when\"\":{\"\"__type\"\":\"\"Date\"\",\"\"iso\"\":\"\"2025-03-04T00:00:00.000Z\"\"}}\"\n", out)
}

// An agent acting as a user exports exactly the rows and fields it may read.
func TestExportGoverned(t *testing.T) {
	st := fixtureStore(t)
	bobCS := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), "")
	// The no-ACL ticket is absent; Comet (readable by role:Admin only) is
	// an include bob cannot read: removed as Parse Server does, both
	// columns empty.
	out, _ := exportOut(t, bobCS, map[string]any{"class_name": "Ticket", "columns": []any{"objectId", "title", "project", "project.name"}})
	sameText(t, "bob's tickets", `objectId,title,project,project.name
t000000001,Fuel leak,pApollo001,Apollo
t000000002,Paint hull,pApollo001,Apollo
t000000003,Ice survey,pBorealis2,Borealis
t000000004,Orbit calc,,
`, out)
	out, _ = exportOut(t, bobCS, map[string]any{"class_name": "Project", "columns": []any{"name", "owner.username"}, "format": "text"})
	sameText(t, "bob's projects", `+----------+----------------+
| name     | owner.username |
+----------+----------------+
| Apollo   | alice          |
| Borealis | bob            |
+----------+----------------+
`, out)
	// Protected fields are neither default columns nor nameable.
	out, res := exportOut(t, bobCS, map[string]any{"class_name": "_User"})
	sameText(t, "bob's users", `objectId,createdAt,updatedAt,emailVerified,username
uAlice0001,2025-01-01T00:00:00.000Z,2025-01-01T00:00:00.000Z,,alice
uBob000002,2025-01-02T00:00:00.000Z,2025-01-02T00:00:00.000Z,,bob
`, out)
	if strings.Contains(out, "example.com") || res["row_count"] != 2.0 {
		t.Fatalf("protected email exported: %v", res)
	}
	msg := fails(t, bobCS, "export_data", map[string]any{"class_name": "_User", "columns": []any{"username", "email"}}, "access_denied")
	if msg["error"] != `columns[1]: "email" is not a field of _User this agent can use; its fields: emailVerified, username, objectId, createdAt, updatedAt` {
		t.Fatalf("message %q", msg["error"])
	}
	fails(t, bobCS, "export_data", map[string]any{"class_name": "Project", "columns": []any{"owner.email"}}, "access_denied")
	fails(t, bobCS, "export_data", map[string]any{"class_name": "Ticket", "columns": []any{"project.owner.email"}}, "access_denied")
	out, _ = exportOut(t, bobCS, map[string]any{"class_name": "Ticket", "include": "project.owner", "where": map[string]any{"objectId": "t000000003"}})
	sameText(t, "bob's nested include", `objectId,createdAt,updatedAt,due,priority,project,project.active,project.budget,project.meta,project.name,project.owner,project.owner.emailVerified,project.owner.username,project.tags,status,title
t000000003,2025-05-03T00:00:00.000Z,2025-05-03T00:00:00.000Z,,2,pBorealis2,false,250,"{""plan"":""free""}",Borealis,uBob000002,,bob,"[""arctic""]",open,Ice survey
`, out)
	fails(t, bobCS, "export_data", map[string]any{"class_name": "Project", "where": map[string]any{"owner": map[string]any{"$inQuery": map[string]any{"className": "_User", "where": map[string]any{"email": "alice@example.com"}}}}}, "access_denied")
	// Class-level permissions and hidden classes.
	fails(t, bobCS, "export_data", map[string]any{"class_name": "Payroll"}, "permission_denied")
	fails(t, bobCS, "export_data", map[string]any{"class_name": "_Session"}, "access_denied")

	// The Admin role sees Comet, not Borealis.
	admin := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Admin"}}), "")
	out, _ = exportOut(t, admin, map[string]any{"class_name": "Ticket", "columns": []any{"title", "project.name"}, "where": map[string]any{"priority": map[string]any{"$lte": 2}}})
	sameText(t, "admin", "title,project.name\nFuel leak,Apollo\nIce survey,\nOrbit calc,Comet\n", out)
}

// The output is bounded: an export that would grow past 4 MiB stops at the
// last whole row that fits and says where to resume; a row that alone is
// too large is refused.
func TestExportByteCap(t *testing.T) {
	st := fixtureStore(t)
	big := strings.Repeat("x", 600<<10)
	var objs []parse.Object
	for i := range 8 {
		objs = append(objs, parse.Object{"objectId": fmt.Sprintf("tBig00000%d", i), "title": big, "priority": 9.0})
	}
	objs = append(objs, parse.Object{"objectId": "tHuge00001", "title": strings.Repeat("y", 5<<20), "priority": 10.0})
	mustCreate(t, st, "Ticket", objs...)
	cs := connect(t, budgetServer(t, st, 8<<20, nil), "")
	// A CSV or Markdown row is one line of ~600 KiB: 6 fit. Every line of a
	// text table is as wide as its widest cell, and the table has 4 lines
	// besides its rows: 2 fit.
	for format, fit := range map[string]int{"csv": 6, "markdown": 6, "text": 2} {
		args := map[string]any{"class_name": "Ticket", "columns": []any{"objectId", "title"}, "where": map[string]any{"priority": 9}, "format": format}
		out, res := exportOut(t, cs, args)
		if res["row_count"] != float64(fit) || res["truncated"] != true || res["next_skip"] != float64(fit) || len(out) > 4<<20 {
			t.Fatalf("%s: row_count %v truncated %v next_skip %v, %d bytes", format, res["row_count"], res["truncated"], res["next_skip"], len(out))
		}
		last := fmt.Sprintf("tBig00000%d", fit-1)
		if !strings.Contains(out, last) || strings.Contains(out, fmt.Sprintf("tBig00000%d", fit)) {
			t.Fatalf("%s: the first %d rows should be kept", format, fit)
		}
		args["skip"] = 6
		if _, res := exportOut(t, cs, args); res["row_count"] != 2.0 || res["truncated"] != nil {
			t.Fatalf("%s: resume: %v %v", format, res["row_count"], res["truncated"])
		}
	}
	msg := fails(t, cs, "export_data", map[string]any{"class_name": "Ticket", "where": map[string]any{"priority": 10}}, "too_large")
	if msg["error"] != "a single row renders to more than 4194304 bytes of csv; export fewer or narrower columns" {
		t.Fatalf("message: %v", msg["error"])
	}
	msg = fails(t, cs, "export_data", map[string]any{"class_name": "Ticket", "where": map[string]any{"priority": 9}, "format": "text", "columns": "title,title,title"}, "too_large")
	if !strings.Contains(msg["error"].(string), "or use csv") {
		t.Fatalf("message: %v", msg["error"])
	}
}

func TestExportBadInput(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	for _, tc := range []struct {
		args map[string]any
		code string
		msg  string // the exact message, or a substring when it starts with "~"
	}{
		{map[string]any{}, "invalid_argument", `argument "class_name" is required`},
		{map[string]any{"class_name": "Nope"}, "access_denied", `class "Nope" was not found (or is not accessible to this agent)`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"title", "nope"}}, "access_denied", `columns[1]: "nope" is not a field of Ticket this agent can use; its fields: due, priority, project, status, title, objectId, createdAt, updatedAt`},
		{map[string]any{"class_name": "Ticket", "keys": []any{"nope"}}, "access_denied", `keys[0]: "nope" is not a field of Ticket this agent can use; its fields: due, priority, project, status, title, objectId, createdAt, updatedAt`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"project.nope"}}, "access_denied", `~columns[0]: "nope" is not a field of Project this agent can use`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"project.owner.nope"}}, "access_denied", `~columns[0]: "nope" is not a field of _User this agent can use`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"project.owner.username.x"}}, "invalid_argument", `columns[0] "project.owner.username.x": "username" is a String field: dotted paths reach into Pointer and Object fields`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"project.members"}}, "invalid_argument", `~Relation field "members" of Project has no value in the row`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"title.x"}}, "invalid_argument", `columns[0] "title.x": "title" is a String field: dotted paths reach into Pointer and Object fields`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"project..name"}}, "invalid_argument", `columns[0] "project..name": empty segment in the field path`},
		{map[string]any{"class_name": "Project", "columns": []any{"members"}}, "invalid_argument", `columns[0] "members": Relation field "members" of Project has no value in the row; export _User with a $relatedTo where instead`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"title", 3}}, "invalid_argument", `columns[1]: must be a field path or {"field": "<path>", "as": "<header>"}, got a number`},
		{map[string]any{"class_name": "Ticket", "columns": []any{map[string]any{"field": "title", "header": "T"}}}, "invalid_argument", `columns[0]: unknown key "header" (use "field" and "as")`},
		{map[string]any{"class_name": "Ticket", "columns": []any{map[string]any{"field": 1}}}, "invalid_argument", `columns[0]: "field" must be a string path`},
		{map[string]any{"class_name": "Ticket", "columns": []any{map[string]any{"field": "title", "as": 2}}}, "invalid_argument", `columns[0]: "as" must be a string header`},
		{map[string]any{"class_name": "Ticket", "columns": []any{map[string]any{"title": "T", "status": "S"}}}, "invalid_argument", `~got 2 keys`},
		{map[string]any{"class_name": "Ticket", "columns": []any{map[string]any{"title": true}}}, "invalid_argument", `columns[0]: the header of "title" must be a string`},
		{map[string]any{"class_name": "Ticket", "columns": []any{""}}, "invalid_argument", `columns[0]: empty field path`},
		{map[string]any{"class_name": "Ticket", "columns": []any{}}, "invalid_argument", `argument "columns" must name at least one column (omit it for every field)`},
		{map[string]any{"class_name": "Ticket", "columns": 5}, "invalid_argument", `~must be an array of columns`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"title"}, "keys": []any{"title"}}, "invalid_argument", `give either "columns" or "keys", not both`},
		{map[string]any{"class_name": "Ticket", "format": "xml"}, "invalid_argument", `argument "format" must be one of csv, markdown or table; got "xml"`},
		{map[string]any{"class_name": "Ticket", "format": 1}, "invalid_argument", `~"format"`},
		{map[string]any{"class_name": "Ticket", "limit": 0}, "invalid_argument", `argument "limit" must be between 1 and 10000, got 0`},
		{map[string]any{"class_name": "Ticket", "limit": 10001}, "invalid_argument", `argument "limit" must be between 1 and 10000, got 10001`},
		{map[string]any{"class_name": "Ticket", "limit": -5}, "invalid_argument", `argument "limit" must be between 1 and 10000, got -5`},
		{map[string]any{"class_name": "Ticket", "skip": -1}, "invalid_argument", `~"skip"`},
		{map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, "access_denied", `where.nope: "nope" is not a field of Ticket this agent can use; its fields: due, priority, project, status, title, objectId, createdAt, updatedAt`},
		{map[string]any{"class_name": "Ticket", "where": "{oops"}, "invalid_argument", `~where`},
		{map[string]any{"class_name": "Ticket", "order": "-nope"}, "access_denied", `~order: "nope" is not a field of Ticket`},
		{map[string]any{"class_name": "Ticket", "include": []any{"title"}}, "invalid_argument", `~only Pointer fields`},
		{map[string]any{"class_name": "Ticket", "include": []any{"nope"}}, "access_denied", `~include: "nope" is not a field of Ticket`},
		{map[string]any{"class_name": "Ticket", "include": []any{"project.nope"}}, "access_denied", `~include: "nope" is not a field of Project`},
		{map[string]any{"class_name": "Ticket", "columns": []any{"title"}, "include": []any{"project.owner.a.b"}}, "invalid_query", `~at most 3 pointers deep`},
		{map[string]any{"class_name": "Ticket", "row_cap": 5}, "invalid_argument", `unknown argument "row_cap"`},
	} {
		out := fails(t, cs, "export_data", tc.args, tc.code)
		got, _ := out["error"].(string)
		if sub, partial := strings.CutPrefix(tc.msg, "~"); partial {
			if !strings.Contains(got, sub) {
				t.Errorf("%v: message %q does not mention %q", tc.args, got, sub)
			}
		} else if got != tc.msg {
			t.Errorf("%v: message %q, want %q", tc.args, got, tc.msg)
		}
	}
	many := make([]any, 101)
	for i := range many {
		many[i] = "title"
	}
	fails(t, cs, "export_data", map[string]any{"class_name": "Ticket", "columns": many}, "invalid_argument")
}

// export_data renders an aggregation's rows: its output fields are the
// columns (or the columns asked for), pages continue through next_call,
// and the pipeline is governed as aggregate runs it.
func TestExportPipeline(t *testing.T) {
	for _, b := range sqlBackends {
		t.Run(b.name, func(t *testing.T) { exportPipeline(t, b.store(t)) })
	}
}

func exportPipeline(t *testing.T, st store.Store) {
	cs := connect(t, newServer(t, st, agent.Readonly, master), "")
	pipeline := []any{
		map[string]any{"$group": map[string]any{"_id": "$status", "n": map[string]any{"$sum": 1}}},
		map[string]any{"$sort": map[string]any{"n": -1, "objectId": 1}},
	}
	out, res := exportOut(t, cs, map[string]any{"class_name": "Ticket", "pipeline": pipeline, "limit": 1})
	sameText(t, "first page", "objectId,n\nopen,3\n", out)
	nc := res["next_call"].(map[string]any)["arguments"].(map[string]any)
	out, res = exportOut(t, cs, nc)
	sameText(t, "second page", "objectId,n\nclosed,1\n", out)
	out, _ = exportOut(t, cs, map[string]any{"class_name": "Ticket", "pipeline": pipeline, "columns": []any{map[string]any{"field": "n", "as": "Tickets"}, map[string]any{"objectId": "Status"}}, "format": "markdown"})
	if !strings.HasPrefix(out, "| Tickets | Status |\n| --- | --- |\n| 3 | open |\n") {
		t.Fatalf("markdown columns:\n%s", out)
	}
	fails(t, cs, "export_data", map[string]any{"class_name": "Ticket", "pipeline": pipeline, "where": map[string]any{"status": "open"}}, "invalid_argument")
	fails(t, cs, "export_data", map[string]any{"class_name": "Ticket", "pipeline": pipeline, "columns": []any{"title"}}, "invalid_argument")
	// Governed like aggregate: bob does not see Payroll.
	bobCS := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), "")
	fails(t, bobCS, "export_data", map[string]any{"class_name": "Payroll", "pipeline": `[{"$group":{"_id":null,"s":{"$sum":"$amount"}}}]`}, "permission_denied")
}
