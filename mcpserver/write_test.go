package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
)

var (
	bobID   = agent.Identity{Mode: agent.AuthUser, UserID: bob}
	aliceID = agent.Identity{Mode: agent.AuthUser, UserID: alice}
	adminID = agent.Identity{Mode: agent.AuthRole, Roles: []string{"Admin"}}
)

const crudHint = " Prefer declaring a method on the class in the policy file: an intent-based write needs only PARSEMCP_ALLOW_WRITE_TOOLS."

func gateMsg(tool, hint string, vars ...string) string {
	return "tool " + tool + " is disabled by the operator. Required: " + strings.Join(vars, " AND ") + "." + hint
}

// Every write tool works with its gates open and the right tier, and the
// result reads back.
func TestWriteToolsRoundTrip(t *testing.T) {
	st := fixtureStore(t)
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	bobCS := govClient(t, st, allGates, agent.Write, bobID, agent.Policy{})

	out := ok(t, bobCS, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{
		"title": "New pump", "status": "open", "priority": 2,
		"project": map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pBorealis2"},
		"due":     date("2025-07-01T00:00:00.000Z"),
	}})
	id, _ := out["object_id"].(string)
	created := out["created"].(map[string]any)
	if len(id) != 10 || created["objectId"] != id || created["title"] != "New pump" || created["createdAt"] == nil {
		t.Fatalf("create_object: %v", out)
	}
	got := readObject(t, m, "Ticket", id)
	if got["title"] != "New pump" || got["priority"] != 2.0 || got["status"] != "open" ||
		!cmp.Equal(got["due"], date("2025-07-01T00:00:00.000Z")) ||
		got["project"].(map[string]any)["objectId"] != "pBorealis2" {
		t.Fatalf("read back: %v", got)
	}
	// A string holding the object is accepted too.
	out = ok(t, bobCS, "create_object", map[string]any{"class_name": "Ticket", "object": `{"title":"As string"}`})
	if readObject(t, m, "Ticket", out["object_id"].(string))["title"] != "As string" {
		t.Fatal("object as a JSON string")
	}

	out = ok(t, bobCS, "update_object", map[string]any{"class_name": "Ticket", "object_id": id, "object": map[string]any{"status": "closed", "due": nil}})
	if out["updated"].(map[string]any)["status"] != "closed" {
		t.Fatalf("update_object: %v", out)
	}
	got = readObject(t, m, "Ticket", id)
	if got["status"] != "closed" || got["due"] != nil || got["title"] != "New pump" {
		t.Fatalf("after update: %v", got)
	}

	out = ok(t, bobCS, "delete_object", map[string]any{"class_name": "Ticket", "object_id": id})
	if out["deleted"].(map[string]any)["objectId"] != id {
		t.Fatalf("delete_object: %v", out)
	}
	if readObject(t, m, "Ticket", id) != nil {
		t.Fatal("deleted object still there")
	}
	refused(t, bobCS, "delete_object", map[string]any{"class_name": "Ticket", "object_id": id}, "not_found", "object_not_found", "Object not found: Ticket#"+id)

	// The class tools, with the master key.
	root := govClient(t, st, allGates, agent.Admin, master, agent.Policy{})
	out = ok(t, root, "create_class", map[string]any{"class_name": "Widget", "fields": map[string]any{
		"name":  map[string]any{"type": "String", "required": true},
		"size":  map[string]any{"type": "Number"},
		"owner": map[string]any{"type": "Pointer", "targetClass": "_User"},
	}, "class_level_permissions": map[string]any{"find": map[string]any{"*": true}, "delete": map[string]any{}}})
	fields := out["schema"].(map[string]any)["fields"].(map[string]any)
	if fields["name"] != "String (required)" || fields["owner"] != "Pointer<_User>" || fields["objectId"] != "String" {
		t.Fatalf("create_class: %v", out)
	}
	sch := ok(t, m, "get_schema", map[string]any{"class_name": "Widget"})
	if sch["class_name"] != "Widget" {
		t.Fatalf("get_schema Widget: %v", sch)
	}
	// the CLP applies: nobody but the master key may delete a Widget.
	w := ok(t, bobCS, "create_object", map[string]any{"class_name": "Widget", "object": map[string]any{"name": "w1"}})
	wid := w["object_id"].(string)
	refused(t, bobCS, "delete_object", map[string]any{"class_name": "Widget", "object_id": wid}, "permission_denied", "clp", "class-level permissions of Widget do not allow delete for this agent")

	refused(t, root, "delete_class", map[string]any{"class_name": "Widget"}, "invalid_argument", "", "class is not empty: Widget holds 1 object; delete them first")
	refused(t, root, "delete_class", map[string]any{"class_name": "Widget", "dry_run": true}, "invalid_argument", "", "class is not empty: Widget holds 1 object; delete them first")
	ok(t, root, "delete_object", map[string]any{"class_name": "Widget", "object_id": wid})
	if out := ok(t, root, "delete_class", map[string]any{"class_name": "Widget"}); out["deleted"] != true {
		t.Fatalf("delete_class: %v", out)
	}
	fails(t, m, "get_schema", map[string]any{"class_name": "Widget"}, "access_denied")
	refused(t, root, "delete_class", map[string]any{"class_name": "Widget"}, "access_denied", "class_not_found", `class "Widget" was not found (or is not accessible to this agent)`)
}

// Each raw tool needs both of its gates; the refusal names exactly the
// variables still unset, and a tool whose gate is closed is not listed.
func TestWriteGates(t *testing.T) {
	st := fixtureStore(t)
	const (
		wt = "PARSEMCP_ALLOW_WRITE_TOOLS=true"
		rc = "PARSEMCP_ALLOW_RAW_CRUD=true"
		so = "PARSEMCP_ALLOW_SCHEMA_OPS=true"
		rs = "PARSEMCP_ALLOW_RAW_SCHEMA=true"
	)
	crud := map[string]map[string]any{
		"create_object": {"class_name": "Ticket", "object": map[string]any{"title": "x"}},
		"update_object": {"class_name": "Ticket", "object_id": "t000000001", "object": map[string]any{"title": "x"}},
		"delete_object": {"class_name": "Ticket", "object_id": "t000000001"},
	}
	schema := map[string]map[string]any{
		"create_class": {"class_name": "Gadget"},
		"delete_class": {"class_name": "Ticket"},
	}
	for _, tc := range []struct {
		name      string
		gates     agent.Gates
		crudVars  []string // nil: open
		schemaVar []string
	}{
		{"none", agent.Gates{}, []string{wt, rc}, []string{so, rs}},
		{"broad only", agent.Gates{WriteTools: true, SchemaOps: true}, []string{rc}, []string{rs}},
		{"narrow only", agent.Gates{RawCRUD: true, RawSchema: true}, []string{wt}, []string{so}},
		{"write side open", agent.Gates{WriteTools: true, RawCRUD: true}, nil, []string{so, rs}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := govClient(t, st, tc.gates, agent.Admin, master, agent.Policy{})
			names := listed(t, cs)
			for tool, args := range crud {
				if tc.crudVars == nil {
					if !has(names, tool) {
						t.Errorf("%s not listed with its gates open", tool)
					}
					continue
				}
				if has(names, tool) {
					t.Errorf("%s listed with its gate closed", tool)
				}
				dry := map[string]any{"dry_run": true}
				for k, v := range args {
					dry[k] = v
				}
				refused(t, cs, tool, args, "access_denied", "env_gate", gateMsg(tool, crudHint, tc.crudVars...))
				// a preview does not pass a closed gate either
				refused(t, cs, tool, dry, "access_denied", "env_gate", gateMsg(tool, crudHint, tc.crudVars...))
			}
			for tool, args := range schema {
				if has(names, tool) {
					t.Errorf("%s listed with its gate closed", tool)
				}
				refused(t, cs, tool, args, "access_denied", "env_gate", gateMsg(tool, "", tc.schemaVar...))
			}
			out := ok(t, cs, "list_tools", map[string]any{"category": "mutation"})
			for _, tool := range out["tools"].([]any) {
				name := tool.(map[string]any)["name"].(string)
				if !has(names, name) {
					t.Errorf("list_tools shows %s, tools/list does not", name)
				}
			}
		})
	}
	// Nothing was written by the refused calls.
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	if got := readObject(t, m, "Ticket", "t000000001"); got["title"] != "Fuel leak" {
		t.Fatalf("t000000001 changed: %v", got)
	}
	fails(t, m, "get_schema", map[string]any{"class_name": "Gadget"}, "access_denied")
}

// The tier is checked before the gate and the filter; a tool filter
// cannot elevate.
func TestWriteTiers(t *testing.T) {
	st := fixtureStore(t)
	ro := govClient(t, st, allGates, agent.Readonly, master, agent.Policy{Tools: agent.NameFilter{Only: []string{"create_object", "list_tools"}}})
	if got := listed(t, ro); !cmp.Equal(got, []string{"list_tools"}) {
		t.Fatalf("readonly agent with only:[create_object]: tools/list %v", got)
	}
	for _, tool := range []string{"create_object", "update_object", "delete_object"} {
		refused(t, ro, tool, map[string]any{"class_name": "Ticket"}, "permission_denied", "permission_tier", "tool "+tool+" needs write permission; this agent is readonly")
	}
	closed := govClient(t, st, agent.Gates{}, agent.Readonly, master, agent.Policy{})
	refused(t, closed, "create_object", map[string]any{"class_name": "Ticket"}, "permission_denied", "permission_tier", "tool create_object needs write permission; this agent is readonly")

	w := govClient(t, st, allGates, agent.Write, master, agent.Policy{})
	names := listed(t, w)
	for tool, want := range map[string]bool{"create_object": true, "update_object": true, "delete_object": true, "call_method": true, "create_class": false, "delete_class": false, "describe_agent": false, "would_permit": false} {
		if has(names, tool) != want {
			t.Errorf("write agent: %s listed = %v, want %v", tool, !want, want)
		}
	}
	for _, tool := range []string{"create_class", "delete_class"} {
		refused(t, w, tool, map[string]any{"class_name": "Gadget"}, "permission_denied", "permission_tier", "tool "+tool+" needs admin permission; this agent is write")
	}
}

// The agent's tool filter hides a tool from tools/list and list_tools and
// refuses tools/call of it, whatever its tier and gates.
func TestToolFilter(t *testing.T) {
	st := fixtureStore(t)
	const filtered = "tool %s is not available to this agent"
	cs := govClient(t, st, allGates, agent.Admin, master, agent.Policy{Tools: agent.NameFilter{Except: []string{"query_class", "delete_object"}}})
	names := listed(t, cs)
	if has(names, "query_class") || has(names, "delete_object") || !has(names, "count_objects") || !has(names, "create_object") {
		t.Fatalf("tools/list with except: %v", names)
	}
	lt := ok(t, cs, "list_tools", map[string]any{})
	for _, tool := range lt["tools"].([]any) {
		if n := tool.(map[string]any)["name"]; n == "query_class" || n == "delete_object" {
			t.Fatalf("list_tools shows filtered %s", n)
		}
	}
	refused(t, cs, "query_class", map[string]any{"class_name": "Ticket"}, "tool_filtered", "tool_filtered", strings.Replace(filtered, "%s", "query_class", 1))
	refused(t, cs, "delete_object", map[string]any{"class_name": "Ticket", "object_id": "t000000001"}, "tool_filtered", "tool_filtered", strings.Replace(filtered, "%s", "delete_object", 1))
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	if readObject(t, m, "Ticket", "t000000001") == nil {
		t.Fatal("filtered delete_object deleted")
	}

	only := govClient(t, st, agent.Gates{}, agent.Readonly, master, agent.Policy{Tools: agent.NameFilter{Only: []string{"count_objects", "list_tools"}}})
	if got := listed(t, only); !cmp.Equal(got, []string{"count_objects", "list_tools"}) {
		t.Fatalf("only: tools/list %v", got)
	}
	ok(t, only, "count_objects", map[string]any{"class_name": "Ticket"})
	refused(t, only, "get_schema", map[string]any{"class_name": "Ticket"}, "tool_filtered", "tool_filtered", strings.Replace(filtered, "%s", "get_schema", 1))

	// The HTTP catalog applies the same tier, filter and gates.
	ts := httpServer(t, agentServer(t, st, agent.Gates{WriteTools: true, RawCRUD: true}, policyAgent(agent.Write, master, agent.Policy{Tools: agent.NameFilter{Except: []string{"delete_object"}}})))
	resp, err := http.Get(ts.URL + "/tools?category=mutation")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cat struct {
		Tools []struct{ Name string } `json:"tools"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cat); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range cat.Tools {
		got = append(got, tool.Name)
	}
	if !cmp.Equal(got, []string{"call_method", "create_object", "update_object"}) {
		t.Fatalf("/tools?category=mutation: %v", got)
	}
}

// Writes obey the row ACL: a row the agent cannot write is not found,
// exactly like a missing one, and stays unchanged. As in Parse Server 9
// (checked against it: a PUT and a DELETE with a session token whose user
// holds only "write" succeed, a GET answers 101), a row the agent may
// write but not read is changed and deleted, and nothing of it is shown.
func TestWriteACL(t *testing.T) {
	st := fixtureStore(t)
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	bobCS := govClient(t, st, allGates, agent.Write, bobID, agent.Policy{})
	adminCS := govClient(t, st, allGates, agent.Write, adminID, agent.Policy{})
	root := govClient(t, st, allGates, agent.Write, master, agent.Policy{})

	// A write-only row: bob may write it but not read it.
	wo := ok(t, root, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{
		"title": "Write only", "ACL": map[string]any{bob: map[string]any{"write": true}},
	}})["object_id"].(string)

	comet := readObject(t, m, "Project", "pComet0003")
	hidden := readObject(t, m, "Ticket", "t000000005")
	woBefore := readObject(t, m, "Ticket", wo)
	for _, tc := range []struct {
		who   string
		class string
		id    string
	}{
		{"bob", "Project", "pComet0003"},   // neither read nor write
		{"admin", "Project", "pComet0003"}, // read, no write
		{"bob", "Ticket", "t000000005"},    // empty ACL: master only
		{"bob", "Project", "zzzzzzzzzz"},   // missing
	} {
		cs := bobCS
		if tc.who == "admin" {
			cs = adminCS
		}
		msg := "Object not found: " + tc.class + "#" + tc.id
		set := map[string]any{"priority": 9}
		if tc.class == "Project" {
			set = map[string]any{"budget": 9}
		}
		refused(t, cs, "update_object", map[string]any{"class_name": tc.class, "object_id": tc.id, "object": set}, "not_found", "object_not_found", msg)
		refused(t, cs, "update_object", map[string]any{"class_name": tc.class, "object_id": tc.id, "object": set, "dry_run": true}, "not_found", "object_not_found", msg)
		refused(t, cs, "delete_object", map[string]any{"class_name": tc.class, "object_id": tc.id}, "not_found", "object_not_found", msg)
		refused(t, cs, "delete_object", map[string]any{"class_name": tc.class, "object_id": tc.id, "dry_run": true}, "not_found", "object_not_found", msg)
	}
	unchanged(t, m, "Project", "pComet0003", comet)
	unchanged(t, m, "Ticket", "t000000005", hidden)
	unchanged(t, m, "Ticket", wo, woBefore)

	// Write, no read: bob changes and deletes it blind.
	if got := ok(t, bobCS, "get_objects", map[string]any{"class_name": "Ticket", "ids": []string{wo}}); got["found"] != 0.0 {
		t.Fatalf("bob reads a write-only row: %v", got)
	}
	dry := ok(t, bobCS, "update_object", map[string]any{"class_name": "Ticket", "object_id": wo, "object": map[string]any{"title": "Blind"}, "dry_run": true})
	if w := dry["would_update"].(map[string]any); w["before"] != nil {
		t.Fatalf("a dry run on a write-only row shows its values: %v", dry)
	}
	unchanged(t, m, "Ticket", wo, woBefore)
	upd := ok(t, bobCS, "update_object", map[string]any{"class_name": "Ticket", "object_id": wo, "object": map[string]any{"title": "Blind"}})
	if got := upd["updated"].(map[string]any); got["title"] != nil || got["ACL"] != nil || got["objectId"] != wo || got["updatedAt"] == nil {
		t.Fatalf("an update of a write-only row answers %v, want its id and times only", upd)
	}
	if readObject(t, m, "Ticket", wo)["title"] != "Blind" {
		t.Fatal("the write-only row was not updated")
	}
	dryDel := ok(t, bobCS, "delete_object", map[string]any{"class_name": "Ticket", "object_id": wo, "dry_run": true})
	if d := cmp.Diff(map[string]any{"objectId": wo}, dryDel["would_delete"]); d != "" {
		t.Fatalf("a dry-run delete of a write-only row shows more than its id:\n%s", d)
	}
	del := ok(t, bobCS, "delete_object", map[string]any{"class_name": "Ticket", "object_id": wo})
	if got := del["deleted"].(map[string]any); got["title"] != nil || got["objectId"] != wo {
		t.Fatalf("a delete of a write-only row answers %v", del)
	}
	if got := ok(t, m, "get_objects", map[string]any{"class_name": "Ticket", "ids": []string{wo}}); got["found"] != 0.0 {
		t.Fatalf("the deleted write-only row is still there: %v", got)
	}

	// bob's own project is writable.
	out := ok(t, bobCS, "update_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2", "object": map[string]any{"budget": 300}})
	if out["updated"].(map[string]any)["budget"] != 300.0 || readObject(t, m, "Project", "pBorealis2")["budget"] != 300.0 {
		t.Fatalf("bob's update: %v", out)
	}
	// CLP: nobody but the master key writes Payroll.
	refused(t, bobCS, "create_object", map[string]any{"class_name": "Payroll", "object": map[string]any{"amount": 1}}, "permission_denied", "clp", "class-level permissions of Payroll do not allow create for this agent")
	refused(t, bobCS, "create_object", map[string]any{"class_name": "Payroll", "object": map[string]any{"amount": 1}, "dry_run": true}, "permission_denied", "clp", "class-level permissions of Payroll do not allow create for this agent")
	refused(t, bobCS, "update_object", map[string]any{"class_name": "Payroll", "object_id": "pay0000001", "object": map[string]any{"amount": 1}}, "permission_denied", "clp", "class-level permissions of Payroll do not allow update for this agent")
}

// An unknown, a hidden and a filtered-out class read the same on the write
// tools: same message (but the name), same details, no kind.
func TestWriteClassNotFoundIsUniform(t *testing.T) {
	st := fixtureStore(t)
	cs := govClient(t, st, allGates, agent.Write, bobID, agent.Policy{Classes: agent.NameFilter{Except: []string{"Payroll"}}})
	var first map[string]any
	for _, class := range []string{"Nope", "_Session", "Payroll"} {
		for _, dry := range []bool{false, true} {
			out := fails(t, cs, "create_object", map[string]any{"class_name": class, "object": map[string]any{"x": 1}, "dry_run": dry}, "access_denied")
			out["error"] = strings.Replace(out["error"].(string), `"`+class+`"`, `"X"`, 1)
			if first == nil {
				first = out
				if first["error"] != `class "X" was not found (or is not accessible to this agent)` {
					t.Fatalf("message %q", first["error"])
				}
			}
			if d := cmp.Diff(first, out); d != "" {
				t.Errorf("%s (dry %v) differs from an unknown class:\n%s", class, dry, d)
			}
			out = fails(t, cs, "delete_object", map[string]any{"class_name": class, "object_id": "abc"}, "access_denied")
			out["error"] = strings.Replace(out["error"].(string), `"`+class+`"`, `"X"`, 1)
			if d := cmp.Diff(first, out); d != "" {
				t.Errorf("delete_object %s differs:\n%s", class, d)
			}
		}
	}
}

// Values are checked against the agent's view of the schema.
func TestWriteInvalid(t *testing.T) {
	st := fixtureStore(t)
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	bobCS := govClient(t, st, allGates, agent.Write, bobID, agent.Policy{})
	before := ok(t, m, "count_objects", map[string]any{"class_name": "Ticket"})["count"]
	for _, tc := range []struct {
		class string
		obj   map[string]any
		msg   string
	}{
		{"Ticket", map[string]any{"nope": 1}, `unknown field "nope" on class Ticket`},
		{"Ticket", map[string]any{"objectId": "abcdefghij", "title": "x"}, `field "objectId" is set by the server and cannot be written`},
		{"Ticket", map[string]any{"createdAt": date("2025-01-01T00:00:00.000Z")}, `field "createdAt" is set by the server and cannot be written`},
		// protected for bob: reads like an unknown field
		{"_User", map[string]any{"username": "eve", "email": "eve@example.com"}, `unknown field "email" on class _User`},
		{"Project", map[string]any{"name": "P", "members": map[string]any{"__type": "Relation", "className": "_User"}}, `field "members" is a Relation; relations cannot be written by these tools`},
		{"Project", map[string]any{"budget": 5}, `required field(s) missing: [name]`},
	} {
		for _, dry := range []bool{false, true} {
			refused(t, bobCS, "create_object", map[string]any{"class_name": tc.class, "object": tc.obj, "dry_run": dry}, "invalid_argument", "", tc.msg)
		}
	}
	// A wrong value type names the field.
	for _, dry := range []bool{false, true} {
		out := fails(t, bobCS, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"priority": "high"}, "dry_run": dry}, "invalid_argument")
		if !strings.Contains(out["error"].(string), `"priority"`) {
			t.Errorf("wrong type (dry %v): %v", dry, out["error"])
		}
		out = fails(t, bobCS, "update_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2", "object": map[string]any{"nope": 1}, "dry_run": dry}, "invalid_argument")
		if out["error"] != `unknown field "nope" on class Project` {
			t.Errorf("update unknown field (dry %v): %v", dry, out["error"])
		}
		out = fails(t, bobCS, "update_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2", "object": map[string]any{"name": nil}, "dry_run": dry}, "invalid_argument")
		if !strings.Contains(out["error"].(string), `required field "name" cannot be unset`) {
			t.Errorf("unset required (dry %v): %v", dry, out["error"])
		}
	}
	for _, bad := range []map[string]any{
		{"class_name": "Ticket"},
		{"class_name": "Ticket", "object": []any{1}},
		{"class_name": "Ticket", "object": "{not json"},
		{"object": map[string]any{"title": "x"}},
		{"class_name": "Ticket", "object": map[string]any{"title": "x"}, "extra": 1},
	} {
		fails(t, bobCS, "create_object", bad, "invalid_argument")
	}
	fails(t, bobCS, "update_object", map[string]any{"class_name": "Ticket", "object_id": "bad id!", "object": map[string]any{"title": "x"}}, "invalid_argument")
	fails(t, bobCS, "update_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2", "object": map[string]any{}}, "invalid_argument")
	if after := ok(t, m, "count_objects", map[string]any{"class_name": "Ticket"})["count"]; after != before {
		t.Fatalf("ticket count %v → %v", before, after)
	}
}

// A dry run validates and previews; it writes nothing.
func TestWriteDryRun(t *testing.T) {
	st := fixtureStore(t)
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	bobCS := govClient(t, st, allGates, agent.Write, bobID, agent.Policy{})
	count := func() any { return ok(t, m, "count_objects", map[string]any{"class_name": "Ticket"})["count"] }
	n := count()

	out := ok(t, bobCS, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "Maybe", "priority": 4}, "dry_run": true})
	// The object would be bob's alone: with no default ACL declared for the
	// class, an agent's objects are readable and writable by its user.
	bobOnly := map[string]any{"uBob000002": map[string]any{"read": true, "write": true}}
	if out["dry_run"] != true || !cmp.Equal(out["would_create"], map[string]any{"title": "Maybe", "priority": 4.0, "ACL": bobOnly}) {
		t.Fatalf("create dry run: %v", out)
	}
	if count() != n {
		t.Fatal("create dry run wrote")
	}

	before := readObject(t, m, "Project", "pBorealis2")
	out = ok(t, bobCS, "update_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2", "object": map[string]any{"budget": 1, "active": true}, "dry_run": true})
	want := map[string]any{"before": map[string]any{"budget": 250.0, "active": false}, "after": map[string]any{"budget": 1.0, "active": true}}
	if d := cmp.Diff(want, out["would_update"]); d != "" {
		t.Fatalf("update dry run (-want +got):\n%s", d)
	}
	unchanged(t, m, "Project", "pBorealis2", before)

	out = ok(t, bobCS, "delete_object", map[string]any{"class_name": "Ticket", "object_id": "t000000003", "dry_run": true})
	if out["would_delete"].(map[string]any)["title"] != "Ice survey" {
		t.Fatalf("delete dry run: %v", out)
	}
	if readObject(t, m, "Ticket", "t000000003") == nil || count() != n {
		t.Fatal("delete dry run deleted")
	}

	root := govClient(t, st, allGates, agent.Admin, master, agent.Policy{})
	out = ok(t, root, "create_class", map[string]any{"class_name": "Gadget", "fields": map[string]any{"size": map[string]any{"type": "Number"}}, "dry_run": true})
	if out["would_create_class"].(map[string]any)["fields"].(map[string]any)["size"] != "Number" {
		t.Fatalf("create_class dry run: %v", out)
	}
	fails(t, m, "get_schema", map[string]any{"class_name": "Gadget"}, "access_denied")
	refused(t, root, "create_class", map[string]any{"class_name": "Ticket", "dry_run": true}, "invalid_argument", "", "class already exists: Ticket")
	refused(t, root, "create_class", map[string]any{"class_name": "Ticket"}, "invalid_argument", "", "class already exists: Ticket")

	ok(t, root, "create_class", map[string]any{"class_name": "Empty"})
	out = ok(t, root, "delete_class", map[string]any{"class_name": "Empty", "dry_run": true})
	if out["dry_run"] != true {
		t.Fatalf("delete_class dry run: %v", out)
	}
	ok(t, m, "get_schema", map[string]any{"class_name": "Empty"})
	refused(t, root, "delete_class", map[string]any{"class_name": "Ticket", "dry_run": true}, "invalid_argument", "", "class is not empty: Ticket holds 5 objects; delete them first")
}

// Schema changes need the master key; system classes and bad definitions
// are refused.
func TestClassTools(t *testing.T) {
	st := fixtureStore(t)
	m := connect(t, newServer(t, st, agent.Readonly, master), "")
	alicesAdmin := govClient(t, st, allGates, agent.Admin, aliceID, agent.Policy{})
	for _, dry := range []bool{false, true} {
		refused(t, alicesAdmin, "create_class", map[string]any{"class_name": "Gadget", "dry_run": dry}, "permission_denied", "master_required", "schema changes need an agent acting with the master key")
		refused(t, alicesAdmin, "delete_class", map[string]any{"class_name": "Ticket", "dry_run": dry}, "permission_denied", "master_required", "schema changes need an agent acting with the master key")
	}
	fails(t, m, "get_schema", map[string]any{"class_name": "Gadget"}, "access_denied")
	ok(t, m, "get_schema", map[string]any{"class_name": "Ticket"})

	root := govClient(t, st, allGates, agent.Admin, master, agent.Policy{})
	for _, tc := range []struct {
		tool string
		args map[string]any
		msg  string
	}{
		{"create_class", map[string]any{"class_name": "_Widget"}, "system class _Widget cannot be created or deleted by an agent"},
		{"create_class", map[string]any{"class_name": "_User"}, "system class _User cannot be created or deleted by an agent"},
		{"delete_class", map[string]any{"class_name": "_User"}, "system class _User cannot be created or deleted by an agent"},
		{"delete_class", map[string]any{"class_name": "_Session"}, "system class _Session cannot be created or deleted by an agent"},
		{"create_class", map[string]any{"class_name": "9lives"}, `invalid class name "9lives": use a letter followed by letters, digits or underscores (at most 120)`},
		{"create_class", map[string]any{"class_name": "G", "fields": map[string]any{"x": map[string]any{"type": "Text"}}}, `fields.x: unknown type "Text" (use one of [String Number Boolean Date Object Array Pointer Relation File GeoPoint Polygon Bytes])`},
		{"create_class", map[string]any{"class_name": "G", "fields": map[string]any{"p": map[string]any{"type": "Pointer"}}}, "fields.p: a Pointer field needs a targetClass"},
		{"create_class", map[string]any{"class_name": "G", "fields": map[string]any{"s": map[string]any{"type": "String", "targetClass": "_User"}}}, "fields.s: targetClass is only for Pointer and Relation fields"},
		{"create_class", map[string]any{"class_name": "G", "fields": map[string]any{"objectId": map[string]any{"type": "Number"}}}, "fields.objectId: objectId is a default field of every class and cannot be defined"},
		{"create_class", map[string]any{"class_name": "G", "class_level_permissions": map[string]any{"finds": map[string]any{}}}, `argument "class_level_permissions": unknown field "finds"`},
		{"create_class", map[string]any{"class_name": "G", "fields": map[string]any{"p": map[string]any{"type": "Pointer", "targetClass": "Ghost"}}}, `field "p" points to class "Ghost", which was not found`},
	} {
		for _, dry := range []bool{false, true} {
			args := map[string]any{"dry_run": dry}
			for k, v := range tc.args {
				args[k] = v
			}
			refused(t, root, tc.tool, args, "invalid_argument", "", tc.msg)
		}
	}
	// A pointer into a class the agent cannot see is refused like a
	// pointer into a missing one.
	hider := govClient(t, st, allGates, agent.Admin, master, agent.Policy{Classes: agent.NameFilter{Except: []string{"Payroll"}}})
	for _, dry := range []bool{false, true} {
		refused(t, hider, "create_class", map[string]any{"class_name": "G", "dry_run": dry, "fields": map[string]any{"p": map[string]any{"type": "Pointer", "targetClass": "Payroll"}}},
			"invalid_argument", "", `field "p" points to class "Payroll", which was not found`)
	}
	fails(t, m, "get_schema", map[string]any{"class_name": "G"}, "access_denied")
}

// Tool annotations: reads are read-only; create is additive; update and
// delete are destructive.
func TestWriteAnnotations(t *testing.T) {
	cs := govClient(t, fixtureStore(t), allGates, agent.Admin, master, agent.Policy{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]bool{ // readOnly, destructive
		"create_object": {false, false}, "update_object": {false, true}, "delete_object": {false, true},
		"create_class": {false, false}, "delete_class": {false, true}, "call_method": {false, true},
	}
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			continue
		}
		a := tool.Annotations
		if a == nil || a.ReadOnlyHint != w[0] || a.DestructiveHint == nil || *a.DestructiveHint != w[1] {
			t.Errorf("%s annotations: %+v", tool.Name, a)
		}
		if tool.Meta["category"] != "mutation" {
			t.Errorf("%s category %v", tool.Name, tool.Meta["category"])
		}
		delete(want, tool.Name)
	}
	if len(want) > 0 {
		t.Fatalf("not listed: %v", want)
	}
}
