package mcpserver_test

import (
	"testing"

	"github.com/parsemcp/parsemcp/agent"
)

// bypass_admin lets an admin-tier agent without a tenant binding read
// every tenant's rows of the class, and no lower tier: a write-tier agent
// without a binding is refused, as on a class without bypass_admin.
func TestTenantBypassAdmin(t *testing.T) {
	st := fixtureStore(t)
	// The tickets' status stands for their tenant.
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{
		"Ticket":  {Tenant: &agent.TenantScope{Field: "status", BypassAdmin: true}},
		"Project": {Tenant: &agent.TenantScope{Field: "name"}},
	}}
	user := agent.Identity{Mode: agent.AuthUser, UserID: bob}
	pol := agent.Policy{Catalog: cat}

	admin := govClient(t, st, allGates, agent.Admin, user, pol)
	// bob reads the four tickets with no or public ACL… of every status.
	if out := ok(t, admin, "count_objects", map[string]any{"class_name": "Ticket"}); out["count"] != float64(4) {
		t.Fatalf("admin without a tenant, bypass_admin: count %v, want every tenant's 4", out["count"])
	}
	refused(t, admin, "count_objects", map[string]any{"class_name": "Project"}, "access_denied", "tenant",
		"class Project is scoped by tenant and this agent has no tenant binding")

	for _, tier := range []agent.Permission{agent.Readonly, agent.Write} {
		cs := govClient(t, st, allGates, tier, user, pol)
		refused(t, cs, "count_objects", map[string]any{"class_name": "Ticket"}, "access_denied", "tenant",
			"class Ticket is scoped by tenant and this agent has no tenant binding")
	}

	// Bound to a tenant, the admin sees that tenant only.
	pol.TenantID = "open"
	bound := govClient(t, st, allGates, agent.Admin, user, pol)
	if out := ok(t, bound, "count_objects", map[string]any{"class_name": "Ticket"}); out["count"] != float64(2) {
		t.Fatalf("admin bound to tenant open: count %v, want 2", out["count"])
	}
}
