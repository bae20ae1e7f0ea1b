package policy

// Tenant bypass rules: which agents without a tenant binding read every
// tenant of a class.

import (
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
				out.Agents = b.names(v, p.k("agents"), b.checkProfile)
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

// checkProfile refuses a bypass rule naming an agent profile the file
// does not declare, when it declares any (a file without profiles leaves
// the agents to the application that embeds parsemcp).
func (b *builder) checkProfile(p pth, name string) {
	if len(b.profiles) > 0 && !b.profiles[name] {
		b.errAt(p, 0, "no agent profile %q", name)
	}
}
