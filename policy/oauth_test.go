package policy

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
)

const oauthPolicy = `
agents:
  staff:
    permission: write
    identity: token
  auditors:
    permission: readonly
    identity: token
    tenant: acme
  ops:
    permission: admin
    identity: master
oauth:
  profile_claim: groups
  profiles:
    staff: staff
    audit: auditors
    ops: ops
  user_claim: preferred_username
  user_by: username
  roles_claim: roles
  tenant_claim: org
  scopes:
    parse:read: readonly
    parse:write: write
`

func TestAgentForToken(t *testing.T) {
	st := fixture.Store(t, filepath.Join(t.TempDir(), "f.sqlite"))
	defer st.Close()
	pol, err := Parse([]byte(oauthPolicy), testOptions())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	claims := func(user string, groups ...any) map[string]any {
		return map[string]any{"preferred_username": user, "groups": groups, "org": "acme", "roles": []any{"Reviewers"}}
	}
	a, err := pol.AgentForToken(ctx, claims("alice", "other", "staff", "audit"), []string{"parse:read", "parse:write"}, st)
	if err != nil {
		t.Fatal(err)
	}
	if a.Policy.Name != "staff" || a.Identity.UserID != fixture.Alice || a.Permission != agent.Write || a.Policy.TenantID != "acme" {
		t.Errorf("alice: profile %s user %s tier %s tenant %s", a.Policy.Name, a.Identity.UserID, a.Permission, a.Policy.TenantID)
	}
	if !strings.Contains(strings.Join(a.Identity.Roles, ","), "Reviewers") {
		t.Errorf("roles from the claim missing: %v", a.Identity.Roles)
	}
	b, err := pol.AgentForToken(ctx, claims("bob", "staff"), []string{"parse:read"}, st)
	if err != nil {
		t.Fatal(err)
	}
	if b.Identity.UserID != fixture.Bob || b.Permission != agent.Readonly {
		t.Errorf("bob: user %s tier %s (a read scope caps the write profile)", b.Identity.UserID, b.Permission)
	}
	if o, err := pol.AgentForToken(ctx, map[string]any{"groups": "ops", "org": "acme"}, []string{"parse:read"}, st); err != nil || o.Identity.Mode != agent.AuthMaster || o.Permission != agent.Readonly {
		t.Errorf("ops: %+v %v", o, err)
	}

	for name, tc := range map[string]struct {
		claims map[string]any
		scopes []string
	}{
		"no profile":          {claims("alice", "visitors"), []string{"parse:read"}},
		"no groups claim":     {map[string]any{"preferred_username": "alice", "org": "acme"}, []string{"parse:read"}},
		"unknown user":        {claims("mallory", "staff"), []string{"parse:read"}},
		"no user claim":       {map[string]any{"groups": "staff", "org": "acme"}, []string{"parse:read"}},
		"no mapped scope":     {claims("alice", "staff"), []string{"openid", "email"}},
		"no scope":            {claims("alice", "staff"), nil},
		"no tenant":           {map[string]any{"preferred_username": "alice", "groups": "staff"}, []string{"parse:read"}},
		"other tenant":        {map[string]any{"preferred_username": "alice", "groups": "audit", "org": "globex"}, []string{"parse:read"}},
		"user claim not text": {map[string]any{"preferred_username": []any{"alice"}, "groups": "staff", "org": "acme"}, []string{"parse:read"}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := pol.AgentForToken(ctx, tc.claims, tc.scopes, st); !errors.Is(err, agent.ErrUnauthorized) {
				t.Fatalf("err = %v, want ErrUnauthorized", err)
			}
		})
	}
	// A token profile cannot act without a token (a static key, stdio).
	if _, err := pol.Agent(ctx, "staff", st, nil); !errors.Is(err, agent.ErrUnauthorized) {
		t.Errorf("staff without a token: %v", err)
	}
}

func TestOAuthSectionErrors(t *testing.T) {
	for name, body := range map[string]string{
		"unknown profile": "agents: {a: {identity: token}}\noauth: {profile_claim: g, profiles: {x: nope}, user_claim: sub}\n",
		"no claim":        "agents: {a: {identity: token}}\noauth: {profiles: {x: a}, user_claim: sub}\n",
		"bad user_by":     "agents: {a: {identity: token}}\noauth: {profile_claim: g, profiles: {x: a}, user_claim: sub, user_by: phone}\n",
		"bad tier":        "agents: {a: {identity: token}}\noauth: {profile_claim: g, profiles: {x: a}, user_claim: sub, scopes: {s: root}}\n",
		"unknown key":     "agents: {a: {identity: token}}\noauth: {profile_claim: g, profiles: {x: a}, user_claim: sub, group_claim: x}\n",
		"no person":       "agents: {a: {identity: token}}\noauth: {profile_claim: g, profiles: {x: a}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(body), testOptions())
			if err == nil || !strings.Contains(err.Error(), "p.yaml:") {
				t.Fatalf("err = %v, want an error with its line", err)
			}
		})
	}
}
