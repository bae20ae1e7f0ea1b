package govtest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ruleCases are the cases that keep the tenant rules from breaking
// unnoticed (issue 15's mutation check found each of them untested): the
// tenant field stamped on a tenant-bound agent's create, a tenant-scoped
// class refused to an agent without a tenant binding, and every single
// field operator on the tenant field refused as a spoof.
func ruleCases() []attack {
	noBinding := "class Ticket is scoped by tenant and this agent has no tenant binding"
	return []attack{
		{name: "tenant/create_stamps_tenant", pol: "test", profile: "member", gates: allGates, target: "create_object",
			args: m{"class_name": "Ticket", "object": m{"title": "STAMPED-CREATE", "ACL": m{"*": m{"read": true}}}},
			want: func(t *testing.T, e *env, out map[string]any) {
				id, _ := out["object_id"].(string)
				row := e.raw(t, "Ticket", id)
				if row == nil {
					t.Fatalf("the created ticket %q is not in the store (answer %s)", id, mustJSON(t, out))
				}
				if d := cmp.Diff(asJSON(t, orgPtr(acme)), asJSON(t, row["org"])); d != "" {
					t.Fatalf("a tenant-bound agent's new ticket must carry its tenant (-want +got):\n%s", d)
				}
			}},
		{name: "tenant/create_stamps_tenant_dry_run", pol: "test", profile: "member", gates: allGates, target: "create_object",
			args: m{"class_name": "Ticket", "object": m{"title": "STAMPED-DRY-RUN"}, "dry_run": true},
			want: func(t *testing.T, e *env, out map[string]any) {
				if d := cmp.Diff(asJSON(t, orgPtr(acme)), asJSON(t, out["would_create"].(map[string]any)["org"])); d != "" {
					t.Fatalf("the dry run must show the tenant the create would write (-want +got):\n%s", d)
				}
			}},
		{name: "tenant/no_binding_count", pol: "test", profile: "roles-admin", target: "count_objects", args: m{"class_name": "Ticket"},
			code: "access_denied", detail: "tenant", msg: noBinding},
		{name: "tenant/no_binding_query", pol: "test", profile: "roles-admin", target: "query_class", args: m{"class_name": "Ticket", "keys": []string{"title"}},
			code: "access_denied", detail: "tenant", msg: noBinding},
		{name: "tenant/no_binding_create", pol: "test", profile: "roles-admin", gates: allGates, target: "create_object",
			args: m{"class_name": "Ticket", "object": m{"title": "UNBOUND-CREATE"}},
			code: "access_denied", detail: "tenant", msg: noBinding,
			after: func(t *testing.T, e *env) {
				for _, r := range e.all(t, "Ticket") {
					if r["title"] == "UNBOUND-CREATE" {
						t.Fatalf("a refused create wrote %v", r)
					}
				}
			}},
		{name: "tenant/regex_on_tenant_field", pol: "demo", profile: "analyst", target: "count_objects",
			args: m{"class_name": "Organization", "where": m{"objectId": m{"$regex": "^O"}}},
			code: "access_denied", msg: spoof("Organization.objectId"), detail: "tenant_spoof"},
		{name: "tenant/exists_on_tenant_field", pol: "demo", profile: "analyst", target: "count_objects",
			args: m{"class_name": "Ticket", "where": m{"org": m{"$exists": true}}},
			code: "access_denied", msg: spoof("Ticket.org"), detail: "tenant_spoof"},
		{name: "tenant/in_own_org_only", pol: "demo", profile: "analyst", target: "count_objects",
			args: m{"class_name": "Ticket", "where": m{"org": m{"$in": []any{orgPtr(acme)}}}},
			want: wantNum("count", countOf(analystTickets(nil)))},
	}
}
