package policy

// Tenant bypass rules: which agents without a tenant binding read every
// tenant of a class.

import (
	"maps"
	"slices"

	"go.yaml.in/yaml/v3"

	"github.com/parsemcp/parsemcp/agent"
)

const bypassWant = "want admin, or a mapping of rules {permission: write|admin, agents: [<profile names>]}"

// tenantBypass reads a tenant scope's bypass: absent or null (nobody
// bypasses), the shorthand admin ({permission: admin}), or a mapping of
// rules, any of which lets an agent without a tenant binding bypass.
func (b *builder) tenantBypass(n *yaml.Node, p pth) agent.TenantBypass {
	var out agent.TenantBypass
	n = resolveAlias(n)
	if !present(n) || isNull(n) {
		return out
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != "admin" {
			b.errAt(p, n.Line, "%s, not %q", bypassWant, n.Value)
			return out
		}
		admin := agent.Admin
		out.Permission = &admin
	case yaml.MappingNode:
		if len(n.Content) == 0 {
			b.errAt(p, n.Line, "%s; an empty mapping names no rule (leave bypass out for none)", bypassWant)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], resolveAlias(n.Content[i+1])
			switch k.Value {
			case "permission":
				out.Permission = b.bypassTier(v, p.k("permission"))
			case "agents":
				if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
					b.errAt(p.k("agents"), v.Line, "want a non-empty list of agent profile names")
					continue
				}
				out.Agents = b.bypassNames(v, p.k("agents"))
			default:
				b.errAt(p, k.Line, "unknown key %q in tenant bypass rules (known keys: agents, permission)", k.Value)
			}
		}
	default:
		b.errAt(p, n.Line, "%s", bypassWant)
	}
	return out
}

// bypassTier reads a bypass rule's permission: write or admin. readonly
// is refused: it would let every agent without a binding bypass.
func (b *builder) bypassTier(v *yaml.Node, p pth) *agent.Permission {
	if v.Kind == yaml.ScalarNode {
		switch v.Value {
		case "write":
			t := agent.Write
			return &t
		case "admin":
			t := agent.Admin
			return &t
		}
	}
	b.errAt(p, v.Line, "want write or admin (agents at that tier or above bypass), not %q", v.Value)
	return nil
}

// bypassNames reads a bypass rule's profile names: each a profile of the
// file (checkProfile), and listed once, so that a name's place in the
// list is its place in the file.
func (b *builder) bypassNames(n *yaml.Node, p pth) []string {
	var out []string
	for i, e := range n.Content {
		e = resolveAlias(e)
		switch {
		case e.Kind != yaml.ScalarNode || isNull(e) || e.Value == "":
			b.errAt(p.i(i), e.Line, "want a profile name")
		case slices.Contains(out, e.Value):
			b.errAt(p.i(i), e.Line, "%q listed twice", e.Value)
		default:
			b.checkProfile(p.i(i), e.Value)
		}
		out = append(out, e.Value)
	}
	return out
}

// checkProfile refuses a bypass rule naming an agent profile the file
// does not declare, when it declares any (a file without profiles leaves
// the agents to the application that embeds parsemcp).
func (b *builder) checkProfile(p pth, name string) {
	if len(b.profiles) > 0 && !b.profiles[name] {
		b.errAt(p, 0, "no agent profile %q", name)
	}
}

// bypassReach warns about a profile a class's bypass rules name but that
// they never let through: one bound to a tenant (the rules are asked only
// for agents without one), or a sub-agent whose parent chain they do not
// cover (a sub-agent reaches no further than its parent).
func (b *builder) bypassReach(pol *Policy) {
	for _, class := range slices.Sorted(maps.Keys(pol.Catalog.Classes)) {
		ts := pol.Catalog.Classes[class].Tenant
		if ts == nil {
			continue
		}
		for i, name := range ts.Bypass.Agents {
			p := pth{"classes", class, "tenant", "bypass", "agents"}.i(i)
			prof := pol.Agents[name]
			if prof == nil {
				continue // an error already
			}
			if tenant := pol.tenantOf(prof); tenant != "" {
				b.warnAt(p, 0, "profile %q is bound to tenant %q, and a binding is never bypassed", name, tenant)
				continue
			}
			for cur, seen := pol.Agents[prof.Parent], 0; cur != nil && seen < 64; cur, seen = pol.Agents[cur.Parent], seen+1 {
				if !ts.Bypass.Covers(cur.Name, cur.Permission) {
					b.warnAt(p, 0, "sub-agent profile %q never bypasses: no rule covers its parent %q", name, cur.Name)
					break
				}
			}
		}
	}
}

// tenantOf is the tenant a profile is bound to: its own, or the nearest
// parent's.
func (p *Policy) tenantOf(prof *Profile) string {
	for seen := 0; prof != nil && seen < 64; prof, seen = p.Agents[prof.Parent], seen+1 {
		if prof.Tenant != "" {
			return prof.Tenant
		}
	}
	return ""
}
