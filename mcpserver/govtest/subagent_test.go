package govtest

import (
	"context"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/policy"
)

// A sub-agent profile that tries to reach further than its parent is
// refused when the file loads (what can be checked without the database)
// or when its agent is built (the rest). The cases in the attack table
// show what a valid child gets; these show what an invalid one does not.
func TestSubAgentWideningRefusedAtLoad(t *testing.T) {
	const parent = `
agents:
  parent:
    identity: {roles: [org-acme]}
    tenant: OAAAAAAAAB
    tools: [query_class, count_objects]
`
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"permission", parent + "  child: {parent: parent, permission: write}\n",
			"agents.child: sub-agent permission write exceeds its parent's readonly"},
		{"tenant", parent + "  child: {parent: parent, tenant: OAAAAAAAAC}\n",
			`agents.child: sub-agent tenant "OAAAAAAAAC" differs from its parent's`},
		{"tools", parent + "  child: {parent: parent, tools: [export_data]}\n",
			"agents.child: sub-agent tools filter [export_data] shares nothing with its parent's [query_class count_objects]"},
		{"master key", parent + "  child: {parent: parent, identity: master}\n",
			"agents.child.identity: a sub-agent cannot use the master key under a scoped parent"},
		{"role", parent + "  child: {parent: parent, identity: {roles: [Admin]}}\n",
			`agents.child.identity: role "Admin" is not held by the parent`},
		{"user under roles", parent + "  child: {parent: parent, identity: {user: admin}}\n",
			"agents.child.identity: a user identity holds its own user id, which the parent's roles identity does not"},
		{"anonymous parent", "agents:\n  anon: {identity: anonymous}\n  child: {parent: anon, identity: {roles: [Admin]}}\n",
			"agents.child.identity: the parent acts anonymously, so a sub-agent may only be anonymous too"},
		{"loop", "agents:\n  a: {parent: b}\n  b: {parent: a}\n",
			"parent chain loops"},
		{"depth", "settings: {recursion_depth: 1}\n" + parent + "  c1: {parent: parent}\n  c2: {parent: c1}\n",
			"sub-agent chain parent → c1 → c2 is too deep"},
		{"unknown parent", "agents:\n  child: {parent: nobody, identity: anonymous}\n",
			`agents.child.parent: no agent profile "nobody"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse([]byte(tc.yaml), policy.Options{Name: "w.yaml", KnownTools: knownTools()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("load error\n got %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}

// What loading cannot check is refused when the agent is built: a child
// of a user profile asking for a role the user does not hold.
func TestSubAgentWideningRefusedAtBuild(t *testing.T) {
	e := sqliteEnv(t)
	for profile, want := range map[string]string{
		"usurper": `policy: agent profile "usurper": sub-agent identity holds "role:Admin", which its parent does not`,
	} {
		a, err := e.testPol.Agent(context.Background(), profile, e.st, nil)
		if err == nil || err.Error() != want {
			t.Fatalf("%s: agent %v, error %v; want %q", profile, a, err, want)
		}
	}
	// A child only narrows: triage keeps its parent's identity and tenant,
	// and its filters are a further layer.
	a, err := e.testPol.Agent(context.Background(), "triage", e.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Policy.TenantID != acme || len(a.Policy.Filters) != 1 || a.Parent() == nil || a.Parent().Policy.Name != "lead" {
		t.Fatalf("triage: tenant %q, %d filter layers, parent %v", a.Policy.TenantID, len(a.Policy.Filters), a.Parent())
	}
}
