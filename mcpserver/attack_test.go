package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/tools"
)

// The attack table: every case is one request a non-master agent makes
// through a real SDK client to break the governance of the fixture. Each
// must be refused with an exact error code, or answer exactly the rows the
// agent may read. Expectations are written by hand from internal/testing/fixture:
//
//   - Ticket t000000005 ("Hidden task", priority 5) has ACL {}: nobody but
//     the master key reads it; t000000001–4 are public.
//   - Project Apollo is public, Borealis is bob's alone, Comet is role:Admin.
//   - _User email and authData are protected for "*".
//   - Payroll's class-level permissions allow nothing.
//   - _Session (and _JobStatus, which does not exist) are hidden classes.

// Who makes an attack.
type attacker int

const (
	asBob   attacker = iota // user bob, no roles
	asAdmin                 // a holder of role:Admin, no user
	asAnon                  // anonymous
)

func (a attacker) identity() agent.Identity {
	switch a {
	case asBob:
		return agent.Identity{Mode: agent.AuthUser, UserID: bob}
	case asAdmin:
		return agent.Identity{Mode: agent.AuthRole, Roles: []string{"Admin"}}
	}
	return agent.Identity{Mode: agent.AuthAnonymous}
}

// The request kinds besides tools/call.
const (
	kindTool     = ""
	kindResource = "resources/read"      // target: the URI
	kindPrompt   = "prompts/get"         // target: the prompt; args: map[string]string
	kindComplete = "completion/complete" // target: a resource template URI or "prompt:<name>"; args: the partial value
)

// errRPC is the expected "code" of a JSON-RPC (protocol-level) refusal.
const errRPC = "jsonrpc_error"

type attack struct {
	name   string
	who    attacker
	kind   string
	target string // tool name, resource URI, prompt name or completion ref
	args   any
	// scanThreshold, when set, serves the call with that
	// FullScanThreshold and full scans refused (explain_query).
	scanThreshold int64
	// code is the error_code the call must fail with ("" = must succeed).
	code string
	// want checks a successful answer exactly.
	want func(t *testing.T, out map[string]any)
	// twin, when set, repeats the request with twin[0] replaced by twin[1]
	// everywhere; the two answers must be the same once the name is
	// swapped back (a hidden thing looks exactly like a missing one).
	twin [2]string
}

// Strings that must never appear in an answer unless the request itself
// contained them.
var secrets = map[attacker][]string{
	asBob:   {`"Comet"`},
	asAdmin: {`"Borealis"`, "arctic", "bob@example.com"},
	asAnon:  {`"Comet"`, `"Borealis"`, "arctic", "bob@example.com"},
}

// A user sees its own email (Parse Server 9's owner exemption from
// protectedFields), nobody else's.
var alwaysSecret = []string{"Hidden task", "t000000005", "alice@example.com", "pay0000001", "100000", "sessionToken", "_hashed_password", "_Session", "_JobStatus", "authData"}

func TestAttacks(t *testing.T) {
	st := fixtureStore(t)
	type key struct {
		who attacker
		thr int64
	}
	clients := map[key]*mcp.ClientSession{}
	outer := t // sessions live as long as the whole table
	client := func(who attacker, thr int64) *mcp.ClientSession {
		t := outer
		k := key{who, thr}
		if cs, found := clients[k]; found {
			return cs
		}
		cfg := tools.DefaultConfig
		if thr != 0 {
			cfg.FullScanThreshold, cfg.RefuseFullScans = thr, true
		}
		id := who.identity()
		srv, err := mcpserver.New(mcpserver.Options{Store: st, ToolConfig: &cfg, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, id), nil
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		cs := connect(t, srv, "")
		clients[k] = cs
		return cs
	}

	for _, tc := range attackTable() {
		t.Run(tc.name, func(t *testing.T) {
			cs := client(tc.who, tc.scanThreshold)
			out, isErr := runAttack(t, cs, tc.kind, tc.target, tc.args)
			req := tc.target + " " + mustJSON(t, tc.args)
			checkNoLeak(t, tc.who, req, out)
			switch {
			case tc.code == "" && isErr:
				t.Fatalf("want success, got error %v", out)
			case tc.code != "" && !isErr:
				t.Fatalf("want error %s, got success %s", tc.code, mustJSON(t, out))
			case tc.code != "" && out["error_code"] != tc.code:
				t.Fatalf("want error_code %s, got %v (%v)", tc.code, out["error_code"], out["error"])
			}
			if tc.want != nil {
				tc.want(t, out)
			}
			if tc.twin[0] != "" {
				from, to := tc.twin[0], tc.twin[1]
				var args any
				if err := json.Unmarshal([]byte(strings.ReplaceAll(mustJSON(t, tc.args), from, to)), &args); err != nil {
					t.Fatal(err)
				}
				twin, twinErr := runAttack(t, cs, tc.kind, strings.ReplaceAll(tc.target, from, to), args)
				got, other := mustJSON(t, out), strings.ReplaceAll(mustJSON(t, twin), to, from)
				if isErr != twinErr || got != other {
					t.Fatalf("%s and %s answer differently:\n%s\n%s", from, to, got, mustJSON(t, twin))
				}
			}
		})
	}
}

// runAttack makes one request and returns its answer as a map; a refusal
// is isErr with error_code (errRPC for a JSON-RPC error) and error.
func runAttack(t *testing.T, cs *mcp.ClientSession, kind, target string, args any) (map[string]any, bool) {
	t.Helper()
	ctx := context.Background()
	rpcErr := func(err error) (map[string]any, bool) {
		return map[string]any{"error_code": errRPC, "error": err.Error()}, true
	}
	switch kind {
	case kindTool:
		return call(t, cs, target, args)
	case kindResource:
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: target})
		if err != nil {
			return rpcErr(err)
		}
		var out map[string]any
		if err := json.Unmarshal([]byte(rr.Contents[0].Text), &out); err != nil {
			t.Fatalf("resource is not JSON: %v", err)
		}
		return out, false
	case kindPrompt:
		var pargs map[string]string
		if err := json.Unmarshal([]byte(mustJSON(t, args)), &pargs); err != nil {
			t.Fatal(err)
		}
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: target, Arguments: pargs})
		if err != nil {
			return rpcErr(err)
		}
		return map[string]any{"text": r.Messages[0].Content.(*mcp.TextContent).Text}, false
	case kindComplete:
		ref := &mcp.CompleteReference{Type: "ref/resource", URI: target}
		argName := "className"
		if name, isPrompt := strings.CutPrefix(target, "prompt:"); isPrompt {
			ref, argName = &mcp.CompleteReference{Type: "ref/prompt", Name: name}, "class_name"
		}
		res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: argName, Value: args.(string)}})
		if err != nil {
			return rpcErr(err)
		}
		return map[string]any{"values": jsonOf(t, mustJSON(t, res.Completion.Values))}, false
	}
	t.Fatalf("unknown kind %q", kind)
	return nil, false
}

func checkNoLeak(t *testing.T, who attacker, req string, out map[string]any) {
	t.Helper()
	text := strings.ReplaceAll(mustJSON(t, out), `"$limit":100000`, "") // group_by_date's bucket bound
	for _, s := range append(slices.Clone(alwaysSecret), secrets[who]...) {
		if strings.Contains(text, s) && !strings.Contains(req, strings.Trim(s, `"`)) {
			t.Fatalf("LEAK: the answer contains %s:\n%s", s, text)
		}
	}
}

// The checks of successful answers.

func wantIDs(want ...string) func(*testing.T, map[string]any) {
	return func(t *testing.T, out map[string]any) {
		t.Helper()
		if got := ids(out["results"]); !slices.Equal(got, want) {
			t.Fatalf("results %v, want %v", got, want)
		}
	}
}

// wantJSON checks the named fields of the answer against JSON.
func wantJSON(fields map[string]string) func(*testing.T, map[string]any) {
	return func(t *testing.T, out map[string]any) {
		t.Helper()
		for k, js := range fields {
			if d := cmp.Diff(jsonOf(t, js), out[k]); d != "" {
				t.Fatalf("%s (-want +got):\n%s", k, d)
			}
		}
	}
}

func all(checks ...func(*testing.T, map[string]any)) func(*testing.T, map[string]any) {
	return func(t *testing.T, out map[string]any) {
		t.Helper()
		for _, c := range checks {
			c(t, out)
		}
	}
}

type m = map[string]any

func pipeline(js string) any {
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		panic(err)
	}
	return v
}

// ownerAlice is alice as an included object, without her protected email.
const ownerAlice = `{"__type":"Object","className":"_User","objectId":"uAlice0001","username":"alice","createdAt":"2025-01-01T00:00:00.000Z","updatedAt":"2025-01-01T00:00:00.000Z"}`

func attackTable() []attack {
	t5 := "t000000005"
	sel := func(class, key string) m {
		return m{"$select": m{"query": m{"className": class}, "key": key}}
	}
	return []attack{
		// ---- rows the ACL hides -----------------------------------------
		{name: "acl/query_by_id", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"objectId": t5}}, want: wantIDs()},
		{name: "acl/query_or", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"$or": []any{m{"objectId": t5}, m{"title": "Hidden task"}, m{"priority": m{"$gt": 4}}}}}, want: wantIDs()},
		{name: "acl/query_nor", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"$nor": []any{m{"status": "closed"}}}}, want: wantIDs("t000000001", "t000000003", "t000000004")},
		{name: "acl/query_in_ids", who: asAnon, target: "query_class", args: m{"class_name": "Ticket", "where": m{"objectId": m{"$in": []any{"t000000001", t5}}}}, want: wantIDs("t000000001")},
		{name: "acl/query_regex", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"title": m{"$regex": "^hid", "$options": "i"}}}, want: wantIDs()},
		{name: "acl/order_skip_probe", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "order": "-priority", "skip": 3, "limit": 10},
			want: all(wantIDs("t000000004"), wantJSON(map[string]string{"pagination": `{"limit":10,"skip":3,"has_more":false}`}))},
		{name: "acl/order_top", who: asAnon, target: "query_class", args: m{"class_name": "Ticket", "order": "-priority", "limit": 1, "keys": []string{"priority"}}, want: wantIDs("t000000002")},
		{name: "acl/project_other_users", who: asAdmin, target: "query_class", args: m{"class_name": "Project", "keys": "name"}, want: wantIDs("pApollo001", "pComet0003")},
		{name: "acl/inquery_hidden_project", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"project": m{"$inQuery": m{"className": "Project", "where": m{"name": "Comet"}}}}}, want: wantIDs()},
		{name: "acl/count_oracle", who: asBob, target: "count_objects", args: m{"class_name": "Ticket", "where": m{"priority": m{"$gte": 5}}}, want: wantJSON(map[string]string{"count": "0"})},
		{name: "acl/count_all", who: asBob, target: "count_objects", args: m{"class_name": "Ticket"}, want: wantJSON(map[string]string{"count": "4"})},
		{name: "acl/count_other_user_project", who: asAdmin, target: "count_objects", args: m{"class_name": "Project", "where": m{"name": "Borealis"}}, want: wantJSON(map[string]string{"count": "0"})},
		{name: "acl/get_object_hidden_is_missing", who: asAnon, target: "get_object", args: m{"class_name": "Ticket", "object_id": t5}, code: "not_found", twin: [2]string{t5, "t999999999"}},
		{name: "acl/get_object_other_user", who: asAdmin, target: "get_object", args: m{"class_name": "Project", "object_id": "pBorealis2"}, code: "not_found", twin: [2]string{"pBorealis2", "pNothing09"}},
		{name: "acl/get_objects", who: asBob, target: "get_objects", args: m{"class_name": "Project", "ids": []string{"pApollo001", "pBorealis2", "pComet0003", "pNothing09"}, "include": []string{"owner"}},
			want: func(t *testing.T, out map[string]any) {
				objs := out["objects"].(map[string]any)
				if _, a := objs["pApollo001"]; !a || len(objs) != 2 || objs["pBorealis2"] == nil {
					t.Fatalf("objects: %v", objs)
				}
				wantJSON(map[string]string{"missing": `["pComet0003","pNothing09"]`, "found": "2", "requested": "4"})(t, out)
			}},
		{name: "acl/samples", who: asBob, target: "get_sample_objects", args: m{"class_name": "Ticket", "limit": 20}, want: wantIDs("t000000004", "t000000003", "t000000002", "t000000001")},
		{name: "acl/samples_anon", who: asAnon, target: "get_sample_objects", args: m{"class_name": "Project"}, want: wantIDs("pApollo001")},
		{name: "acl/export", who: asBob, target: "export_data", args: m{"class_name": "Ticket", "keys": []string{"objectId", "title"}},
			want: wantJSON(map[string]string{"row_count": "4", "output": `"objectId,title\nt000000001,Fuel leak\nt000000002,Paint hull\nt000000003,Ice survey\nt000000004,Orbit calc\n"`})},
		{name: "acl/aggregate_match_count", who: asBob, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": pipeline(`[{"$match":{"priority":{"$gte":5}}},{"$count":"n"}]`)}, want: wantJSON(map[string]string{"results": `[]`})},
		{name: "acl/aggregate_group", who: asBob, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": pipeline(`[{"$group":{"_id":"$status","n":{"$sum":1}}},{"$sort":{"objectId":1}}]`)},
			want: wantJSON(map[string]string{"results": `[{"objectId":"closed","n":1},{"objectId":"in_progress","n":1},{"objectId":"open","n":2}]`})},
		{name: "acl/aggregate_lookup_unwind", who: asAdmin, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": pipeline(`[{"$lookup":{"from":"Project","localField":"project","foreignField":"_id","as":"p"}},{"$unwind":"$p"},{"$group":{"_id":"$p.name","n":{"$sum":1}}},{"$sort":{"objectId":1}}]`)},
			want: wantJSON(map[string]string{"results": `[{"objectId":"Apollo","n":2},{"objectId":"Comet","n":1}]`})},
		{name: "acl/aggregate_unwind_tags", who: asAdmin, target: "aggregate", args: m{"class_name": "Project", "pipeline": pipeline(`[{"$unwind":"$tags"},{"$group":{"_id":"$tags","n":{"$sum":1}}},{"$sort":{"objectId":1}}]`)},
			want: wantJSON(map[string]string{"results": `[{"objectId":"nasa","n":1},{"objectId":"space","n":2}]`})},
		{name: "acl/group_by", who: asAnon, target: "group_by", args: m{"class_name": "Project", "field": "name"}, want: wantJSON(map[string]string{"groups": `[{"key":"Apollo","value":1}]`})},
		{name: "acl/distinct", who: asBob, target: "distinct", args: m{"class_name": "Ticket", "field": "title"}, want: wantJSON(map[string]string{"values": `["Fuel leak","Ice survey","Orbit calc","Paint hull"]`})},
		{name: "acl/group_by_date", who: asBob, target: "group_by_date", args: m{"class_name": "Ticket", "field": "createdAt", "interval": "day"},
			want: wantJSON(map[string]string{"groups": `[{"key":"2025-05-01","value":1},{"key":"2025-05-02","value":1},{"key":"2025-05-03","value":1},{"key":"2025-05-04","value":1}]`})},
		// explain_query sizes the class through the scope: bob's 4 tickets
		// are within a threshold of 4 (the master's 5 would not be).
		{name: "acl/explain_row_count_within", who: asBob, scanThreshold: 4, target: "explain_query", args: m{"class_name": "Ticket", "where": m{"title": "Fuel leak"}}, want: wantJSON(map[string]string{"full_scan": "true"})},
		{name: "acl/explain_row_count_refused", who: asBob, scanThreshold: 3, target: "explain_query", args: m{"class_name": "Ticket", "where": m{"title": "Fuel leak"}}, code: tools.CodeSecurityBlocked,
			want: wantJSON(map[string]string{"details": `{"kind":"full_scan_refused","row_count":4,"threshold":3,"suggested_index":[{"title":1}]}`})},
		{name: "acl/explain_row_count_admin", who: asAdmin, scanThreshold: 1, target: "explain_query", args: m{"class_name": "Project", "where": m{"budget": 1}}, code: tools.CodeSecurityBlocked,
			want: wantJSON(map[string]string{"details": `{"kind":"full_scan_refused","row_count":2,"threshold":1,"suggested_index":[{"budget":1}]}`})},
		{name: "acl/select_hidden_project_ids", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"project": m{"$select": m{"query": m{"className": "Project", "where": m{"budget": m{"$gte": 5000}}}, "key": "objectId"}}}}, want: wantIDs()},
		{name: "acl/relatedTo_hidden_owner", who: asAdmin, target: "query_class", args: m{"class_name": "_User", "where": m{"$relatedTo": m{"object": m{"__type": "Pointer", "className": "Project", "objectId": "pBorealis2"}, "key": "members"}}}, want: wantIDs()},
		{name: "acl/relatedTo_visible_owner", who: asAnon, target: "query_class", args: m{"class_name": "_User", "where": m{"$relatedTo": m{"object": m{"__type": "Pointer", "className": "Project", "objectId": "pApollo001"}, "key": "members"}}}, want: wantIDs(alice, bob)},
		{name: "acl/user_samples", who: asAnon, target: "get_sample_objects", args: m{"class_name": "_User"}, want: wantIDs(bob, alice)},
		{name: "acl/export_pointer_column", who: asAnon, target: "export_data", args: m{"class_name": "Ticket", "columns": []any{"objectId", m{"project.name": "P"}}, "format": "markdown"},
			want: wantJSON(map[string]string{"output": `"| objectId | P |\n| --- | --- |\n| t000000001 | Apollo |\n| t000000002 | Apollo |\n| t000000003 |  |\n| t000000004 |  |\n"`})},
		{name: "acl/resource_count", who: asBob, kind: kindResource, target: "parse://Ticket/count", want: wantJSON(map[string]string{"count": "4"})},
		{name: "acl/resource_count_anon", who: asAnon, kind: kindResource, target: "parse://Project/count", want: wantJSON(map[string]string{"count": "1"})},
		{name: "acl/resource_samples", who: asAnon, kind: kindResource, target: "parse://Project/samples", want: wantIDs("pApollo001")},

		// ---- protected fields ---------------------------------------------
		// Naming a protected field gets exactly the answer a field that does
		// not exist gets.
		{name: "protected/keys", who: asBob, target: "query_class", args: m{"class_name": "_User", "keys": []string{"username", "email"}}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/keys_authData", who: asAnon, target: "query_class", args: m{"class_name": "_User", "keys": []string{"authData"}}, code: "access_denied", twin: [2]string{"authData", "zzzzzzzz"}},
		{name: "protected/where", who: asBob, target: "query_class", args: m{"class_name": "_User", "where": m{"email": "alice@example.com"}}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/where_or_exists", who: asBob, target: "count_objects", args: m{"class_name": "_User", "where": m{"$or": []any{m{"username": "x"}, m{"email": m{"$exists": true}}}}}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/order", who: asBob, target: "query_class", args: m{"class_name": "_User", "order": "-email"}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/include_nested", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"objectId": "t000000001"}, "include": []string{"project.owner"}},
			want: func(t *testing.T, out map[string]any) {
				p := out["results"].([]any)[0].(map[string]any)["project"].(map[string]any)
				if d := cmp.Diff(jsonOf(t, ownerAlice), p["owner"]); d != "" {
					t.Fatalf("project.owner (-want +got):\n%s", d)
				}
			}},
		{name: "protected/include_keys", who: asAnon, target: "query_class", args: m{"class_name": "Project", "where": m{"objectId": "pApollo001"}, "keys": []string{"owner.email"}, "include": []string{"owner"}},
			want: func(t *testing.T, out map[string]any) {
				want := `[{"objectId":"pApollo001","createdAt":"2025-02-01T00:00:00.000Z","updatedAt":"2025-02-01T00:00:00.000Z","members":{"__type":"Relation","className":"_User"},` +
					`"owner":{"__type":"Object","className":"_User","objectId":"uAlice0001","createdAt":"2025-01-01T00:00:00.000Z","updatedAt":"2025-01-01T00:00:00.000Z"}}]`
				if d := cmp.Diff(jsonOf(t, want), out["results"]); d != "" {
					t.Fatalf("keys owner.email (-want +got):\n%s", d)
				}
			}},
		{name: "protected/get_object_include", who: asAnon, target: "get_object", args: m{"class_name": "Project", "object_id": "pApollo001", "include": []string{"owner"}},
			want: func(t *testing.T, out map[string]any) {
				if d := cmp.Diff(jsonOf(t, ownerAlice), out["object"].(map[string]any)["owner"]); d != "" {
					t.Fatalf("owner (-want +got):\n%s", d)
				}
			}},
		{name: "protected/select_key", who: asBob, target: "count_objects", args: m{"class_name": "Ticket", "where": m{"title": sel("_User", "email")}}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/inquery_where", who: asBob, target: "count_objects", args: m{"class_name": "Project", "where": m{"owner": m{"$inQuery": m{"className": "_User", "where": m{"email": m{"$regex": "^alice"}}}}}}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/aggregate_group", who: asBob, target: "aggregate", args: m{"class_name": "_User", "pipeline": pipeline(`[{"$group":{"_id":null,"e":{"$max":"$email"}}}]`)}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/aggregate_project", who: asBob, target: "aggregate", args: m{"class_name": "_User", "pipeline": pipeline(`[{"$project":{"email":1}}]`)}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/aggregate_match", who: asBob, target: "aggregate", args: m{"class_name": "_User", "pipeline": pipeline(`[{"$match":{"email":{"$regex":"^a"}}},{"$count":"n"}]`)}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/aggregate_lookup_foreign", who: asBob, target: "aggregate", args: m{"class_name": "Project", "pipeline": pipeline(`[{"$lookup":{"from":"_User","localField":"name","foreignField":"email","as":"u"}}]`)}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/aggregate_lookup_path", who: asBob, target: "aggregate", args: m{"class_name": "Project", "pipeline": pipeline(`[{"$lookup":{"from":"_User","localField":"owner","foreignField":"_id","as":"u"}},{"$unwind":"$u"},{"$group":{"_id":"$u.email"}}]`)}, code: "invalid_query", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/export_columns", who: asBob, target: "export_data", args: m{"class_name": "_User", "columns": []any{"username", m{"field": "email", "as": "E"}}}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/export_pointer_path", who: asBob, target: "export_data", args: m{"class_name": "Ticket", "columns": []string{"title", "project.owner.email"}}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/export_defaults", who: asBob, target: "export_data", args: m{"class_name": "_User"},
			want: wantJSON(map[string]string{"output": `"objectId,createdAt,updatedAt,emailVerified,username\nuAlice0001,2025-01-01T00:00:00.000Z,2025-01-01T00:00:00.000Z,,alice\nuBob000002,2025-01-02T00:00:00.000Z,2025-01-02T00:00:00.000Z,,bob\n"`})},
		{name: "protected/export_include_defaults", who: asBob, target: "export_data", args: m{"class_name": "Ticket", "where": m{"objectId": "t000000001"}, "include": []string{"project.owner"}},
			want: wantJSON(map[string]string{"headers": `["objectId","createdAt","updatedAt","due","priority","project","project.active","project.budget","project.meta","project.name","project.owner","project.owner.emailVerified","project.owner.username","project.tags","status","title"]`})},
		{name: "protected/distinct", who: asBob, target: "distinct", args: m{"class_name": "_User", "field": "email"}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/group_by", who: asAnon, target: "group_by", args: m{"class_name": "_User", "field": "email"}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/group_by_value_field", who: asBob, target: "group_by", args: m{"class_name": "_User", "field": "username", "operation": "max", "value_field": "email"}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/aggregate_lookup_local", who: asBob, target: "aggregate", args: m{"class_name": "_User", "pipeline": pipeline(`[{"$lookup":{"from":"Project","localField":"email","foreignField":"name","as":"p"}}]`)}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/prompt_count_by", who: asBob, kind: kindPrompt, target: "count_by", args: map[string]string{"class_name": "_User", "group_by": "email"}, code: errRPC, twin: [2]string{"email", "zzzzz"}},
		{name: "protected/resource_samples", who: asBob, kind: kindResource, target: "parse://_User/samples", want: wantIDs(bob, alice)},
		// The owner exemption: bob's own row keeps its email, alice's
		// does not (as Parse Server 9 answers a user reading _User).
		{name: "protected/owner_sees_own_email", who: asBob, target: "get_objects", args: m{"class_name": "_User", "ids": []string{alice, bob}},
			want: wantJSON(map[string]string{"objects": `{"uAlice0001":{"objectId":"uAlice0001","username":"alice","createdAt":"2025-01-01T00:00:00.000Z","updatedAt":"2025-01-01T00:00:00.000Z"},` +
				`"uBob000002":{"objectId":"uBob000002","username":"bob","email":"bob@example.com","createdAt":"2025-01-02T00:00:00.000Z","updatedAt":"2025-01-02T00:00:00.000Z"}}`})},
		{name: "protected/get_objects_users", who: asAnon, target: "get_objects", args: m{"class_name": "_User", "ids": []string{alice, bob}},
			want: wantJSON(map[string]string{"objects": `{"uAlice0001":{"objectId":"uAlice0001","username":"alice","createdAt":"2025-01-01T00:00:00.000Z","updatedAt":"2025-01-01T00:00:00.000Z"},` +
				`"uBob000002":{"objectId":"uBob000002","username":"bob","createdAt":"2025-01-02T00:00:00.000Z","updatedAt":"2025-01-02T00:00:00.000Z"}}`})},
		{name: "protected/distinct_where_dry_run", who: asBob, target: "distinct", args: m{"class_name": "_User", "field": "username", "where": m{"email": m{"$regex": "^a"}}, "dry_run": true}, code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/schema", who: asBob, target: "get_schema", args: m{"class_name": "_User"},
			want: func(t *testing.T, out map[string]any) {
				var names []string
				for _, f := range out["fields"].([]any) {
					names = append(names, f.(map[string]any)["name"].(string))
				}
				if want := []string{"objectId", "createdAt", "updatedAt", "ACL", "emailVerified", "username"}; !slices.Equal(names, want) {
					t.Fatalf("fields %v, want %v", names, want)
				}
				if strings.Contains(mustJSON(t, out["class_level_permissions"]), "protected") {
					t.Fatalf("which fields are protected is itself protected: %v", out["class_level_permissions"])
				}
			}},

		// ---- hidden classes ------------------------------------------------
		{name: "hidden/get_schema", who: asBob, target: "get_schema", args: m{"class_name": "_Session"}, code: "access_denied", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/get_schema_jobstatus", who: asAnon, target: "get_schema", args: m{"class_name": "_JobStatus"}, code: "access_denied", twin: [2]string{"_JobStatus", "_Nothing"}},
		{name: "hidden/count", who: asBob, target: "count_objects", args: m{"class_name": "_Session"}, code: "access_denied", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/query", who: asAdmin, target: "query_class", args: m{"class_name": "_JobStatus", "where": m{"status": "running"}}, code: "access_denied", twin: [2]string{"_JobStatus", "_Nothing"}},
		{name: "hidden/get_object", who: asBob, target: "get_object", args: m{"class_name": "_Session", "object_id": "s000000001"}, code: "access_denied", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/inquery", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"project": m{"$inQuery": m{"className": "_Session"}}}}, code: "invalid_query", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/select", who: asBob, target: "count_objects", args: m{"class_name": "Ticket", "where": m{"title": sel("_JobStatus", "status")}}, code: "invalid_query", twin: [2]string{"_JobStatus", "_Nothing"}},
		{name: "hidden/select_session_token", who: asAnon, target: "count_objects", args: m{"class_name": "Ticket", "where": m{"title": m{"$dontSelect": m{"query": m{"className": "_Session", "where": m{"user": bob}}, "key": "sessionToken"}}}}, code: "invalid_query", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/relatedTo", who: asBob, target: "query_class", args: m{"class_name": "_User", "where": m{"$relatedTo": m{"object": m{"__type": "Pointer", "className": "_Session", "objectId": "s000000001"}, "key": "user"}}}, code: "invalid_query", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/lookup", who: asBob, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": pipeline(`[{"$lookup":{"from":"_Session","localField":"objectId","foreignField":"_id","as":"s"}}]`)}, code: "invalid_query", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/lookup_jobstatus", who: asAdmin, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": pipeline(`[{"$lookup":{"from":"_JobStatus","localField":"objectId","foreignField":"_id","as":"s"}}]`)}, code: "invalid_query", twin: [2]string{"_JobStatus", "_Nothing"}},
		{name: "hidden/aggregate", who: asBob, target: "aggregate", args: m{"class_name": "_Session", "pipeline": pipeline(`[{"$count":"n"}]`)}, code: "access_denied", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/explain", who: asBob, target: "explain_query", args: m{"class_name": "_Session"}, code: "access_denied", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/export", who: asAnon, target: "export_data", args: m{"class_name": "_Session", "columns": []string{"sessionToken"}}, code: "access_denied", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/group_by", who: asBob, target: "group_by", args: m{"class_name": "_JobStatus", "field": "status"}, code: "access_denied", twin: [2]string{"_JobStatus", "_Nothing"}},
		{name: "hidden/distinct", who: asBob, target: "distinct", args: m{"class_name": "_Session", "field": "sessionToken"}, code: "access_denied", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/all_schemas_names", who: asBob, target: "get_all_schemas", args: m{"names": []string{"_Session", "_JobStatus"}}, want: wantJSON(map[string]string{"total": "0", "built_in": "[]", "custom": "[]"})},
		{name: "hidden/distinct_where", who: asBob, target: "distinct", args: m{"class_name": "Ticket", "field": "status", "where": m{"project": m{"$inQuery": m{"className": "_Session"}}}}, code: "invalid_query", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/group_by_dry_run", who: asBob, target: "group_by", args: m{"class_name": "Ticket", "field": "status", "where": m{"project": m{"$inQuery": m{"className": "_Session"}}}, "dry_run": true}, code: "invalid_query", twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/case_variant", who: asAnon, target: "count_objects", args: m{"class_name": "_session"}, code: "access_denied", twin: [2]string{"_session", "_Nothing"}},
		{name: "hidden/all_schemas", who: asBob, target: "get_all_schemas", args: m{"prefix": "_"},
			want: func(t *testing.T, out map[string]any) {
				var names []string
				for _, c := range out["built_in"].([]any) {
					names = append(names, c.(map[string]any)["name"].(string))
				}
				if !slices.Equal(names, []string{"_Role", "_User"}) || out["total"] != 2.0 {
					t.Fatalf("classes %v (total %v)", names, out["total"])
				}
			}},
		{name: "hidden/resource_count", who: asBob, kind: kindResource, target: "parse://_Session/count", code: errRPC, twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/resource_schema", who: asAnon, kind: kindResource, target: "parse://_JobStatus/schema", code: errRPC, twin: [2]string{"_JobStatus", "_Nothing"}},
		{name: "hidden/resource_samples", who: asAdmin, kind: kindResource, target: "parse://_Session/samples", code: errRPC, twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/complete_resource", who: asBob, kind: kindComplete, target: "parse://{className}/count", args: "_", want: wantJSON(map[string]string{"values": `["_Role","_User"]`})},
		{name: "hidden/complete_prompt", who: asAnon, kind: kindComplete, target: "prompt:class_overview", args: "_s", want: wantJSON(map[string]string{"values": `[]`})},
		{name: "hidden/prompt", who: asBob, kind: kindPrompt, target: "class_overview", args: map[string]string{"class_name": "_Session"}, code: errRPC, twin: [2]string{"_Session", "Nothing1"}},
		{name: "hidden/prompt_jobstatus", who: asAnon, kind: kindPrompt, target: "count_by", args: map[string]string{"class_name": "_JobStatus", "group_by": "status"}, code: errRPC, twin: [2]string{"_JobStatus", "_Nothing"}},

		// ---- class-level permissions: Payroll allows nothing ---------------
		{name: "clp/query", who: asBob, target: "query_class", args: m{"class_name": "Payroll"}, code: "permission_denied"},
		{name: "clp/count", who: asAdmin, target: "count_objects", args: m{"class_name": "Payroll", "where": m{"amount": m{"$gt": 0}}}, code: "permission_denied"},
		{name: "clp/get_object", who: asBob, target: "get_object", args: m{"class_name": "Payroll", "object_id": "pay0000001"}, code: "permission_denied"},
		{name: "clp/get_objects", who: asAnon, target: "get_objects", args: m{"class_name": "Payroll", "ids": []string{"pay0000001"}}, code: "permission_denied"},
		{name: "clp/samples", who: asBob, target: "get_sample_objects", args: m{"class_name": "Payroll"}, code: "permission_denied"},
		{name: "clp/aggregate", who: asBob, target: "aggregate", args: m{"class_name": "Payroll", "pipeline": pipeline(`[{"$group":{"_id":null,"s":{"$sum":"$amount"}}}]`)}, code: "permission_denied"},
		{name: "clp/select", who: asBob, target: "count_objects", args: m{"class_name": "Ticket", "where": m{"priority": sel("Payroll", "amount")}}, code: "permission_denied"},
		{name: "clp/dont_select", who: asAdmin, target: "query_class", args: m{"class_name": "Ticket", "where": m{"priority": m{"$dontSelect": m{"query": m{"className": "Payroll", "where": m{"amount": m{"$gt": 1}}}, "key": "amount"}}}}, code: "permission_denied"},
		{name: "clp/select_in_match", who: asBob, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": []any{m{"$match": m{"priority": sel("Payroll", "amount")}}, m{"$count": "n"}}}, code: "permission_denied"},
		{name: "clp/lookup", who: asAnon, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": pipeline(`[{"$lookup":{"from":"Payroll","localField":"objectId","foreignField":"_id","as":"p"}}]`)}, code: "permission_denied"},
		{name: "clp/explain", who: asBob, target: "explain_query", args: m{"class_name": "Payroll", "where": m{"amount": 100000}}, code: "permission_denied"},
		{name: "clp/export", who: asBob, target: "export_data", args: m{"class_name": "Payroll"}, code: "permission_denied"},
		{name: "clp/group_by", who: asAdmin, target: "group_by", args: m{"class_name": "Payroll", "field": "amount"}, code: "permission_denied"},
		{name: "clp/distinct", who: asBob, target: "distinct", args: m{"class_name": "Payroll", "field": "amount"}, code: "permission_denied"},
		{name: "clp/group_by_date", who: asBob, target: "group_by_date", args: m{"class_name": "Payroll", "field": "createdAt", "interval": "year"}, code: "permission_denied"},
		{name: "clp/case_variant", who: asBob, target: "count_objects", args: m{"class_name": "payroll"}, code: "access_denied", twin: [2]string{"payroll", "nothing"}},
		{name: "clp/nested_select", who: asBob, target: "query_class", args: m{"class_name": "Ticket", "where": m{"project": m{"$inQuery": m{"className": "Project", "where": m{"budget": sel("Payroll", "amount")}}}}}, code: "permission_denied"},
		{name: "clp/group_by_where", who: asAnon, target: "group_by", args: m{"class_name": "Ticket", "field": "status", "where": m{"$or": []any{m{"status": "open"}, m{"priority": sel("Payroll", "amount")}}}}, code: "permission_denied"},
		{name: "clp/prompt_is_text_only", who: asBob, kind: kindPrompt, target: "class_overview", args: map[string]string{"class_name": "Payroll"}},
		{name: "clp/explain_select", who: asBob, target: "explain_query", args: m{"class_name": "Ticket", "where": m{"priority": sel("Payroll", "amount")}}, code: "permission_denied"},
		{name: "clp/aggregate_dry_run", who: asBob, target: "aggregate", args: m{"class_name": "Payroll", "pipeline": pipeline(`[{"$count":"n"}]`), "dry_run": true}, code: "permission_denied"},
		{name: "clp/lookup_dry_run", who: asBob, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": pipeline(`[{"$lookup":{"from":"Payroll","localField":"objectId","foreignField":"_id","as":"p"}}]`), "dry_run": true}, code: "permission_denied"},
		{name: "clp/group_by_dry_run", who: asAnon, target: "group_by", args: m{"class_name": "Payroll", "field": "amount", "dry_run": true}, code: "permission_denied"},
		{name: "clp/distinct_dry_run", who: asBob, target: "distinct", args: m{"class_name": "Ticket", "field": "status", "where": m{"priority": sel("Payroll", "amount")}, "dry_run": true}, code: "permission_denied"},
		{name: "clp/group_by_date_dry_run", who: asAdmin, target: "group_by_date", args: m{"class_name": "Payroll", "field": "createdAt", "interval": "month", "dry_run": true}, code: "permission_denied"},
		{name: "clp/resource_count", who: asBob, kind: kindResource, target: "parse://Payroll/count", code: errRPC},
		{name: "clp/resource_samples", who: asAnon, kind: kindResource, target: "parse://Payroll/samples", code: errRPC},

		// ---- session tokens and internal fields ----------------------------
		{name: "internal/keys_session_token", who: asBob, target: "query_class", args: m{"class_name": "_User", "keys": []string{"sessionToken"}}, code: "access_denied", twin: [2]string{"sessionToken", "zzzzzzzzzzzz"}},
		{name: "internal/where_hashed_password", who: asBob, target: "count_objects", args: m{"class_name": "_User", "where": m{"_hashed_password": m{"$exists": true}}}, code: "access_denied", twin: [2]string{"_hashed_password", "_zzzzzzzzzzzzzzz"}},
		{name: "internal/order_hashed_password", who: asAnon, target: "query_class", args: m{"class_name": "_User", "order": "_hashed_password"}, code: "access_denied", twin: [2]string{"_hashed_password", "_zzzzzzzzzzzzzzz"}},
		{name: "internal/aggregate_group", who: asBob, target: "aggregate", args: m{"class_name": "_User", "pipeline": pipeline(`[{"$group":{"_id":"$_hashed_password"}}]`)}, code: "access_denied", twin: [2]string{"_hashed_password", "_zzzzzzzzzzzzzzz"}},
		{name: "internal/aggregate_project", who: asBob, target: "aggregate", args: m{"class_name": "_User", "pipeline": pipeline(`[{"$project":{"sessionToken":1}}]`)}, code: "access_denied", twin: [2]string{"sessionToken", "zzzzzzzzzzzz"}},
		{name: "internal/export", who: asBob, target: "export_data", args: m{"class_name": "_User", "columns": []string{"_hashed_password"}}, code: "access_denied", twin: [2]string{"_hashed_password", "_zzzzzzzzzzzzzzz"}},
		{name: "internal/distinct", who: asAnon, target: "distinct", args: m{"class_name": "_User", "field": "sessionToken"}, code: "access_denied", twin: [2]string{"sessionToken", "zzzzzzzzzzzz"}},
		{name: "internal/select_key", who: asBob, target: "count_objects", args: m{"class_name": "Ticket", "where": m{"title": sel("_User", "_email_verify_token")}}, code: "access_denied", twin: [2]string{"_email_verify_token", "_zzzzzzzzzzzzzzzzzz"}},
		{name: "internal/rperm", who: asAnon, target: "query_class", args: m{"class_name": "Ticket", "where": m{"_rperm": m{"$in": []string{"*"}}}}, code: "access_denied", twin: [2]string{"_rperm", "_zzzzz"}},
		{name: "internal/acl_where", who: asBob, target: "count_objects", args: m{"class_name": "Ticket", "where": m{"ACL": m{"$exists": false}}}, code: "invalid_query"},
		{name: "internal/acl_group_by", who: asBob, target: "group_by", args: m{"class_name": "Ticket", "field": "ACL"}, code: "invalid_argument"},
		{name: "internal/acl_aggregate", who: asBob, target: "aggregate", args: m{"class_name": "Ticket", "pipeline": pipeline(`[{"$group":{"_id":"$_rperm","n":{"$sum":1}}}]`)}, code: "access_denied", twin: [2]string{"_rperm", "_zzzzz"}},
	}
}
