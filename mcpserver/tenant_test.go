package mcpserver_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/policy"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

// The shorthand bypass: admin lets an admin-tier agent without a tenant
// binding read every tenant's rows of the class, and no lower tier: a
// write-tier agent without a binding is refused, as on a class without
// a bypass.
func TestTenantBypassAdmin(t *testing.T) {
	st := fixtureStore(t)
	// The tickets' status stands for their tenant.
	admin := agent.Admin
	cat := &agent.Catalog{Classes: map[string]*agent.ClassMeta{
		"Ticket":  {Tenant: &agent.TenantScope{Field: "status", Bypass: agent.TenantBypass{Permission: &admin}}},
		"Project": {Tenant: &agent.TenantScope{Field: "name"}},
	}}
	user := agent.Identity{Mode: agent.AuthUser, UserID: bob}
	pol := agent.Policy{Catalog: cat}

	adminCS := govClient(t, st, allGates, agent.Admin, user, pol)
	// bob reads the four tickets with no or public ACL… of every status.
	if out := ok(t, adminCS, "count_objects", map[string]any{"class_name": "Ticket"}); out["count"] != float64(4) {
		t.Fatalf("admin without a tenant, bypass admin: count %v, want every tenant's 4", out["count"])
	}
	refused(t, adminCS, "count_objects", map[string]any{"class_name": "Project"}, "access_denied", "tenant",
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

// tenantPolicy declares tenant bypass rules the way an operator writes
// them. Every profile acts as bob (who reads tickets t1 to t4 and the
// projects Apollo and Borealis); the tickets' status and the projects'
// name stand for their tenant.
const tenantPolicy = `
agents:
  ops: {identity: {user: ` + bob + `}, permission: admin, introspection: true}
  writer: {identity: {user: ` + bob + `}, permission: write}
  auditor: {identity: {user: ` + bob + `}}
  auditor-helper: {parent: auditor}
  auditor-intern: {parent: auditor}
  reader: {identity: {user: ` + bob + `}}
  reader-helper: {parent: reader}
  project-auditor: {identity: {user: ` + bob + `}}
  bound-ops: {identity: {user: ` + bob + `}, permission: admin, tenant: open, introspection: true}
classes:
  Ticket:
    tenant:
      field: status
      bypass: {permission: admin, agents: [auditor, auditor-helper, reader-helper]}
  Project:
    tenant: {field: name, bypass: {agents: [project-auditor]}}
`

// profileClient connects a client whose requests are served as the
// policy's profile name.
func profileClient(t *testing.T, st store.Store, pol *policy.Policy, name string) *mcp.ClientSession {
	t.Helper()
	cfg := tools.DefaultConfig
	cfg.Gates = allGates
	srv, err := mcpserver.New(mcpserver.Options{Store: st, ToolConfig: &cfg, Agents: func(ctx context.Context, _ mcpserver.RequestInfo) (*agent.Agent, error) {
		return pol.Agent(ctx, name, st, nil)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return connect(t, srv, "")
}

// Bypass rules in the policy: a tier, or agents by profile name; any rule
// that matches bypasses, for an agent without a tenant binding only. Each
// case tries to reach every tenant through a rule that does not cover it.
func TestTenantBypassRules(t *testing.T) {
	st := fixtureStore(t)
	pol, err := policy.Parse([]byte(tenantPolicy), policy.Options{Name: "p.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	noBinding := func(class string) string {
		return "class " + class + " is scoped by tenant and this agent has no tenant binding"
	}
	count := map[string]any{"class_name": "Ticket"}
	for _, c := range []struct {
		profile string
		tickets float64 // 0: refused
	}{
		{"ops", 4},            // the tier rule
		{"writer", 0},         // below the tier, not named
		{"auditor", 4},        // named
		{"auditor-helper", 4}, // named, and so is its parent
		{"auditor-intern", 0}, // a sub-agent does not inherit its parent's name
		{"reader-helper", 0},  // named, but its parent is not: never wider than the parent
		{"project-auditor", 0},
	} {
		cs := profileClient(t, st, pol, c.profile)
		if c.tickets == 0 {
			refused(t, cs, "count_objects", count, "access_denied", "tenant", noBinding("Ticket"))
			refused(t, cs, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$group":{"_id":"$status","n":{"$sum":1}}}]`}, "access_denied", "tenant", noBinding("Ticket"))
			continue
		}
		if out := ok(t, cs, "count_objects", count); out["count"] != c.tickets {
			t.Errorf("%s: %v tickets, want every tenant's %v", c.profile, out["count"], c.tickets)
		}
	}
	// A name matches the class that lists it only.
	pa := profileClient(t, st, pol, "project-auditor")
	if out := ok(t, pa, "count_objects", map[string]any{"class_name": "Project"}); out["count"] != float64(2) {
		t.Errorf("project-auditor: %v projects, want 2", out["count"])
	}
	refused(t, profileClient(t, st, pol, "ops"), "count_objects", map[string]any{"class_name": "Project"}, "access_denied", "tenant", noBinding("Project"))

	// An admin bound to a tenant stays in it under bypass {permission:
	// admin}: its rows, and a where naming another tenant is refused, in
	// a find and in a pipeline alike.
	bound := profileClient(t, st, pol, "bound-ops")
	if out := ok(t, bound, "count_objects", count); out["count"] != float64(2) {
		t.Errorf("bound admin: %v tickets, want its tenant's 2", out["count"])
	}
	spoof := "the constraint on Ticket.status names another tenant than this agent's"
	refused(t, bound, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "closed"}}, "access_denied", "tenant_spoof", spoof)
	refused(t, bound, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": map[string]any{"$in": []any{"open", "closed"}}}}, "access_denied", "tenant_spoof", spoof)
	refused(t, bound, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": `[{"$match":{"status":"closed"}}]`}, "access_denied", "tenant_spoof", spoof)
	if out := ok(t, bound, "distinct", map[string]any{"class_name": "Ticket", "field": "status"}); !cmp.Equal(out["values"], []any{"open"}) {
		t.Errorf("bound admin: statuses %v, want its tenant only", out["values"])
	}
}

// describe_agent shows a class's bypass rules and whether they let this
// agent read every tenant.
func TestTenantBypassDescribed(t *testing.T) {
	st := fixtureStore(t)
	pol, err := policy.Parse([]byte(tenantPolicy), policy.Options{Name: "p.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]any{"permission": "admin", "agents": []any{"auditor", "auditor-helper", "reader-helper"}}
	for profile, want := range map[string]map[string]any{
		"ops":       {"field": "status", "value": "", "bypass": rules, "bypasses": true},
		"bound-ops": {"field": "status", "value": "open", "bypass": rules, "bypasses": false},
	} {
		out := ok(t, profileClient(t, st, pol, profile), "describe_agent", map[string]any{"class_name": "Ticket"})
		if d := cmp.Diff(want, out["tenant_scope"]); d != "" {
			t.Errorf("%s: tenant_scope (-want +got):\n%s", profile, d)
		}
	}
	out := ok(t, profileClient(t, st, pol, "ops"), "describe_agent", map[string]any{"class_name": "Project"})
	if d := cmp.Diff(map[string]any{"field": "name", "value": "", "bypass": map[string]any{"agents": []any{"project-auditor"}}, "bypasses": false}, out["tenant_scope"]); d != "" {
		t.Errorf("ops on Project: tenant_scope (-want +got):\n%s", d)
	}
}
