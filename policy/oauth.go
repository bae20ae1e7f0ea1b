package policy

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// IdentityToken acts as the person of the request's OAuth access token:
// the Parse user and roles the policy's oauth section maps its claims to.
const IdentityToken IdentityKind = "token"

// OAuth maps an access token's claims to an agent profile and a Parse
// identity (the oauth section of the policy file; docs/OPERATIONS.md).
type OAuth struct {
	// ProfileClaim is the claim (a string or a list of strings) whose
	// values select the profile, through Profiles, first match in file order.
	ProfileClaim string
	Profiles     []ClaimProfile
	// UserClaim names the Parse user; UserBy says which _User field it
	// matches: objectId, username or email.
	UserClaim string
	UserBy    string
	// RolesClaim, when set, lists role names the person holds besides
	// the user's roles in _Role.
	RolesClaim string
	// TenantClaim, when set, is the person's tenant; a token without it
	// is refused.
	TenantClaim string
	// Scopes map a scope to the highest tier it grants; when set, the
	// agent's tier is the lower of its profile's and its scopes' best,
	// and a token with no mapped scope is refused.
	Scopes map[string]agent.Permission
}

// ClaimProfile selects Profile when the profile claim holds Value.
type ClaimProfile struct{ Value, Profile string }

type rawOAuth struct {
	ProfileClaim string            `yaml:"profile_claim"`
	Profiles     yaml.Node         `yaml:"profiles"`
	UserClaim    string            `yaml:"user_claim"`
	UserBy       string            `yaml:"user_by"`
	RolesClaim   string            `yaml:"roles_claim"`
	TenantClaim  string            `yaml:"tenant_claim"`
	Scopes       map[string]string `yaml:"scopes"`
}

func (b *builder) oauth(pol *Policy, raw *rawOAuth) {
	if raw == nil {
		return
	}
	p := pth{"oauth"}
	o := &OAuth{ProfileClaim: raw.ProfileClaim, UserClaim: raw.UserClaim, UserBy: raw.UserBy, RolesClaim: raw.RolesClaim, TenantClaim: raw.TenantClaim}
	if o.ProfileClaim == "" {
		b.errAt(p.k("profile_claim"), 0, "name the claim that selects the agent profile (e.g. groups)")
	}
	n := resolveAlias(&raw.Profiles)
	if n.Kind != yaml.MappingNode || len(n.Content) == 0 {
		b.errAt(p.k("profiles"), n.Line, "want a mapping of claim values to agent profiles")
	} else {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolveAlias(n.Content[i+1])
			if _, ok := pol.Agents[v.Value]; !ok || v.Kind != yaml.ScalarNode {
				b.errAt(p.k("profiles").k(k.Value), v.Line, "no agent profile %q", v.Value)
				continue
			}
			o.Profiles = append(o.Profiles, ClaimProfile{Value: k.Value, Profile: v.Value})
		}
	}
	switch o.UserBy {
	case "":
		if o.UserClaim != "" {
			o.UserBy = parse.FieldObjectID
		}
	case parse.FieldObjectID, "username", "email":
		if o.UserClaim == "" {
			b.errAt(p.k("user_by"), 0, "needs user_claim")
		}
	default:
		b.errAt(p.k("user_by"), 0, "want objectId, username or email, not %q", o.UserBy)
	}
	if len(raw.Scopes) > 0 {
		o.Scopes = map[string]agent.Permission{}
		for s, tier := range raw.Scopes {
			perm, err := agent.ParsePermission(tier)
			if err != nil {
				b.errAt(p.k("scopes").k(s), 0, "%v", err)
				continue
			}
			o.Scopes[s] = perm
		}
	}
	for _, name := range slices.Sorted(maps.Keys(pol.Agents)) {
		if pol.Agents[name].Identity.Kind == IdentityToken && o.UserClaim == "" && o.RolesClaim == "" {
			b.errAt(pth{"agents", name, "identity"}, 0, "identity token needs oauth.user_claim or oauth.roles_claim")
		}
	}
	pol.OAuth = o
}

// tokenPersonKey carries the token's person to identity().
type tokenPersonKey struct{}

type tokenPerson struct {
	user  string // the user claim's value, or ""
	roles []string
}

// AgentForToken builds the agent of a request authorized by a valid
// OAuth access token with these claims and scopes. A token whose claims
// select no profile, name no user of the store, or carry no mapped scope
// is refused (agent.ErrUnauthorized); nothing else is assumed.
func (p *Policy) AgentForToken(ctx context.Context, claims map[string]any, scopes []string, st store.Store) (*agent.Agent, error) {
	o := p.OAuth
	if o == nil {
		return nil, fmt.Errorf("%w: the policy maps no OAuth tokens (no oauth section)", agent.ErrUnauthorized)
	}
	values := claimStrings(claims[o.ProfileClaim])
	name := ""
	for _, cp := range o.Profiles {
		if slices.Contains(values, cp.Value) {
			name = cp.Profile
			break
		}
	}
	if name == "" {
		return nil, fmt.Errorf("%w: the token's %s claim selects no agent profile", agent.ErrUnauthorized, o.ProfileClaim)
	}
	tier := agent.Admin
	if o.Scopes != nil {
		best, found := agent.Readonly, false
		for _, s := range scopes {
			if t, ok := o.Scopes[s]; ok {
				best, found = max(best, t), true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: the token carries none of the policy's scopes", agent.ErrUnauthorized)
		}
		tier = best
	}
	person := tokenPerson{}
	if o.UserClaim != "" {
		person.user, _ = claims[o.UserClaim].(string)
	}
	if o.RolesClaim != "" {
		person.roles = claimStrings(claims[o.RolesClaim])
	}
	a, err := p.build(context.WithValue(ctx, tokenPersonKey{}, person), name, st, nil, 0)
	if err != nil {
		return nil, err
	}
	a.Permission = min(a.Permission, tier)
	if o.TenantClaim != "" {
		tenant, _ := claims[o.TenantClaim].(string)
		switch {
		case tenant == "":
			return nil, fmt.Errorf("%w: the token has no %s claim", agent.ErrUnauthorized, o.TenantClaim)
		case a.Policy.TenantID == "":
			a.Policy.TenantID = tenant
		case a.Policy.TenantID != tenant:
			return nil, fmt.Errorf("%w: the token's tenant is not its profile's", agent.ErrUnauthorized)
		}
	}
	return a, nil
}

// tokenIdentity resolves identity: token from the person AgentForToken
// put in ctx; without one (a request that did not come with a token) the
// profile cannot act.
func (p *Policy) tokenIdentity(ctx context.Context, prof *Profile, st store.Store) (agent.Identity, error) {
	person, ok := ctx.Value(tokenPersonKey{}).(tokenPerson)
	if !ok {
		return agent.Identity{}, fmt.Errorf("%w: agent profile %q acts as the person of an OAuth access token; send one", agent.ErrUnauthorized, prof.Name)
	}
	var id agent.Identity
	if o := p.OAuth; o.UserClaim != "" && person.user == "" {
		return agent.Identity{}, fmt.Errorf("%w: the token has no %s claim", agent.ErrUnauthorized, o.UserClaim)
	}
	if person.user != "" {
		uid, err := p.tokenUser(ctx, st, person.user)
		if err != nil {
			return agent.Identity{}, err
		}
		if id, err = agent.UserIdentity(ctx, st, uid); err != nil {
			return agent.Identity{}, err
		}
	} else {
		if len(person.roles) == 0 {
			return agent.Identity{}, fmt.Errorf("%w: the token names no user and no roles", agent.ErrUnauthorized)
		}
		id = agent.Identity{Mode: agent.AuthRole}
	}
	if len(person.roles) > 0 {
		roles, err := InheritedRoles(ctx, st, person.roles)
		if err != nil {
			return agent.Identity{}, err
		}
		id.Roles = append(id.Roles, roles...)
		sort.Strings(id.Roles)
		id.Roles = slices.Compact(id.Roles)
	}
	return id, nil
}

// tokenUser finds the _User the user claim names.
func (p *Policy) tokenUser(ctx context.Context, st store.Store, v string) (string, error) {
	field := p.OAuth.UserBy
	if field == parse.FieldObjectID && !parse.ValidObjectID(v) {
		return "", fmt.Errorf("%w: the token's user is not a valid objectId", agent.ErrUnauthorized)
	}
	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassUser, Limit: 2, Keys: []string{},
		Where: query.Cmp{Path: query.Path{Field: field, Type: parse.TypeString}, Op: query.OpEq, Value: v}})
	if err != nil {
		return "", err
	}
	if len(rows) != 1 {
		return "", fmt.Errorf("%w: the token's user is not one user of the store", agent.ErrUnauthorized)
	}
	id, _ := rows[0][parse.FieldObjectID].(string)
	return id, nil
}

// claimStrings reads a claim holding a string or a list of strings.
func claimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []string:
		return v
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
