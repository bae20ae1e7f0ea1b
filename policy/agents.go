package policy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// maxTokenLen bounds a bearer token; longer ones are refused unread.
const maxTokenLen = 4096

// Select returns the profile an HTTP request selects: the profile one of
// whose keys is the request's bearer token (Authorization: Bearer <key>),
// or the default agent when the request carries no Authorization header.
// Every refusal wraps agent.ErrUnauthorized and never contains the token.
func (p *Policy) Select(header http.Header) (string, error) {
	auth := strings.TrimSpace(header.Get("Authorization"))
	if auth == "" {
		if p.DefaultAgent != "" {
			return p.DefaultAgent, nil
		}
		return "", fmt.Errorf("%w: no bearer token, and the policy has no default_agent", agent.ErrUnauthorized)
	}
	scheme, tok, _ := strings.Cut(auth, " ")
	tok = strings.TrimSpace(tok)
	if !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", fmt.Errorf("%w: the Authorization header is not a bearer token", agent.ErrUnauthorized)
	}
	if len(tok) > maxTokenLen {
		return "", fmt.Errorf("%w: unknown bearer token", agent.ErrUnauthorized)
	}
	d := sha256.Sum256([]byte(tok))
	match := ""
	// Every key is compared (no early exit); Load refuses a key that
	// selects two profiles, so at most one matches.
	for name, prof := range p.Agents {
		for _, k := range prof.Keys {
			if subtle.ConstantTimeCompare(k.digest[:], d[:])&boolInt(k.usable) == 1 {
				match = name
			}
		}
	}
	if match == "" {
		return "", fmt.Errorf("%w: unknown bearer token", agent.ErrUnauthorized)
	}
	return match, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Agent builds a fresh agent for the named profile. header is the
// request's (nil over stdio); a session profile reads the Parse session
// token from its X-Parse-Session-Token header. A sub-agent profile is
// built by building its parent and narrowing it with agent.(*Agent).Sub,
// so it can never reach further than the parent.
func (p *Policy) Agent(ctx context.Context, name string, st store.Store, header http.Header) (*agent.Agent, error) {
	return p.build(ctx, name, st, header, 0)
}

func (p *Policy) build(ctx context.Context, name string, st store.Store, header http.Header, depth int) (*agent.Agent, error) {
	prof := p.Agents[name]
	if prof == nil {
		return nil, fmt.Errorf("policy: no agent profile %q", name)
	}
	if depth > 64 {
		return nil, fmt.Errorf("policy: agent profile %q: parent chain too long", name)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var id *agent.Identity
	if prof.Identity.Kind != IdentityInherit {
		resolved, err := p.identity(ctx, prof, st, header)
		if err != nil {
			return nil, err
		}
		id = &resolved
	}
	if prof.Parent == "" {
		if id == nil {
			return nil, fmt.Errorf("policy: agent profile %q has no identity", name)
		}
		a := agent.New(prof.Permission, *id)
		a.Policy = agent.Policy{
			Name:     prof.Name,
			TenantID: prof.Tenant,
			Tools:    cloneNameFilter(prof.Tools),
			Classes:  cloneNameFilter(prof.Classes),
			Methods:  cloneNameFilter(prof.Methods),
			Catalog:  p.Catalog,
			// The operator-only tools, when the profile exposes them.
			Introspection: prof.Introspection,
		}
		if len(prof.Filters) > 0 {
			a.Policy.Filters = []agent.ClassFilters{cloneFilters(prof.Filters)}
		}
		a.SetDepth(p.rootDepth(prof))
		return a, nil
	}
	parent, err := p.build(ctx, prof.Parent, st, header, depth+1)
	if err != nil {
		return nil, err
	}
	child, err := parent.Sub(subOptions(prof, id))
	if err != nil {
		return nil, fmt.Errorf("policy: agent profile %q: %w", name, err)
	}
	return child, nil
}

// identity resolves a profile's identity against the store.
func (p *Policy) identity(ctx context.Context, prof *Profile, st store.Store, header http.Header) (agent.Identity, error) {
	switch prof.Identity.Kind {
	case IdentityMaster:
		return agent.Identity{Mode: agent.AuthMaster}, nil
	case IdentityAnonymous:
		return agent.Identity{Mode: agent.AuthAnonymous}, nil
	case IdentityRoles:
		roles, err := InheritedRoles(ctx, st, prof.Identity.Roles)
		if err != nil {
			return agent.Identity{}, fmt.Errorf("policy: agent profile %q: %w", prof.Name, err)
		}
		return agent.Identity{Mode: agent.AuthRole, Roles: roles}, nil
	case IdentityUser:
		uid, err := lookupUser(ctx, st, prof.Identity.User)
		if err != nil {
			return agent.Identity{}, fmt.Errorf("policy: agent profile %q: %w", prof.Name, err)
		}
		return agent.UserIdentity(ctx, st, uid)
	case IdentitySession:
		tok := header.Get(SessionHeader)
		if tok == "" {
			return agent.Identity{}, fmt.Errorf("%w: agent profile %q acts as the session's user; send a Parse session token in the %s header", agent.ErrUnauthorized, prof.Name, SessionHeader)
		}
		return agent.SessionIdentity(ctx, st, tok, time.Now())
	case IdentityToken:
		return p.tokenIdentity(ctx, prof, st)
	}
	return agent.Identity{}, fmt.Errorf("policy: agent profile %q: unknown identity kind %q", prof.Name, prof.Identity.Kind)
}

// lookupUser finds a _User by objectId, then by username.
func lookupUser(ctx context.Context, st store.Store, ref string) (string, error) {
	if parse.ValidObjectID(ref) {
		rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassUser, Limit: 1, Keys: []string{},
			Where: query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpEq, Value: ref}})
		if err != nil {
			return "", err
		}
		if len(rows) == 1 {
			return ref, nil
		}
	}
	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassUser, Limit: 1, Keys: []string{},
		Where: query.Cmp{Path: query.Path{Field: "username", Type: parse.TypeString}, Op: query.OpEq, Value: ref}})
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", fmt.Errorf("no _User with objectId or username %q", ref)
	}
	id, _ := rows[0][parse.FieldObjectID].(string)
	return id, nil
}

// InheritedRoles returns names plus every role that inherits from them
// (Parse semantics: a role listed in another role's `roles` relation
// gets that role's rights), sorted. Names with no _Role row are kept.
func InheritedRoles(ctx context.Context, st store.Store, names []string) ([]string, error) {
	out := map[string]bool{}
	vals := make([]any, len(names))
	for i, n := range names {
		out[n] = true
		vals[i] = n
	}
	nameQ := query.In{Path: query.Path{Field: "name", Type: parse.TypeString}, Values: vals}
	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassRole, Where: nameQ, Limit: -1, Keys: []string{"name"}})
	if err != nil {
		return nil, fmt.Errorf("resolve roles: %w", err)
	}
	seen := map[string]bool{}
	var frontier []any
	add := func(rows []parse.Object) {
		for _, r := range rows {
			id, _ := r[parse.FieldObjectID].(string)
			if id == "" || seen[id] {
				continue
			}
			seen[id] = true
			frontier = append(frontier, id)
			if n, ok := r["name"].(string); ok && n != "" {
				out[n] = true
			}
		}
	}
	add(rows)
	for depth := 0; len(frontier) > 0 && depth < agent.MaxRoleDepth; depth++ {
		q := query.RelationHas{Field: "roles", Class: parse.ClassRole, IDs: frontier}
		frontier = nil
		rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassRole, Where: q, Limit: -1, Keys: []string{"name"}})
		if err != nil {
			return nil, fmt.Errorf("resolve inherited roles: %w", err)
		}
		add(rows)
	}
	res := make([]string, 0, len(out))
	for n := range out {
		res = append(res, n)
	}
	sort.Strings(res)
	return res, nil
}

func cloneNameFilter(f agent.NameFilter) agent.NameFilter {
	return agent.NameFilter{Only: slices.Clone(f.Only), Except: slices.Clone(f.Except)}
}

func cloneFilters(f agent.ClassFilters) agent.ClassFilters {
	if f == nil {
		return nil
	}
	out := make(agent.ClassFilters, len(f))
	for k, v := range f {
		out[k], _ = parse.CloneJSON(v).(map[string]any)
	}
	return out
}
