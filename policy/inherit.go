package policy

// Profile inheritance: parent chains, their depth budgets and the narrowing
// a sub-agent profile must respect.

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
)

// parents checks parent references, loops, depth budgets and, by building
// the chain with placeholder identities, the narrowing rules of
// agent.(*Agent).Sub that need no database.
func (b *builder) parents(pol *Policy) {
	for _, name := range pol.Names() {
		prof := pol.Agents[name]
		if prof.Parent == "" {
			continue
		}
		pp := pth{"agents", name, "parent"}
		chain := []*Profile{prof}
		seen := map[string]bool{name: true}
		broken := false
		for cur := prof; cur.Parent != ""; {
			next := pol.Agents[cur.Parent]
			if next == nil {
				if cur == prof {
					b.errAt(pp, 0, "no agent profile %q", prof.Parent)
				}
				broken = true // an unknown parent further up is reported there
				break
			}
			if seen[next.Name] {
				names := []string{}
				for _, c := range chain {
					names = append(names, c.Name)
				}
				names = append(names, next.Name)
				b.errAt(pp, 0, "parent chain loops: %s", strings.Join(names, " → "))
				broken = true
				break
			}
			seen[next.Name] = true
			chain = append(chain, next)
			cur = next
		}
		if broken {
			continue
		}
		slices.Reverse(chain) // root first
		root := chain[0]
		a := agent.New(root.Permission, agent.Identity{Mode: agent.AuthMaster})
		a.Policy = agent.Policy{Name: root.Name, TenantID: root.Tenant, Tools: root.Tools, Classes: root.Classes, Methods: root.Methods, Introspection: root.Introspection}
		a.SetDepth(pol.rootDepth(root))
		ids := []IdentitySpec{root.Identity}
		for i, c := range chain[1:] {
			sub, err := a.Sub(subOptions(c, nil))
			if err != nil {
				switch {
				case c != prof: // reported for the profile that fails
				case errors.Is(err, agent.ErrRecursionLimit):
					names := make([]string, 0, len(chain))
					for _, x := range chain {
						names = append(names, x.Name)
					}
					b.errAt(pp, 0, "sub-agent chain %s is too deep: %s may create no further sub-agents (see settings.recursion_depth and depth)", strings.Join(names, " → "), chain[i].Name)
				default:
					b.errAt(pth{"agents", name}, 0, "%v", err)
				}
				break
			}
			if c == prof {
				if msg := identityNarrows(ids, c.Identity); msg != "" {
					b.errAt(pth{"agents", name, "identity"}, 0, "%s", msg)
				}
			}
			ids = append(ids, c.Identity)
			a = sub
		}
	}
}

// rootDepth is the sub-agent budget of a top-level profile.
func (p *Policy) rootDepth(root *Profile) int {
	if root.Depth > 0 {
		return root.Depth
	}
	return p.RecursionDepth
}

// identityNarrows checks, where it can without a database, that child
// holds no ACL entry its nearest ancestor with an identity lacks.
func identityNarrows(ancestors []IdentitySpec, child IdentitySpec) string {
	if child.Kind == IdentityInherit {
		return ""
	}
	var parent IdentitySpec
	for i := len(ancestors) - 1; i >= 0; i-- {
		if ancestors[i].Kind != IdentityInherit {
			parent = ancestors[i]
			break
		}
	}
	switch parent.Kind {
	case IdentityMaster, IdentityInherit:
		return ""
	}
	if child.Kind == IdentityMaster {
		return "a sub-agent cannot use the master key under a scoped parent"
	}
	if child.Kind == IdentityAnonymous {
		return ""
	}
	switch parent.Kind {
	case IdentityAnonymous:
		return "the parent acts anonymously, so a sub-agent may only be anonymous too"
	case IdentityRoles:
		if child.Kind == IdentityUser || child.Kind == IdentitySession || child.Kind == IdentityToken {
			return "a user identity holds its own user id, which the parent's roles identity does not"
		}
		for _, r := range child.Roles {
			if !slices.Contains(parent.Roles, r) {
				return fmt.Sprintf("role %q is not held by the parent", r)
			}
		}
	}
	return "" // the rest is checked when the agent is built
}

// subOptions narrows a sub-agent to profile c; id is its resolved
// identity (nil: inherit).
func subOptions(c *Profile, id *agent.Identity) agent.SubOptions {
	perm := c.Permission
	return agent.SubOptions{
		Name: c.Name, Permission: &perm, Identity: id, TenantID: c.Tenant,
		Tools: c.Tools, Classes: c.Classes, Methods: c.Methods,
		Filters: cloneFilters(c.Filters), Depth: c.Depth, Introspection: c.Introspection,
	}
}
