package govtest

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/parse"
)

// TestGovernanceAttacks runs the attack table on SQLite and on PostgreSQL.
// Who is who (docs/POLICY.md, policy/demo.yaml, testPolicy):
//
//   - demo analyst: readonly, roles Manager and org-acme (so Support and
//     Sales too), tenant Acme.
//   - demo support: write, the fixture user "support" (Support, org-acme),
//     tenant Acme, classes Ticket/Comment/Customer/Project, no
//     export_data, and the filter Ticket {status: {$ne: closed}}.
//   - demo admin: admin, master key.
//   - test policy (testPolicy): member and norole are write-tier fixture
//     users "member" (org-acme) and "norole" (no role) of Acme; manager,
//     cycle (a role cycle), roles-admin (admin tier, no master key),
//     no-product (a class filter), filtered (:default filters), lead and
//     its child triage, usurper (a child asking for a role its parent user
//     lacks), portal (the session's user), root (master key). It keeps
//     Ticket to its agent_fields (no tags, estimateHours, escalated),
//     projects included elsewhere to name/key/status, hides Customer
//     (except from the master key) and Order (from everyone).
//
// The planted rows and markers are in env.plant.
func TestGovernanceAttacks(t *testing.T) {
	if n := len(attackTable()); n < 45 {
		t.Fatalf("the table has %d cases; the issue asks for at least 45", n)
	}
	t.Run("sqlite", func(t *testing.T) { runAll(t, sqliteEnv(t)) })
	t.Run("postgres", func(t *testing.T) { runAll(t, postgresEnv(t)) })
	t.Run("parserest", func(t *testing.T) { runAll(t, parserestEnv(t)) })
}

type m = map[string]any

func pointer(class, id string) m { return m{"__type": "Pointer", "className": class, "objectId": id} }

func orgPtr(id string) m { return pointer("Organization", id) }

func sel(class, key string) m {
	return m{"$select": m{"query": m{"className": class}, "key": key}}
}

// The refusal messages.
const (
	crudHint  = " Prefer declaring a method on the class in the policy file: an intent-based write needs only PARSEMCP_ALLOW_WRITE_TOOLS."
	spoofMsg  = "the constraint on %s names another tenant than this agent's"
	masterMsg = "schema changes need an agent acting with the master key"
)

func spoof(classField string) string { return strings.Replace(spoofMsg, "%s", classField, 1) }

// countOf turns a ground-truth id list into a count.
func countOf(f func(t *testing.T, e *env) []string) func(t *testing.T, e *env) int {
	return func(t *testing.T, e *env) int { return len(f(t, e)) }
}

// Ground truths, computed from the raw rows.
func analystTickets(keep func(parse.Object) bool) func(t *testing.T, e *env) []string {
	return func(t *testing.T, e *env) []string { return e.truth(t, "Ticket", acme, entriesAnalyst, keep) }
}

var fixtureTickets = []any{ticketNoACL, ticketPublicRead, ticketOrg, ticketMember, ticketSupport, ticketMasterOnly}

func attackTable() []attack {
	open := fieldIs("status", "open")
	notArchived := not(fieldIs("archived", true))
	return []attack{
		// ---- rows the ACL hides ------------------------------------------
		{name: "acl/query_fixture_tickets", pol: "demo", profile: "analyst", target: "query_class",
			args: m{"class_name": "Ticket", "where": m{"objectId": m{"$in": fixtureTickets}}, "order": "objectId", "keys": []string{"title"}},
			// no ACL, public read, org-acme, Support (through Manager); not
			// the member's own ticket nor the {} one.
			want: both(wantIDs(func(*testing.T, *env) []string {
				return []string{ticketNoACL, ticketPublicRead, ticketOrg, ticketSupport}
			}), wantIDs(analystTickets(func(r parse.Object) bool { return slices.Contains(fixtureTickets, r[parse.FieldObjectID]) })))},
		{name: "acl/count_all_tickets", pol: "demo", profile: "analyst", target: "count_objects", args: m{"class_name": "Ticket"},
			want: wantNum("count", countOf(analystTickets(nil)))},
		{name: "acl/query_all_tickets", pol: "demo", profile: "analyst", target: "query_class",
			args: m{"class_name": "Ticket", "order": "objectId", "keys": []string{"status"}, "limit": 1000},
			want: wantIDs(analystTickets(nil))},
		{name: "acl/get_master_only", pol: "demo", profile: "analyst", target: "get_object", args: m{"class_name": "Ticket", "object_id": ticketMasterOnly},
			code: "not_found", msg: "Object not found: Ticket#" + ticketMasterOnly, detail: "object_not_found", twin: [2]string{ticketMasterOnly, missingTicket}},
		{name: "acl/get_objects_member", pol: "test", profile: "member", target: "get_objects", args: m{"class_name": "Ticket", "ids": fixtureTickets},
			// member reads no-ACL, public, org-acme and its own ticket.
			want: func(t *testing.T, e *env, out map[string]any) {
				found := keysOf(out["objects"].(map[string]any))
				if want := []string{ticketNoACL, ticketPublicRead, ticketOrg, ticketMember}; !slices.Equal(found, want) {
					t.Fatalf("found %v, want %v", found, want)
				}
				if want := e.truth(t, "Ticket", acme, entriesMember, func(r parse.Object) bool { return slices.Contains(fixtureTickets, r[parse.FieldObjectID]) }); !slices.Equal(found, want) {
					t.Fatalf("found %v, ground truth %v", found, want)
				}
				wantJSON(map[string]string{"missing": `["` + ticketSupport + `","` + ticketMasterOnly + `"]`, "found": "4", "requested": "6"})(t, e, out)
			}},
		{name: "acl/aggregate_group_status", pol: "demo", profile: "analyst", target: "aggregate",
			args: m{"class_name": "Ticket", "pipeline": []any{m{"$group": m{"_id": "$status", "n": m{"$sum": 1}}}, m{"$sort": m{"objectId": 1}}}},
			want: func(t *testing.T, e *env, out map[string]any) {
				counts := map[string]int{}
				for _, r := range e.all(t, "Ticket") {
					if orgOf(r) == acme && readable(r, entriesAnalyst...) {
						counts[r["status"].(string)]++
					}
				}
				var want []any
				for _, s := range keysOfInt(counts) {
					want = append(want, m{"objectId": s, "n": float64(counts[s])})
				}
				if d := cmp.Diff(asJSON(t, want), out["results"]); d != "" {
					t.Fatalf("groups (-want +got):\n%s", d)
				}
			}},
		{name: "acl/export_fixture_tickets", pol: "demo", profile: "analyst", target: "export_data",
			args: m{"class_name": "Ticket", "where": m{"objectId": m{"$in": fixtureTickets}}, "order": "objectId", "keys": []string{"objectId"}},
			want: wantJSON(map[string]string{"row_count": "4", "output": `"objectId\n` + ticketNoACL + `\n` + ticketPublicRead + `\n` + ticketOrg + `\n` + ticketSupport + `\n"`})},
		{name: "acl/resource_count_support", pol: "demo", profile: "support", kind: kindResource, target: "parse://Ticket/count",
			want: wantNum("count", func(t *testing.T, e *env) int {
				return len(e.truth(t, "Ticket", acme, entriesSupport, not(fieldIs("status", "closed"))))
			})},

		// ---- protected fields (CLP protectedFields) -----------------------
		// support holds neither Sales nor Manager: Customer.email and
		// Project.budget do not exist for it.
		{name: "protected/keys", pol: "demo", profile: "support", target: "query_class", args: m{"class_name": "Customer", "keys": []string{"name", "email"}},
			code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/where_probe", pol: "demo", profile: "support", target: "count_objects", args: m{"class_name": "Customer", "where": m{"email": m{"$regex": "^secret"}}},
			code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/order", pol: "demo", profile: "support", target: "query_class", args: m{"class_name": "Customer", "order": "-email"},
			code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/aggregate_group", pol: "demo", profile: "support", target: "aggregate", args: m{"class_name": "Customer", "pipeline": []any{m{"$group": m{"_id": "$email"}}}},
			code: "access_denied", twin: [2]string{"email", "zzzzz"}},
		{name: "protected/aggregate_project", pol: "demo", profile: "support", target: "aggregate", args: m{"class_name": "Project", "pipeline": []any{m{"$project": m{"budget": 1}}}},
			code: "access_denied", twin: [2]string{"budget", "zzzzzz"}},
		{name: "protected/distinct", pol: "demo", profile: "support", target: "distinct", args: m{"class_name": "Project", "field": "budget"},
			code: "access_denied", twin: [2]string{"budget", "zzzzzz"}},
		{name: "protected/include_customer", pol: "demo", profile: "support", target: "query_class",
			args: m{"class_name": "Ticket", "where": m{"objectId": ticketOrg}, "keys": []string{"customer"}, "include": []string{"customer"}},
			want: func(t *testing.T, e *env, out map[string]any) {
				// email and phone are protected; org and accountManager point
				// into Organization and _User, outside support's classes.
				raw := without(e.raw(t, "Customer", e.vars["ACME_CUSTOMER"]), "email", "phone", "org", "accountManager")
				raw["__type"], raw["className"] = "Object", "Customer"
				got := out["results"].([]any)[0].(map[string]any)["customer"]
				if d := cmp.Diff(asJSON(t, raw), got); d != "" {
					t.Fatalf("included customer (-want +got):\n%s", d)
				}
			}},
		{name: "protected/get_object_include_project", pol: "demo", profile: "support", target: "get_object",
			args: m{"class_name": "Ticket", "object_id": ticketOrg, "include": []string{"project"}},
			want: func(t *testing.T, e *env, out map[string]any) {
				// budget is protected; org, owner and members point into
				// Organization and _User, outside support's classes.
				raw := without(e.raw(t, "Project", projectWebsite), "budget", "org", "owner", "members")
				raw["__type"], raw["className"] = "Object", "Project"
				if d := cmp.Diff(asJSON(t, raw), out["object"].(map[string]any)["project"]); d != "" {
					t.Fatalf("included project (-want +got):\n%s", d)
				}
			}},
		{name: "protected/lookup_rows", pol: "demo", profile: "support", target: "aggregate",
			// the joined Project keeps to support's view: no budget, no
			// pointers into classes outside its class filter.
			args: m{"class_name": "Ticket", "pipeline": []any{
				m{"$match": m{"objectId": ticketOrg}},
				m{"$lookup": m{"from": "Project", "localField": "project", "foreignField": "_id", "as": "p"}},
				m{"$project": m{"p": 1}}}},
			want: lacks("budget", markBudget, `"owner"`, `"members"`, `"org"`)},
		{name: "protected/lookup_users", pol: "test", profile: "member", target: "aggregate",
			args: m{"class_name": "Ticket", "pipeline": []any{
				m{"$match": m{"objectId": ticketOrg}},
				m{"$lookup": m{"from": "_User", "localField": "assignee", "foreignField": "_id", "as": "u"}}}},
			want: lacks(`"email"`, "_hashed_password", "sessionToken", `"authData"`, `"tags"`, markTag)},
		{name: "protected/include_sub_key", pol: "demo", profile: "support", target: "query_class",
			// sub-keys of an included object are a projection: a protected
			// one is dropped exactly like one that does not exist.
			args: m{"class_name": "Ticket", "where": m{"objectId": ticketOrg}, "keys": []string{"project.name", "project.budget"}, "include": []string{"project"}},
			twin: [2]string{"budget", "zzzzzz"},
			want: func(t *testing.T, e *env, out map[string]any) {
				p := only(e.raw(t, "Project", projectWebsite), "name", "ACL") // the ACL comes with any keys
				p["__type"], p["className"] = "Object", "Project"
				if d := cmp.Diff(asJSON(t, p), out["results"].([]any)[0].(map[string]any)["project"]); d != "" {
					t.Fatalf("included project (-want +got):\n%s", d)
				}
			}},
		{name: "protected/inquery_where", pol: "demo", profile: "support", target: "count_objects",
			args: m{"class_name": "Ticket", "where": m{"project": m{"$inQuery": m{"className": "Project", "where": m{"budget": m{"$gt": 0}}}}}},
			code: "access_denied", twin: [2]string{"budget", "zzzzzz"}},
		{name: "protected/select_key", pol: "demo", profile: "support", target: "count_objects",
			args: m{"class_name": "Project", "where": m{"name": m{"$select": m{"query": m{"className": "Project"}, "key": "budget"}}}},
			code: "access_denied", twin: [2]string{"budget", "zzzzzz"}},
		{name: "protected/export_columns", pol: "test", profile: "member", target: "export_data", args: m{"class_name": "Project", "columns": []string{"name", "budget"}},
			code: "access_denied", twin: [2]string{"budget", "zzzzzz"}},
		{name: "protected/export_pointer_path", pol: "test", profile: "member", target: "export_data", args: m{"class_name": "Ticket", "columns": []string{"title", "project.budget"}},
			code: "access_denied", twin: [2]string{"budget", "zzzzzz"}},

		// ---- fields outside agent_fields (test policy, Ticket) -------------
		{name: "fields/keys", pol: "test", profile: "member", target: "query_class", args: m{"class_name": "Ticket", "keys": []string{"title", "tags"}},
			code: "access_denied", twin: [2]string{"tags", "zzzz"}},
		{name: "fields/where_probe", pol: "test", profile: "member", target: "count_objects", args: m{"class_name": "Ticket", "where": m{"escalated": true}},
			code: "access_denied", twin: [2]string{"escalated", "zzzzzzzzz"}},
		{name: "fields/order", pol: "test", profile: "member", target: "query_class", args: m{"class_name": "Ticket", "order": "-estimateHours"},
			code: "access_denied", twin: [2]string{"estimateHours", "zzzzzzzzzzzzz"}},
		{name: "fields/aggregate_group", pol: "test", profile: "member", target: "aggregate", args: m{"class_name": "Ticket", "pipeline": []any{m{"$group": m{"_id": "$escalated", "n": m{"$sum": 1}}}}},
			code: "access_denied", twin: [2]string{"escalated", "zzzzzzzzz"}},
		{name: "fields/aggregate_project", pol: "test", profile: "member", target: "aggregate", args: m{"class_name": "Ticket", "pipeline": []any{m{"$project": m{"title": 1, "tags": 1}}}},
			code: "access_denied", twin: [2]string{"tags", "zzzz"}},
		{name: "fields/include", pol: "test", profile: "member", target: "query_class", args: m{"class_name": "Ticket", "include": []string{"tags"}},
			code: "access_denied", twin: [2]string{"tags", "zzzz"}},
		{name: "fields/export_columns", pol: "test", profile: "member", target: "export_data", args: m{"class_name": "Ticket", "columns": []string{"title", "estimateHours"}},
			code: "access_denied", twin: [2]string{"estimateHours", "zzzzzzzzzzzzz"}},
		{name: "fields/row", pol: "test", profile: "member", target: "query_class", args: m{"class_name": "Ticket", "where": m{"objectId": ticketOrg}},
			// exactly the allowlisted fields (customer points into a hidden
			// class, so it goes too); tags and the other fields never.
			want: func(t *testing.T, e *env, out map[string]any) {
				raw := only(e.raw(t, "Ticket", ticketOrg), "ACL", "org", "project", "key", "number", "title", "description", "status", "priority", "type", "reporter", "assignee", "dueDate", "resolvedAt")
				if d := cmp.Diff(asJSON(t, []any{raw}), out["results"]); d != "" {
					t.Fatalf("row (-want +got):\n%s", d)
				}
			}},
		{name: "fields/write_unknown_and_valid", pol: "test", profile: "member", gates: allGates, target: "update_object",
			args: m{"class_name": "Ticket", "object_id": ticketOrg, "object": m{"title": "HALF-APPLIED", "tags": []string{"x"}}},
			code: "invalid_argument", msg: `unknown field "tags" on class Ticket`, twin: [2]string{"tags", "zzzz"}, unchanged: []string{"Ticket#" + ticketOrg}},

		// ---- join_fields ----------------------------------------------------
		{name: "join/include_project", pol: "test", profile: "member", target: "query_class",
			args: m{"class_name": "Ticket", "where": m{"objectId": ticketOrg}, "keys": []string{"title", "project"}, "include": []string{"project"}},
			want: func(t *testing.T, e *env, out map[string]any) {
				p := only(e.raw(t, "Project", projectWebsite), "name", "key", "status", "ACL", "members") // the ACL and Relation markers come with any keys
				p["__type"], p["className"] = "Object", "Project"
				if d := cmp.Diff(asJSON(t, p), out["results"].([]any)[0].(map[string]any)["project"]); d != "" {
					t.Fatalf("included project (-want +got):\n%s", d)
				}
				// every visible Project field but the join fields; budget is
				// protected for member, so it is not even named.
				wantJSON(map[string]string{"truncated_include_fields": `{"project":["archived","color","description","dueDate","logo","members","org","owner","startDate","tags"]}`})(t, e, out)
			}},

		// ---- hidden classes (test policy: Customer except_master, Order always)
		{name: "hidden/get_schema", pol: "test", profile: "member", target: "get_schema", args: m{"class_name": "Order"},
			code: "access_denied", msg: `class "Order" was not found (or is not accessible to this agent)`, detail: "class_not_found", twin: [2]string{"Order", "Ghost"}},
		{name: "hidden/query_except_master", pol: "test", profile: "member", target: "query_class", args: m{"class_name": "Customer", "where": m{"name": "x"}},
			code: "access_denied", twin: [2]string{"Customer", "Ghostess"}},
		{name: "hidden/count_master_always", pol: "test", profile: "root", target: "count_objects", args: m{"class_name": "Order"},
			code: "access_denied", twin: [2]string{"Order", "Ghost"}},
		{name: "hidden/master_sees_except_master", pol: "test", profile: "root", target: "count_objects", args: m{"class_name": "Customer"},
			want: wantNum("count", func(t *testing.T, e *env) int { return len(e.all(t, "Customer")) })},
		// Parse's system classes are hidden from the master key too unless
		// the policy unhides them; the internal fields are gone for it too.
		{name: "hidden/session_from_master", pol: "test", profile: "root", target: "query_class", args: m{"class_name": "_Session"},
			code: "access_denied", twin: [2]string{"_Session", "_Ghostly"}},
		{name: "hidden/job_status_from_master", pol: "test", profile: "root", target: "get_schema", args: m{"class_name": "_JobStatus"},
			code: "access_denied", twin: [2]string{"_JobStatus", "_Ghostly00"}},
		{name: "internal/authdata_from_master", pol: "test", profile: "root", target: "query_class", args: m{"class_name": "_User", "keys": []string{"authData"}},
			code: "access_denied", twin: [2]string{"authData", "zzzzzzzz"}},
		{name: "internal/master_user_rows", pol: "test", profile: "root", target: "query_class", args: m{"class_name": "_User", "limit": 1000},
			want: lacks(`"authData"`, "_hashed_password", "sessionToken", `"password"`)},

		// ---- class-level permissions as Parse Server reads them ----------------
		// Partial's stored CLP names get and create only: find and count are
		// master-key only (Parse Server's adapters fill them with {}).
		{name: "clp/partial_find_refused", pol: "test", profile: "member", target: "query_class", args: m{"class_name": "Partial"},
			code: "permission_denied", detail: "clp", msg: "class-level permissions of Partial do not allow find for this agent"},
		{name: "clp/partial_count_refused", pol: "test", profile: "norole", target: "count_objects", args: m{"class_name": "Partial"},
			code: "permission_denied", detail: "clp"},
		{name: "clp/partial_get_allowed", pol: "test", profile: "member", target: "get_object", args: m{"class_name": "Partial", "object_id": "@PARTIAL@"},
			want: func(t *testing.T, e *env, out map[string]any) {
				if o := out["object"].(map[string]any); o["label"] != "partial" || o["objectId"] != e.vars["PARTIAL"] {
					t.Fatalf("object %v", o)
				}
			}},
		{name: "clp/partial_master_finds", pol: "test", profile: "root", target: "count_objects", args: m{"class_name": "Partial"},
			want: wantNum("count", func(*testing.T, *env) int { return 1 })},
		{name: "hidden/all_schemas", pol: "test", profile: "member", target: "get_all_schemas", args: m{},
			want: func(t *testing.T, e *env, out map[string]any) {
				var custom, builtIn []string
				for _, c := range out["custom"].([]any) {
					custom = append(custom, c.(map[string]any)["name"].(string))
				}
				for _, c := range out["built_in"].([]any) {
					builtIn = append(builtIn, c.(map[string]any)["name"].(string))
				}
				if want := []string{"Comment", "Organization", "Partial", "Product", "Project", "Ticket", "Vault"}; !slices.Equal(custom, want) {
					t.Fatalf("custom classes %v, want %v", custom, want)
				}
				if want := []string{"_Role", "_User"}; !slices.Equal(builtIn, want) {
					t.Fatalf("built-in classes %v, want %v", builtIn, want)
				}
			}},
		{name: "hidden/complete", pol: "test", profile: "member", kind: kindComplete, target: "parse://{className}/count", args: "c",
			want: wantJSON(map[string]string{"values": `["Comment"]`})},
		{name: "hidden/complete_order", pol: "test", profile: "member", kind: kindComplete, target: "parse://{className}/schema", args: "Or",
			want: wantJSON(map[string]string{"values": `["Organization"]`})},
		{name: "hidden/resources_list", pol: "test", profile: "member", kind: kindRes,
			want: wantJSON(map[string]string{"classes": `["Comment","Organization","Partial","Product","Project","Ticket","Vault","_Role","_User"]`})},
		{name: "hidden/prompt", pol: "test", profile: "member", kind: kindPrompt, target: "class_overview", args: map[string]string{"class_name": "Order"},
			code: errRPC, twin: [2]string{"Order", "Ghost"}},
		{name: "hidden/resource_count", pol: "test", profile: "member", kind: kindResource, target: "parse://Order/count",
			code: errRPC, twin: [2]string{"Order", "Ghost"}},
		{name: "hidden/select", pol: "test", profile: "member", target: "count_objects", args: m{"class_name": "Ticket", "where": m{"title": sel("Order", "number")}},
			code: "invalid_query", twin: [2]string{"Order", "Ghost"}},
		{name: "hidden/inquery", pol: "test", profile: "member", target: "query_class", args: m{"class_name": "Ticket", "where": m{"project": m{"$inQuery": m{"className": "Customer"}}}},
			code: "invalid_query", twin: [2]string{"Customer", "Ghostess"}},
		{name: "hidden/lookup", pol: "test", profile: "member", target: "aggregate",
			args: m{"class_name": "Ticket", "pipeline": []any{m{"$lookup": m{"from": "Order", "localField": "objectId", "foreignField": "_id", "as": "o"}}}},
			code: "invalid_query", twin: [2]string{"Order", "Ghost"}},
		{name: "hidden/pointer_field_where", pol: "test", profile: "member", target: "count_objects", args: m{"class_name": "Ticket", "where": m{"customer": m{"$exists": true}}},
			code: "access_denied", twin: [2]string{"customer", "zzzzzzzz"}},
		{name: "hidden/pointer_field_include", pol: "test", profile: "member", target: "get_object", args: m{"class_name": "Ticket", "object_id": ticketOrg, "include": []string{"customer"}},
			code: "access_denied", twin: [2]string{"customer", "zzzzzzzz"}},
		{name: "hidden/pointer_field_schema", pol: "test", profile: "member", target: "get_schema", args: m{"class_name": "Ticket"},
			want: func(t *testing.T, e *env, out map[string]any) {
				var names []string
				for _, f := range out["fields"].([]any) {
					names = append(names, f.(map[string]any)["name"].(string))
				}
				slices.Sort(names)
				want := []string{"ACL", "assignee", "createdAt", "description", "dueDate", "key", "number", "objectId", "org", "priority", "project", "reporter", "resolvedAt", "status", "title", "type", "updatedAt"}
				if !slices.Equal(names, want) {
					t.Fatalf("fields %v, want %v", names, want)
				}
				// nor does the rest of the answer (agent_fields) name it
				lacks(`"customer"`)(t, e, out)
			}},
		{name: "protected/schema_metadata", pol: "test", profile: "member", target: "get_schema", args: m{"class_name": "Project"},
			// budget is in the operator's agent_fields, but protected for member
			want: lacks("budget")},
		{name: "protected/schema_index", pol: "test", profile: "member", target: "get_schema", args: m{"class_name": "Vault"},
			// secretCode is protected; an index, the canonical filter and
			// large_fields name it.
			want: both(lacks("secretCode", "vault_code_1"), func(t *testing.T, e *env, out map[string]any) {
				wantJSON(map[string]string{"indexes": `[{"name":"_id_","keys":{"objectId":1}},{"name":"vault_label_1","keys":{"label":1}}]`})(t, e, out)
			})},
		{name: "protected/resource_schema_index", pol: "demo", profile: "analyst", kind: kindResource, target: "parse://Vault/schema",
			want: lacks("secretCode", "vault_code_1")},

		{name: "internal/session_token_key", pol: "test", profile: "member", target: "query_class", args: m{"class_name": "_User", "keys": []string{"username", "sessionToken"}},
			code: "access_denied", twin: [2]string{"sessionToken", "zzzzzzzzzzzz"}},

		// ---- class filter (classes: {except: [Product]}) ---------------------
		{name: "classfilter/get_schema", pol: "test", profile: "no-product", target: "get_schema", args: m{"class_name": "Product"},
			code: "access_denied", msg: `class "Product" was not found (or is not accessible to this agent)`, twin: [2]string{"Product", "Ghostly"}},
		{name: "classfilter/select", pol: "test", profile: "no-product", target: "count_objects", args: m{"class_name": "Ticket", "where": m{"title": sel("Product", "name")}},
			code: "invalid_query", twin: [2]string{"Product", "Ghostly"}},
		{name: "classfilter/inquery", pol: "test", profile: "no-product", target: "query_class",
			args: m{"class_name": "Ticket", "where": m{"project": m{"$inQuery": m{"className": "Product"}}}},
			code: "invalid_query", twin: [2]string{"Product", "Ghostly"}},
		{name: "classfilter/all_schemas", pol: "test", profile: "no-product", target: "get_all_schemas", args: m{"prefix": "P"},
			want: func(t *testing.T, e *env, out map[string]any) {
				var custom []string
				for _, c := range out["custom"].([]any) {
					custom = append(custom, c.(map[string]any)["name"].(string))
				}
				if !slices.Equal(custom, []string{"Partial", "Project"}) {
					t.Fatalf("classes starting with P: %v", custom)
				}
			}},
		{name: "classfilter/lookup", pol: "test", profile: "no-product", target: "aggregate",
			args: m{"class_name": "Ticket", "pipeline": []any{m{"$lookup": m{"from": "Product", "localField": "objectId", "foreignField": "_id", "as": "p"}}, m{"$count": "n"}}},
			code: "invalid_query", twin: [2]string{"Product", "Ghostly"}},
		{name: "classfilter/complete", pol: "test", profile: "no-product", kind: kindComplete, target: "parse://{className}/samples", args: "Pro",
			want: wantJSON(map[string]string{"values": `["Project"]`})},
		{name: "classfilter/resource_samples", pol: "test", profile: "no-product", kind: kindResource, target: "parse://Product/samples",
			code: errRPC, twin: [2]string{"Product", "Ghostly"}},
		{name: "classfilter/schema_tenant_field", pol: "demo", profile: "support", target: "get_schema", args: m{"class_name": "Ticket"},
			// org points to Organization, outside support's classes: the
			// field does not exist for support, not even as the tenant field.
			want: lacks(`"org"`, "Organization")},
		{name: "classfilter/export", pol: "test", profile: "no-product", target: "export_data", args: m{"class_name": "Product"},
			code: "access_denied", twin: [2]string{"Product", "Ghostly"}},

		// ---- tenant escape (demo analyst, bound to Acme) --------------------
		{name: "tenant/where_other_org", pol: "demo", profile: "analyst", target: "query_class", args: m{"class_name": "Ticket", "where": m{"org": orgPtr(globex)}},
			code: "access_denied", msg: spoof("Ticket.org"), detail: "tenant_spoof"},
		{name: "tenant/where_own_org", pol: "demo", profile: "analyst", target: "count_objects", args: m{"class_name": "Ticket", "where": m{"org": orgPtr(acme)}},
			want: wantNum("count", countOf(analystTickets(nil)))},
		{name: "tenant/or_other_org", pol: "demo", profile: "analyst", target: "count_objects",
			args: m{"class_name": "Ticket", "where": m{"$or": []any{m{"org": orgPtr(acme)}, m{"org": orgPtr(globex)}}}},
			code: "access_denied", msg: spoof("Ticket.org"), detail: "tenant_spoof"},
		{name: "tenant/in_two_orgs", pol: "demo", profile: "analyst", target: "query_class",
			args: m{"class_name": "Ticket", "where": m{"org": m{"$in": []any{orgPtr(acme), orgPtr(globex)}}}},
			code: "access_denied", msg: spoof("Ticket.org"), detail: "tenant_spoof"},
		{name: "tenant/ne_own_org", pol: "demo", profile: "analyst", target: "count_objects", args: m{"class_name": "Ticket", "where": m{"org": m{"$ne": orgPtr(acme)}}},
			code: "access_denied", msg: spoof("Ticket.org"), detail: "tenant_spoof"},
		{name: "tenant/inquery_other_org", pol: "demo", profile: "analyst", target: "query_class",
			args: m{"class_name": "Ticket", "where": m{"project": m{"$inQuery": m{"className": "Project", "where": m{"org": orgPtr(globex)}}}}},
			code: "access_denied", msg: spoof("Project.org"), detail: "tenant_spoof"},
		{name: "tenant/aggregate_match_other_org", pol: "demo", profile: "analyst", target: "aggregate",
			args: m{"class_name": "Ticket", "pipeline": []any{m{"$match": m{"org": orgPtr(globex)}}, m{"$count": "n"}}},
			code: "access_denied", msg: spoof("Ticket.org"), detail: "tenant_spoof"},
		{name: "tenant/lookup_self_join", pol: "demo", profile: "analyst", target: "aggregate",
			// every open ticket joined to every open ticket: n² rows when
			// the joined side keeps to the tenant (and the ACL).
			args: m{"class_name": "Ticket", "pipeline": []any{
				m{"$match": m{"status": "open"}},
				m{"$lookup": m{"from": "Ticket", "localField": "status", "foreignField": "status", "as": "same"}},
				m{"$unwind": "$same"}, m{"$count": "n"}}},
			want: func(t *testing.T, e *env, out map[string]any) {
				n := len(e.truth(t, "Ticket", acme, entriesAnalyst, open))
				all := len(e.truth(t, "Ticket", "", entriesAnalyst, open))
				if all == n {
					t.Fatal("the dataset has no open ticket of another tenant: the case proves nothing")
				}
				wantJSON(map[string]string{"results": `[{"n":` + itoa(n*n) + `}]`})(t, e, out)
			}},
		{name: "tenant/lookup_organization", pol: "demo", profile: "analyst", target: "aggregate",
			args: m{"class_name": "Project", "pipeline": []any{
				m{"$lookup": m{"from": "Organization", "localField": "org", "foreignField": "_id", "as": "o"}},
				m{"$unwind": "$o"}, m{"$group": m{"_id": "$o.name", "n": m{"$sum": 1}}}},
				"apply_canonical_filter": false},
			want: func(t *testing.T, e *env, out map[string]any) {
				n := len(e.truth(t, "Project", acme, entriesAnalyst, nil))
				wantJSON(map[string]string{"results": `[{"objectId":"Acme Corp","n":` + itoa(n) + `}]`})(t, e, out)
			}},
		{name: "tenant/relatedTo_other_project", pol: "demo", profile: "analyst", target: "query_class",
			args: m{"class_name": "_User", "where": m{"$relatedTo": m{"object": pointer("Project", "@GLOBEX_PROJECT@"), "key": "members"}}},
			want: func(t *testing.T, e *env, out map[string]any) {
				members, err := e.st.RelatedIDs(context.Background(), "Project", "members", e.vars["GLOBEX_PROJECT"])
				if err != nil || len(members) == 0 {
					t.Fatalf("the Globex project has no members (%v): the case proves nothing", err)
				}
				wantIDs(func(*testing.T, *env) []string { return nil })(t, e, out)
			}},
		{name: "tenant/get_other_tenant_ticket", pol: "demo", profile: "analyst", target: "get_object", args: m{"class_name": "Ticket", "object_id": "@GLOBEX_TICKET@"},
			code: "not_found", detail: "object_not_found", twin: [2]string{"@GLOBEX_TICKET@", missingTicket}},
		{name: "tenant/get_objects_mixed", pol: "demo", profile: "analyst", target: "get_objects", args: m{"class_name": "Ticket", "ids": []string{ticketOrg, "@GLOBEX_TICKET@"}},
			want: wantJSON(map[string]string{"missing": `["@GLOBEX_TICKET@"]`, "found": "1"})},
		{name: "tenant/organizations", pol: "demo", profile: "analyst", target: "query_class", args: m{"class_name": "Organization", "keys": []string{"name"}},
			want: wantIDs(func(*testing.T, *env) []string { return []string{acme} })},
		{name: "tenant/get_other_organization", pol: "demo", profile: "analyst", target: "get_object", args: m{"class_name": "Organization", "object_id": globex},
			code: "not_found", twin: [2]string{globex, "OZZZZZZZZZ"}},
		{name: "tenant/export_count", pol: "demo", profile: "analyst", target: "export_data", args: m{"class_name": "Ticket", "keys": []string{"objectId"}, "limit": 10000},
			want: wantNum("row_count", countOf(analystTickets(nil)))},
		{name: "tenant/update_other_tenant", pol: "test", profile: "member", gates: allGates, target: "update_object",
			args: m{"class_name": "Ticket", "object_id": "@GLOBEX_OPEN_TICKET@", "object": m{"title": "PWNED"}},
			code: "not_found", msg: "Object not found: Ticket#@GLOBEX_OPEN_TICKET@", twin: [2]string{"@GLOBEX_OPEN_TICKET@", missingTicket},
			unchanged: []string{"Ticket#@GLOBEX_OPEN_TICKET@"}},
		{name: "tenant/method_other_tenant", pol: "demo", profile: "support", gates: agent.Gates{WriteTools: true}, target: "call_method",
			args: m{"class_name": "Ticket", "method_name": "close", "object_id": "@GLOBEX_OPEN_TICKET@"},
			code: "not_found", twin: [2]string{"@GLOBEX_OPEN_TICKET@", missingTicket}, unchanged: []string{"Ticket#@GLOBEX_OPEN_TICKET@"}},
		{name: "tenant/create_spoof", pol: "test", profile: "member", gates: allGates, target: "create_object",
			args: m{"class_name": "Ticket", "object": m{"title": "SPOOFED-CREATE", "org": orgPtr(globex)}},
			code: "access_denied", msg: "Ticket.org must be this agent's tenant", detail: "tenant_spoof",
			after: func(t *testing.T, e *env) {
				for _, r := range e.all(t, "Ticket") {
					if r["title"] == "SPOOFED-CREATE" {
						t.Fatalf("a refused create wrote %v", r)
					}
				}
			}},
		{name: "tenant/create_spoof_dry_run", pol: "test", profile: "member", gates: allGates, target: "create_object",
			args: m{"class_name": "Ticket", "object": m{"title": "SPOOFED-CREATE", "org": orgPtr(globex)}, "dry_run": true},
			code: "access_denied", msg: "Ticket.org must be this agent's tenant", detail: "tenant_spoof"},
		{name: "tenant/update_spoof", pol: "test", profile: "member", gates: allGates, target: "update_object",
			args: m{"class_name": "Ticket", "object_id": ticketOrg, "object": m{"org": orgPtr(globex)}},
			code: "access_denied", msg: "Ticket.org must be this agent's tenant", detail: "tenant_spoof", unchanged: []string{"Ticket#" + ticketOrg}},

		{name: "tenant/get_objects_organizations", pol: "demo", profile: "analyst", target: "get_objects", args: m{"class_name": "Organization", "ids": []string{acme, globex}},
			want: func(t *testing.T, e *env, out map[string]any) {
				wantJSON(map[string]string{"missing": `["` + globex + `"]`, "found": "1", "requested": "2"})(t, e, out)
				if got := keysOf(out["objects"].(map[string]any)); !slices.Equal(got, []string{acme}) {
					t.Fatalf("objects %v", got)
				}
			}},
		{name: "tenant/distinct_org", pol: "demo", profile: "analyst", target: "distinct", args: m{"class_name": "Ticket", "field": "org"},
			want: wantJSON(map[string]string{"values": `[{"__type":"Pointer","className":"Organization","objectId":"` + acme + `"}]`})},
		{name: "tenant/count_orders", pol: "demo", profile: "analyst", target: "count_objects", args: m{"class_name": "Order"},
			want: wantNum("count", func(t *testing.T, e *env) int { return len(e.truth(t, "Order", acme, entriesAnalyst, nil)) })},
		{name: "tenant/count_comments", pol: "demo", profile: "analyst", kind: kindResource, target: "parse://Comment/count",
			want: wantNum("count", func(t *testing.T, e *env) int { return len(e.truth(t, "Comment", acme, entriesAnalyst, nil)) })},
		{name: "tenant/include_cross_tenant_pointer", pol: "demo", profile: "analyst", target: "query_class",
			args: m{"class_name": "Comment", "where": m{"objectId": "@CROSS_COMMENT@"}, "keys": []string{"ticket"}, "include": []string{"ticket"}},
			want: func(t *testing.T, e *env, out map[string]any) {
				// As Parse Server drops an include it cannot read: not even
				// the id is left.
				if got, has := out["results"].([]any)[0].(map[string]any)["ticket"]; has {
					t.Fatalf("another tenant's ticket must be removed from the row, got %v", got)
				}
			}},
		{name: "tenant/export_cross_tenant_pointer", pol: "demo", profile: "analyst", target: "export_data",
			args: m{"class_name": "Comment", "where": m{"objectId": "@CROSS_COMMENT@"}, "columns": []string{"objectId", "ticket.title"}},
			want: wantJSON(map[string]string{"row_count": "1", "output": `"objectId,ticket.title\n@CROSS_COMMENT@,\n"`})},
		{name: "tenant/lookup_cross_tenant_pointer", pol: "demo", profile: "analyst", target: "aggregate",
			args: m{"class_name": "Comment", "pipeline": []any{
				m{"$match": m{"objectId": "@CROSS_COMMENT@"}},
				m{"$lookup": m{"from": "Ticket", "localField": "ticket", "foreignField": "_id", "as": "t"}},
				m{"$unwind": "$t"}, m{"$count": "n"}}},
			want: wantJSON(map[string]string{"results": `[]`})},
		{name: "tenant/inquery_cross_tenant_pointer", pol: "demo", profile: "analyst", target: "count_objects",
			args: m{"class_name": "Comment", "where": m{"ticket": m{"$inQuery": m{"className": "Ticket", "where": m{"title": markGlobex}}}}},
			want: wantJSON(map[string]string{"count": "0"})},
		// ---- canonical filter (Project: archived != true) -------------------
		{name: "canonical/count_default", pol: "demo", profile: "analyst", target: "count_objects", args: m{"class_name": "Project"},
			want: wantNum("count", func(t *testing.T, e *env) int { return len(e.truth(t, "Project", acme, entriesAnalyst, notArchived)) })},
		{name: "canonical/count_opt_out", pol: "demo", profile: "analyst", target: "count_objects", args: m{"class_name": "Project", "apply_canonical_filter": false},
			want: func(t *testing.T, e *env, out map[string]any) {
				all, valid := e.truth(t, "Project", acme, entriesAnalyst, nil), e.truth(t, "Project", acme, entriesAnalyst, notArchived)
				if len(all) == len(valid) {
					t.Fatal("no archived project: the case proves nothing")
				}
				wantNum("count", func(*testing.T, *env) int { return len(all) })(t, e, out)
			}},
		{name: "canonical/query_opt_out", pol: "demo", profile: "analyst", target: "query_class",
			args: m{"class_name": "Project", "apply_canonical_filter": false, "order": "objectId", "keys": []string{"name"}},
			want: both(wantIDs(func(t *testing.T, e *env) []string { return e.truth(t, "Project", acme, entriesAnalyst, nil) }),
				wantJSON(map[string]string{"canonical_filter_applied": "false"}))},
		{name: "canonical/get_by_id", pol: "demo", profile: "analyst", target: "get_object", args: m{"class_name": "Project", "object_id": "@ARCHIVED_PROJECT@"},
			want: func(t *testing.T, e *env, out map[string]any) {
				if d := cmp.Diff(asJSON(t, e.raw(t, "Project", e.vars["ARCHIVED_PROJECT"])), out["object"]); d != "" {
					t.Fatalf("archived project by id (-want +got):\n%s", d)
				}
			}},

		// ---- per-agent filters ------------------------------------------------
		{name: "filter/get_filtered_row", pol: "demo", profile: "support", target: "get_object", args: m{"class_name": "Ticket", "object_id": ticketPublicRead},
			code: "not_found", msg: "Object not found: Ticket#" + ticketPublicRead, twin: [2]string{ticketPublicRead, missingTicket}},
		{name: "filter/default_count", pol: "test", profile: "filtered", target: "count_objects", args: m{"class_name": "Ticket"},
			want: wantNum("count", countOf(analystTickets(open)))},
		{name: "filter/default_get", pol: "test", profile: "filtered", target: "get_object", args: m{"class_name": "Ticket", "object_id": ticketPublicRead},
			code: "not_found", twin: [2]string{ticketPublicRead, missingTicket}},
		{name: "filter/default_other_class", pol: "test", profile: "filtered", target: "count_objects", args: m{"class_name": "Project", "apply_canonical_filter": false},
			want: wantNum("count", func(t *testing.T, e *env) int {
				return len(e.truth(t, "Project", acme, entriesAnalyst, fieldIs("status", "active")))
			})},
		{name: "filter/own_entry_without_default", pol: "test", profile: "filtered", target: "count_objects", args: m{"class_name": "Comment"},
			// Comment has no status: its own entry applies alone.
			want: wantNum("count", func(t *testing.T, e *env) int {
				return len(e.truth(t, "Comment", acme, entriesAnalyst, func(r parse.Object) bool { n, _ := r["likes"].(float64); return n >= 1 }))
			})},

		{name: "filter/update_filtered_row", pol: "demo", profile: "support", gates: allGates, target: "update_object",
			// support may write the row by its ACL (org-acme), not through its filter.
			args: m{"class_name": "Ticket", "object_id": ticketPublicRead, "object": m{"title": "PWNED"}},
			code: "not_found", msg: "Object not found: Ticket#" + ticketPublicRead, twin: [2]string{ticketPublicRead, missingTicket},
			unchanged: []string{"Ticket#" + ticketPublicRead}},
		{name: "filter/include_filtered_row", pol: "demo", profile: "support", target: "query_class",
			args: m{"class_name": "Comment", "where": m{"objectId": "@CLOSED_COMMENT@"}, "keys": []string{"ticket"}, "include": []string{"ticket"}},
			want: func(t *testing.T, e *env, out map[string]any) {
				if got, has := out["results"].([]any)[0].(map[string]any)["ticket"]; has {
					t.Fatalf("a ticket the filter hides must be removed from the row, got %v", got)
				}
			}},
		{name: "filter/inquery_applies_filter", pol: "demo", profile: "support", target: "count_objects",
			args: m{"class_name": "Comment", "where": m{"ticket": m{"$inQuery": m{"className": "Ticket", "where": m{"status": "closed"}}}}},
			want: both(commentsOnClosedTickets, wantJSON(map[string]string{"count": "0"}))},
		{name: "filter/lookup_applies_filter", pol: "demo", profile: "support", target: "aggregate",
			args: m{"class_name": "Comment", "pipeline": []any{
				m{"$lookup": m{"from": "Ticket", "localField": "ticket", "foreignField": "_id", "as": "t"}},
				m{"$unwind": "$t"}, m{"$match": m{"t.status": "closed"}}, m{"$count": "n"}}},
			want: both(commentsOnClosedTickets, wantJSON(map[string]string{"results": `[]`}))},

		// ---- sub-agents ---------------------------------------------------------
		{name: "sub/valid_child_subset", pol: "test", profile: "triage", target: "query_class",
			args: m{"class_name": "Ticket", "order": "objectId", "keys": []string{"priority"}, "limit": 1000},
			want: wantIDs(analystTickets(func(r parse.Object) bool { p, _ := r["priority"].(float64); return p <= 2 }))},
		{name: "sub/child_tools_list", pol: "test", profile: "triage", kind: kindList,
			want: wantJSON(map[string]string{"tools": `["count_objects","get_object","query_class"]`})},
		{name: "sub/child_cannot_widen_tools", pol: "test", profile: "triage", target: "export_data", args: m{"class_name": "Ticket"},
			code: "tool_filtered", msg: "tool export_data is not available to this agent", detail: "tool_filtered"},
		{name: "sub/child_cannot_widen_classes", pol: "test", profile: "triage", target: "query_class", args: m{"class_name": "Comment"},
			code: "access_denied", twin: [2]string{"Comment", "Ghostly"}},
		{name: "sub/child_cannot_widen_identity", pol: "test", profile: "usurper", target: "count_objects", args: m{"class_name": "Ticket"},
			code: errRPC, msg: "Internal error",
			after: func(t *testing.T, e *env) {
				_, err := e.testPol.Agent(context.Background(), "usurper", e.st, nil)
				if err == nil || !strings.Contains(err.Error(), `policy: agent profile "usurper": sub-agent identity holds "role:Admin", which its parent does not`) {
					t.Fatalf("building usurper: %v", err)
				}
			}},

		// ---- operator gates -----------------------------------------------------
		{name: "gate/create_object", pol: "demo", profile: "support", target: "create_object", args: m{"class_name": "Ticket", "object": m{"title": "GATED"}},
			code: "access_denied", detail: "env_gate", msg: "tool create_object is disabled by the operator. Required: PARSEMCP_ALLOW_WRITE_TOOLS=true AND PARSEMCP_ALLOW_RAW_CRUD=true." + crudHint},
		{name: "gate/update_object_write_tools_only", pol: "demo", profile: "support", gates: agent.Gates{WriteTools: true}, target: "update_object",
			args: m{"class_name": "Ticket", "object_id": ticketOrg, "object": m{"title": "GATED"}}, unchanged: []string{"Ticket#" + ticketOrg},
			code: "access_denied", detail: "env_gate", msg: "tool update_object is disabled by the operator. Required: PARSEMCP_ALLOW_RAW_CRUD=true." + crudHint},
		{name: "gate/delete_object_raw_crud_only", pol: "demo", profile: "support", gates: agent.Gates{RawCRUD: true}, target: "delete_object",
			args: m{"class_name": "Ticket", "object_id": ticketOrg}, unchanged: []string{"Ticket#" + ticketOrg},
			code: "access_denied", detail: "env_gate", msg: "tool delete_object is disabled by the operator. Required: PARSEMCP_ALLOW_WRITE_TOOLS=true." + crudHint},
		{name: "gate/create_class", pol: "demo", profile: "admin", target: "create_class", args: m{"class_name": "Gadget"},
			code: "access_denied", detail: "env_gate", msg: "tool create_class is disabled by the operator. Required: PARSEMCP_ALLOW_SCHEMA_OPS=true AND PARSEMCP_ALLOW_RAW_SCHEMA=true.",
			after: noClass("Gadget")},
		{name: "gate/delete_class_schema_ops_only", pol: "demo", profile: "admin", gates: agent.Gates{SchemaOps: true}, target: "delete_class", args: m{"class_name": "Product"},
			code: "access_denied", detail: "env_gate", msg: "tool delete_class is disabled by the operator. Required: PARSEMCP_ALLOW_RAW_SCHEMA=true."},
		{name: "gate/call_write_method", pol: "demo", profile: "support", target: "call_method",
			args: m{"class_name": "Ticket", "method_name": "close", "object_id": ticketOrg}, unchanged: []string{"Ticket#" + ticketOrg},
			code: "access_denied", detail: "env_gate", msg: "method Ticket.close is disabled by the operator. Required: PARSEMCP_ALLOW_WRITE_TOOLS=true."},
		{name: "gate/call_admin_method", pol: "demo", profile: "admin", gates: agent.Gates{WriteTools: true, RawCRUD: true}, target: "call_method",
			args: m{"class_name": "Project", "method_name": "archive", "object_id": projectWebsite}, unchanged: []string{"Project#" + projectWebsite},
			code: "access_denied", detail: "env_gate", msg: "method Project.archive is disabled by the operator. Required: PARSEMCP_ALLOW_SCHEMA_OPS=true."},

		// ---- permission tiers ---------------------------------------------------
		{name: "tier/readonly_create_object", pol: "demo", profile: "analyst", gates: allGates, target: "create_object", args: m{"class_name": "Ticket", "object": m{"title": "TIER"}},
			code: "permission_denied", detail: "permission_tier", msg: "tool create_object needs write permission; this agent is readonly"},
		{name: "tier/readonly_write_method", pol: "demo", profile: "analyst", gates: allGates, target: "call_method",
			args: m{"class_name": "Ticket", "method_name": "close", "object_id": ticketOrg}, unchanged: []string{"Ticket#" + ticketOrg},
			code: "permission_denied", detail: "permission_tier", msg: "method Ticket.close needs write permission; this agent is readonly"},
		{name: "tier/write_admin_method", pol: "demo", profile: "support", gates: allGates, target: "call_method",
			args: m{"class_name": "Project", "method_name": "archive", "object_id": projectWebsite}, unchanged: []string{"Project#" + projectWebsite},
			code: "permission_denied", detail: "permission_tier", msg: "method Project.archive needs admin permission; this agent is write"},

		// ---- a write's Pointers name objects the agent can read ------------------
		// A Pointer to an object the agent could not read (another tenant's,
		// one its filter hides, one its ACL hides, a missing one) is refused
		// like a get of it, and nothing is written.
		{name: "wptr/method_cross_tenant_ticket", pol: "demo", profile: "support", gates: agent.Gates{WriteTools: true}, target: "call_method",
			args: m{"class_name": "Comment", "method_name": "add", "arguments": m{"ticket": "@GLOBEX_TICKET@", "body": "PTR-X-TENANT"}},
			code: "not_found", detail: "object_not_found", msg: `field "ticket": Object not found: Ticket#@GLOBEX_TICKET@`,
			twin: [2]string{"@GLOBEX_TICKET@", missingTicket}, after: noRowWith("Comment", "body", "PTR-X-TENANT")},
		{name: "wptr/method_filter_hidden_ticket", pol: "demo", profile: "support", gates: agent.Gates{WriteTools: true}, target: "call_method",
			// readable by its ACL (public read), closed: support's filter hides it.
			args: m{"class_name": "Comment", "method_name": "add", "arguments": m{"ticket": ticketPublicRead, "body": "PTR-FILTERED"}},
			code: "not_found", msg: `field "ticket": Object not found: Ticket#` + ticketPublicRead,
			twin: [2]string{ticketPublicRead, missingTicket}, after: noRowWith("Comment", "body", "PTR-FILTERED")},
		{name: "wptr/method_missing_ticket", pol: "demo", profile: "support", gates: agent.Gates{WriteTools: true}, target: "call_method",
			args: m{"class_name": "Comment", "method_name": "add", "arguments": m{"ticket": missingTicket, "body": "PTR-MISSING"}},
			code: "not_found", msg: `field "ticket": Object not found: Ticket#` + missingTicket, after: noRowWith("Comment", "body", "PTR-MISSING")},
		{name: "wptr/create_acl_hidden_ticket", pol: "test", profile: "member", gates: allGates, target: "create_object",
			// an Acme ticket only role Admin may read.
			args: m{"class_name": "Comment", "object": m{"ticket": pointer("Ticket", "@ADMIN_ONLY_TICKET@"), "body": "PTR-ACL"}},
			code: "not_found", twin: [2]string{"@ADMIN_ONLY_TICKET@", missingTicket}, after: noRowWith("Comment", "body", "PTR-ACL")},
		{name: "wptr/create_cross_tenant_project", pol: "test", profile: "member", gates: allGates, target: "create_object",
			args: m{"class_name": "Ticket", "object": m{"title": "PTR-X-PROJECT", "project": pointer("Project", "@GLOBEX_PROJECT@")}},
			code: "not_found", msg: `field "project": Object not found: Project#@GLOBEX_PROJECT@`,
			twin: [2]string{"@GLOBEX_PROJECT@", "PZZZZZZZZZ"}, after: noRowWith("Ticket", "title", "PTR-X-PROJECT")},
		{name: "wptr/create_dry_run_cross_tenant", pol: "test", profile: "member", gates: allGates, target: "create_object",
			args: m{"class_name": "Ticket", "object": m{"title": "PTR-X-DRY", "project": pointer("Project", "@GLOBEX_PROJECT@")}, "dry_run": true},
			code: "not_found", twin: [2]string{"@GLOBEX_PROJECT@", "PZZZZZZZZZ"}},
		{name: "wptr/update_cross_tenant_customer", pol: "demo", profile: "support", gates: allGates, target: "update_object",
			args: m{"class_name": "Ticket", "object_id": ticketOrg, "object": m{"customer": pointer("Customer", "@GLOBEX_CUSTOMER@")}},
			code: "not_found", msg: `field "customer": Object not found: Customer#@GLOBEX_CUSTOMER@`,
			twin: [2]string{"@GLOBEX_CUSTOMER@", "CZZZZZZZZZ"}, unchanged: []string{"Ticket#" + ticketOrg}},
		{name: "wptr/update_array_cross_tenant", pol: "demo", profile: "support", gates: allGates, target: "update_object",
			// a Pointer held in an Array field is checked like a Pointer field.
			args: m{"class_name": "Ticket", "object_id": ticketOrg, "object": m{"tags": []any{"ok", pointer("Ticket", "@GLOBEX_TICKET@")}}},
			code: "not_found", msg: `field "tags": Object not found: Ticket#@GLOBEX_TICKET@`,
			twin: [2]string{"@GLOBEX_TICKET@", missingTicket}, unchanged: []string{"Ticket#" + ticketOrg}},
		{name: "wptr/update_readable_pointer", pol: "test", profile: "member", gates: allGates, target: "update_object",
			// the same update naming the agent's own tenant's project passes.
			args: m{"class_name": "Ticket", "object_id": ticketOrg, "object": m{"project": pointer("Project", projectWebsite)}},
			want: func(t *testing.T, e *env, out map[string]any) {
				if _, id, _ := parse.PointerID(e.raw(t, "Ticket", ticketOrg)["project"]); id != projectWebsite {
					t.Fatalf("project not written: %v", e.raw(t, "Ticket", ticketOrg)["project"])
				}
			}},

		// ---- objects an agent creates get an ACL ------------------------------
		{name: "create_acl/demo_default_acl", pol: "demo", profile: "support", gates: agent.Gates{WriteTools: true}, target: "call_method",
			// the demo policy's default_acl: the tenant's org role and the creator.
			args: m{"class_name": "Comment", "method_name": "add", "arguments": m{"ticket": ticketOrg, "body": "ACL-DEMO-DEFAULT"}},
			want: createdACL("Comment", "body", "ACL-DEMO-DEFAULT", m{"role:org-acme": m{"read": true, "write": true}, demo.SupportUserID: m{"read": true, "write": true}})},
		{name: "create_acl/creator_only", pol: "test", profile: "member", gates: allGates, target: "create_object",
			// no default_acl declared: the creating user alone.
			args: m{"class_name": "Ticket", "object": m{"title": "ACL-CREATOR-ONLY"}},
			want: createdACL("Ticket", "title", "ACL-CREATOR-ONLY", m{demo.MemberUserID: m{"read": true, "write": true}})},
		{name: "create_acl/master_none", pol: "test", profile: "root", gates: allGates, target: "create_object",
			// the master key's objects get no ACL, as Parse Server's.
			args: m{"class_name": "Ticket", "object": m{"title": "ACL-MASTER", "org": orgPtr(acme)}},
			want: createdACL("Ticket", "title", "ACL-MASTER", nil)},

		// ---- writes honour the row's write ACL and never half-apply -------------
		{name: "wperm/update_public_read_ticket", pol: "test", profile: "norole", gates: allGates, target: "update_object",
			args: m{"class_name": "Ticket", "object_id": ticketPublicRead, "object": m{"title": "PWNED"}},
			code: "not_found", msg: "Object not found: Ticket#" + ticketPublicRead, detail: "object_not_found",
			twin: [2]string{ticketPublicRead, missingTicket}, unchanged: []string{"Ticket#" + ticketPublicRead}},
		{name: "wperm/update_dry_run", pol: "test", profile: "norole", gates: allGates, target: "update_object",
			args: m{"class_name": "Ticket", "object_id": ticketPublicRead, "object": m{"title": "PWNED"}, "dry_run": true},
			code: "not_found", msg: "Object not found: Ticket#" + ticketPublicRead, twin: [2]string{ticketPublicRead, missingTicket}},
		{name: "wperm/delete_public_read_comment", pol: "test", profile: "norole", gates: allGates, target: "delete_object",
			args: m{"class_name": "Comment", "object_id": "@PUBLIC_COMMENT@"},
			code: "not_found", msg: "Object not found: Comment#@PUBLIC_COMMENT@", twin: [2]string{"@PUBLIC_COMMENT@", "MZZZZZZZZZ"},
			unchanged: []string{"Comment#@PUBLIC_COMMENT@"}},
		{name: "half/update_valid_and_bad_value", pol: "test", profile: "member", gates: allGates, target: "update_object",
			args: m{"class_name": "Ticket", "object_id": ticketOrg, "object": m{"title": "HALF-APPLIED", "priority": "urgent"}},
			code: "invalid_argument", unchanged: []string{"Ticket#" + ticketOrg}},
		{name: "half/create_valid_and_bad_value", pol: "test", profile: "member", gates: allGates, target: "create_object",
			args: m{"class_name": "Ticket", "object": m{"title": "HALF-CREATED", "dueDate": "not a date"}},
			code: "invalid_argument",
			after: func(t *testing.T, e *env) {
				for _, r := range e.all(t, "Ticket") {
					if r["title"] == "HALF-CREATED" {
						t.Fatalf("a refused create wrote %v", r)
					}
				}
			}},

		// ---- role inheritance ---------------------------------------------------
		{name: "roles/inherited_role_grants", pol: "test", profile: "manager", target: "get_object", args: m{"class_name": "Ticket", "object_id": ticketSupport},
			// the ticket is {"role:Support", "role:Admin"}: Manager reads it
			// through Support's roles relation.
			want: func(t *testing.T, e *env, out map[string]any) {
				if !readable(e.raw(t, "Ticket", ticketSupport), entriesManager...) || readable(e.raw(t, "Ticket", ticketSupport), "*", "role:Manager") {
					t.Fatal("the fixture ticket is not readable through inheritance only")
				}
				if got := out["object"].(map[string]any)["title"]; got != e.raw(t, "Ticket", ticketSupport)["title"] {
					t.Fatalf("title %v", got)
				}
			}},
		{name: "roles/role_not_held", pol: "test", profile: "member", target: "get_object", args: m{"class_name": "Ticket", "object_id": ticketSupport},
			code: "not_found", twin: [2]string{ticketSupport, missingTicket}},
		{name: "roles/cycle_grants_nothing_extra", pol: "test", profile: "cycle", target: "query_class",
			args: m{"class_name": "Ticket", "order": "objectId", "keys": []string{"title"}, "limit": 1000},
			want: func(t *testing.T, e *env, out map[string]any) {
				want := e.truth(t, "Ticket", acme, entriesCycle, nil)
				if !slices.Contains(want, e.vars["CYCLE_TICKET"]) {
					t.Fatal("the CycleC ticket is not in the ground truth")
				}
				wantIDs(func(*testing.T, *env) []string { return want })(t, e, out)
			}},

		{name: "roles/no_reverse_inheritance", pol: "test", profile: "member", target: "get_object", args: m{"class_name": "Ticket", "object_id": "@ADMIN_ONLY_TICKET@"},
			code: "not_found", twin: [2]string{"@ADMIN_ONLY_TICKET@", missingTicket}},
		{name: "roles/manager_is_not_admin", pol: "test", profile: "manager", target: "get_object", args: m{"class_name": "Ticket", "object_id": "@ADMIN_ONLY_TICKET@"},
			code: "not_found", twin: [2]string{"@ADMIN_ONLY_TICKET@", missingTicket}},

		// ---- class-level permissions on writes -------------------------------------
		{name: "clp/delete_ticket_without_role", pol: "test", profile: "member", gates: allGates, target: "delete_object", args: m{"class_name": "Ticket", "object_id": ticketOrg},
			code: "permission_denied", detail: "clp", msg: "class-level permissions of Ticket do not allow delete for this agent", unchanged: []string{"Ticket#" + ticketOrg}},

		// ---- the master key -------------------------------------------------------
		{name: "master/create_class_without_master", pol: "test", profile: "roles-admin", gates: allGates, target: "create_class", args: m{"class_name": "Gadget"},
			code: "permission_denied", detail: "master_required", msg: masterMsg, after: noClass("Gadget")},
		{name: "master/delete_class_without_master", pol: "test", profile: "roles-admin", gates: allGates, target: "delete_class", args: m{"class_name": "Product"},
			code: "permission_denied", detail: "master_required", msg: masterMsg},

		// ---- HTTP: bearer tokens and session tokens ------------------------------
		// docs/POLICY.md: a request without a token, when there is no
		// default_agent, and a token that matches no key are refused with 401.
		{name: "http/no_token_no_default_agent", pol: "test", http: true, target: "count_objects", args: m{"class_name": "Ticket"},
			code: errRPC, msg: "Unauthorized", httpStatus: http.StatusUnauthorized},
		{name: "http/unknown_token", pol: "test", http: true, header: header("Authorization", "Bearer not-a-key"), target: "count_objects", args: m{"class_name": "Ticket"},
			code: errRPC, msg: "Unauthorized", httpStatus: http.StatusUnauthorized},
		{name: "http/session_identity", pol: "test", profile: "portal", http: true,
			header: header("Authorization", "Bearer test-portal", "X-Parse-Session-Token", memberSession),
			target: "get_object", args: m{"class_name": "Ticket", "object_id": ticketMember},
			want: func(t *testing.T, e *env, out map[string]any) {
				if got := out["object"].(map[string]any)[parse.FieldObjectID]; got != ticketMember {
					t.Fatalf("object %v", got)
				}
			}},
		{name: "http/session_expired", pol: "test", profile: "portal", http: true,
			header: header("Authorization", "Bearer test-portal", "X-Parse-Session-Token", expiredSession),
			target: "count_objects", args: m{"class_name": "Ticket"}, code: errRPC, msg: "Unauthorized", httpStatus: http.StatusUnauthorized},
		{name: "http/session_missing", pol: "test", profile: "portal", http: true, header: header("Authorization", "Bearer test-portal"),
			target: "count_objects", args: m{"class_name": "Ticket"}, code: errRPC, msg: "Unauthorized", httpStatus: http.StatusUnauthorized},

		// ---- operator introspection is admin-only -------------------------------
		{name: "gov/tools_list_analyst", pol: "demo", profile: "analyst", kind: kindList,
			want: func(t *testing.T, e *env, out map[string]any) {
				names := asStrings(out["tools"])
				if slices.Contains(names, "describe_agent") || slices.Contains(names, "would_permit") || !slices.Contains(names, "query_class") {
					t.Fatalf("analyst tools/list: %v", names)
				}
			}},
		{name: "gov/describe_agent_analyst", pol: "demo", profile: "analyst", target: "describe_agent", args: m{},
			code: "permission_denied", detail: "permission_tier", msg: "tool describe_agent needs admin permission; this agent is readonly"},
		{name: "gov/would_permit_support", pol: "demo", profile: "support", gates: allGates, target: "would_permit", args: m{"tool": "query_class", "arguments": m{"class_name": "Order"}},
			code: "permission_denied", detail: "permission_tier", msg: "tool would_permit needs admin permission; this agent is write"},
		{name: "gov/tools_list_support", pol: "demo", profile: "support", gates: allGates, kind: kindList,
			want: func(t *testing.T, e *env, out map[string]any) {
				names := asStrings(out["tools"])
				for _, n := range []string{"describe_agent", "would_permit", "export_data", "create_class", "delete_class"} {
					if slices.Contains(names, n) {
						t.Fatalf("support tools/list holds %s: %v", n, names)
					}
				}
				if !slices.Contains(names, "update_object") {
					t.Fatalf("support tools/list: %v", names)
				}
			}},
		{name: "gov/tools_list_admin", pol: "demo", profile: "admin", kind: kindList,
			want: func(t *testing.T, e *env, out map[string]any) {
				names := asStrings(out["tools"])
				if !slices.Contains(names, "describe_agent") || !slices.Contains(names, "would_permit") {
					t.Fatalf("admin tools/list: %v", names)
				}
			}},
	}
}

// lacks checks that the answer names none of strs.
// noRowWith checks that no row of class has field = value (a refused write
// wrote nothing).
func noRowWith(class, field string, value any) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) {
		for _, r := range e.all(t, class) {
			if r[field] == value {
				t.Fatalf("a refused write wrote %v", r)
			}
		}
	}
}

// createdACL checks the ACL of the one row of class whose field is value.
func createdACL(class, field string, value any, want map[string]any) func(*testing.T, *env, map[string]any) {
	return func(t *testing.T, e *env, _ map[string]any) {
		var rows []parse.Object
		for _, r := range e.all(t, class) {
			if r[field] == value {
				rows = append(rows, r)
			}
		}
		if len(rows) != 1 {
			t.Fatalf("%d rows of %s with %s=%v, want 1", len(rows), class, field, value)
		}
		var got map[string]any
		if a, ok := rows[0][parse.FieldACL].(map[string]any); ok {
			got = a
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("ACL of the created %s (-want +got):\n%s", class, d)
		}
	}
}

func lacks(strs ...string) func(*testing.T, *env, map[string]any) {
	return func(t *testing.T, e *env, out map[string]any) {
		t.Helper()
		text := mustJSON(t, out)
		for _, s := range strs {
			if strings.Contains(text, s) {
				t.Fatalf("LEAK: the answer names %s:\n%s", s, text)
			}
		}
	}
}

// commentsOnClosedTickets checks that support reads comments on closed
// tickets it may read by ACL: its filter alone must empty the answer.
func commentsOnClosedTickets(t *testing.T, e *env, _ map[string]any) {
	t.Helper()
	closed := e.truth(t, "Ticket", acme, entriesSupport, fieldIs("status", "closed"))
	n := 0
	for _, c := range e.all(t, "Comment") {
		if p, ok := c["ticket"].(map[string]any); ok && orgOf(c) == acme && readable(c, entriesSupport...) && slices.Contains(closed, p["objectId"].(string)) {
			n++
		}
	}
	if n == 0 {
		t.Fatal("support reads no comment on a closed ticket: the case proves nothing")
	}
}

// noClass checks that a class was not created.
func noClass(class string) func(t *testing.T, e *env) {
	return func(t *testing.T, e *env) {
		if _, err := e.st.Schema(context.Background(), class); err == nil {
			t.Fatalf("a refused call created class %s", class)
		}
	}
}

func asStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func keysOfInt(m map[string]int) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }
