package policy

// Agent profiles: identity, keys, tool, class and method filters, class
// filters and depth; and the check that no key selects two profiles.

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func (b *builder) profile(pol *Policy, name string, rp *rawProfile) *Profile {
	p := pth{"agents", name}
	if !validProfileName(name) {
		b.errAt(p, 0, "profile names are a letter or digit followed by letters, digits, '.', '_' or '-' (at most 64)")
		return nil
	}
	if rp == nil {
		rp = &rawProfile{}
	}
	prof := &Profile{Name: name, Parent: rp.Parent, Tenant: rp.Tenant, Introspection: rp.Introspection}
	if rp.Permission != "" {
		perm, err := agent.ParsePermission(rp.Permission)
		if err != nil {
			b.errAt(p.k("permission"), 0, "%v", err)
		}
		prof.Permission = perm
	}
	prof.Identity = b.identity(&rp.Identity, p.k("identity"))
	if prof.Identity.Kind == IdentityInherit && rp.Parent == "" && !(present(&rp.Identity) && !isNull(&rp.Identity)) {
		b.errAt(p, 0, "identity is required: master, anonymous, session, {user: <objectId or username>} or {roles: [<role names>]}")
	}
	if len(prof.Tenant) > 256 || strings.ContainsFunc(prof.Tenant, func(r rune) bool { return r < ' ' }) {
		b.errAt(p.k("tenant"), 0, "a tenant is at most 256 printable characters")
	}
	for i, rk := range rp.Keys {
		if k, ok := b.key(rk, p.k("keys").i(i)); ok {
			prof.Keys = append(prof.Keys, k)
		}
	}
	prof.Tools = b.nameFilter(&rp.Tools, p.k("tools"), b.checkTool)
	prof.Classes = b.nameFilter(&rp.Classes, p.k("classes"), func(at pth, n string) {
		if !parse.ValidClassName(n) {
			b.errAt(at, 0, "%q is not a valid class name", n)
		}
	})
	prof.Methods = b.nameFilter(&rp.Methods, p.k("methods"), func(at pth, n string) {
		class, meth, qualified := strings.Cut(n, ".")
		switch {
		case qualified && (!parse.ValidClassName(class) || !validMethodName(meth)),
			!qualified && !validMethodName(n):
			b.errAt(at, 0, `%q is not a method name (use "name" for any class or "Class.name")`, n)
		case !declaredMethod(pol.Catalog, n):
			b.warnAt(at, 0, "no declared method matches %q", n)
		}
	})
	if len(rp.Filters) > 0 {
		prof.Filters = agent.ClassFilters{}
	}
	for _, class := range slices.Sorted(maps.Keys(rp.Filters)) {
		fp := p.k("filters").k(class)
		if class != agent.DefaultFilterKey && !parse.ValidClassName(class) {
			b.errAt(fp, 0, "not a valid class name (or %s)", agent.DefaultFilterKey)
			continue
		}
		n := rp.Filters[class]
		if isNull(&n) {
			continue
		}
		if w := b.where(&n, fp); w != nil {
			prof.Filters[class] = w
		}
	}
	if prof.Introspection && prof.Permission != agent.Admin {
		b.errAt(p.k("introspection"), 0, "describe_agent and would_permit are admin tools: introspection needs permission: admin")
	}
	if rp.Depth != nil {
		switch d := *rp.Depth; {
		case d < 1:
			b.errAt(p.k("depth"), 0, "must be at least 1 (settings.recursion_depth: 0 allows no sub-agents at all)")
		case d > pol.RecursionDepth:
			b.errAt(p.k("depth"), 0, "%d exceeds settings.recursion_depth (%d); depth may only tighten it", d, pol.RecursionDepth)
		default:
			prof.Depth = d
		}
	}
	return prof
}

func declaredMethod(c *agent.Catalog, entry string) bool {
	if strings.Contains(entry, ".") {
		return c.Methods[entry] != nil
	}
	for _, m := range c.Methods {
		if m.Name == entry {
			return true
		}
	}
	return false
}

// remoteToolEntryRE is the form of a tool filter entry naming a remote
// agent's tool, "<type>-<id>__<tool>" (the names the federation gives
// them), or, with a star ending a prefix, all of an agent's tools
// ("<type>-<id>__*") or every agent of a type ("<type>-*").
// It is compiled when a policy names a remote tool, not at start-up.
var remoteToolEntryRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_]{1,32}-([A-Za-z0-9_-]*\*|[A-Za-z0-9_-]{1,64}__[A-Za-z0-9_-]{1,64})$`)
})

func (b *builder) checkTool(at pth, name string) {
	if strings.Contains(name, "-") {
		// Only remote tools' names hold a hyphen. Their agents come and
		// go, so only the entry's form can be checked here.
		if !remoteToolEntryRE().MatchString(name) {
			b.errAt(at, 0, "%q: a remote agent's tool is named TYPE-ID__TOOL; a star ends a prefix: TYPE-ID__* (all its tools), TYPE-* (every agent of the type)", name)
		}
		return
	}
	if b.opts.KnownTools == nil || slices.ContainsFunc(b.opts.KnownTools, func(k string) bool { return agent.EntryNames(name, k) }) {
		return
	}
	if b.strictTools {
		b.errAt(at, 0, "unknown tool %q", name)
	} else {
		b.warnAt(at, 0, "unknown tool %q", name)
	}
}

func (b *builder) identity(n *yaml.Node, p pth) IdentitySpec {
	const want = "want master, anonymous, session, token, {user: <objectId or username>}, {role: <name>} or {roles: [<names>]}"
	n = resolveAlias(n)
	if isNull(n) {
		return IdentitySpec{}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		switch k := IdentityKind(n.Value); k {
		case IdentityMaster, IdentityAnonymous, IdentitySession, IdentityToken:
			return IdentitySpec{Kind: k}
		}
		b.errAt(p, n.Line, "%s, not %q", want, n.Value)
	case yaml.MappingNode:
		if len(n.Content) != 2 {
			b.errAt(p, n.Line, "%s (one key)", want)
			return IdentitySpec{}
		}
		k, v := n.Content[0], resolveAlias(n.Content[1])
		switch k.Value {
		case "user":
			if v.Kind != yaml.ScalarNode || isNull(v) || v.Value == "" || len(v.Value) > 128 {
				b.errAt(p.k("user"), v.Line, "want a _User objectId or username")
				return IdentitySpec{}
			}
			return IdentitySpec{Kind: IdentityUser, User: v.Value}
		case "role", "roles":
			var roles []string
			switch {
			case k.Value == "role" && v.Kind == yaml.ScalarNode && !isNull(v):
				roles = []string{v.Value}
			case k.Value == "roles" && v.Kind == yaml.SequenceNode && len(v.Content) > 0:
				for _, e := range v.Content {
					e = resolveAlias(e)
					if e.Kind != yaml.ScalarNode || isNull(e) {
						roles = nil
						break
					}
					roles = append(roles, e.Value)
				}
			}
			if roles == nil {
				b.errAt(p.k(k.Value), v.Line, "want a role name (role:) or a non-empty list of role names (roles:)")
				return IdentitySpec{}
			}
			for _, r := range roles {
				if !validRoleName(r) {
					b.errAt(p.k(k.Value), v.Line, "%q is not a valid role name (letters, digits, '_', '-' and spaces)", r)
					return IdentitySpec{}
				}
			}
			slices.Sort(roles)
			return IdentitySpec{Kind: IdentityRoles, Roles: slices.Compact(roles)}
		default:
			b.errAt(p, k.Line, "%s; unknown key %q", want, k.Value)
		}
	default:
		b.errAt(p, n.Line, "%s", want)
	}
	return IdentitySpec{}
}

func (b *builder) key(rk *rawKey, p pth) (Key, bool) {
	if rk == nil {
		b.errAt(p, 0, "want one of {env: VAR}, {sha256: <hex digest>} or {key: <token>}")
		return Key{}, false
	}
	n := 0
	for _, s := range []string{rk.Env, rk.SHA256, rk.Key} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		b.errAt(p, 0, "want exactly one of env, sha256 or key")
		return Key{}, false
	}
	switch {
	case rk.Env != "":
		if !validEnvName(rk.Env) {
			b.errAt(p.k("env"), 0, "%q is not an environment variable name", rk.Env)
			return Key{}, false
		}
		k := Key{Source: "env", Env: rk.Env}
		if v, ok := b.opts.LookupEnv(rk.Env); ok && v != "" {
			k.digest, k.usable = sha256.Sum256([]byte(v)), true
		} else {
			b.warnAt(p.k("env"), 0, "environment variable %s is unset or empty; this key matches no token", rk.Env)
		}
		return k, true
	case rk.SHA256 != "":
		if !validHexDigest(rk.SHA256) {
			b.errAt(p.k("sha256"), 0, "want the 64 hex digits of the key's SHA-256 digest")
			return Key{}, false
		}
		k := Key{Source: "sha256", usable: true}
		_, _ = hex.Decode(k.digest[:], []byte(strings.ToLower(rk.SHA256)))
		return k, true
	}
	b.warnAt(p.k("key"), 0, "a literal key is readable by anyone who can read this file; prefer env or sha256")
	return Key{Source: "literal", digest: sha256.Sum256([]byte(rk.Key)), usable: true}, true
}

// nameFilter reads a list (the only list) or {only: [...], except: [...]};
// check is called for every name.
func (b *builder) nameFilter(n *yaml.Node, p pth, check func(pth, string)) agent.NameFilter {
	n = resolveAlias(n)
	var f agent.NameFilter
	if isNull(n) {
		return f
	}
	switch n.Kind {
	case yaml.SequenceNode:
		f.Only = b.names(n, p, check)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "only":
				if !isNull(v) {
					f.Only = b.names(v, p.k("only"), check)
				}
			case "except":
				if !isNull(v) {
					f.Except = b.names(v, p.k("except"), check)
				}
			default:
				b.errAt(p, k.Line, "unknown key %q (known keys: except, only)", k.Value)
			}
		}
	default:
		b.errAt(p, n.Line, "want a list of names (allowed names) or {only: [...], except: [...]}")
	}
	return f
}

func (b *builder) names(n *yaml.Node, p pth, check func(pth, string)) []string {
	n = resolveAlias(n)
	if n.Kind != yaml.SequenceNode {
		b.errAt(p, n.Line, "want a list of names")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		e = resolveAlias(e)
		if e.Kind != yaml.ScalarNode || isNull(e) || e.Value == "" {
			b.errAt(p.i(i), e.Line, "want a name")
			continue
		}
		check(p.i(i), e.Value)
		if !slices.Contains(out, e.Value) {
			out = append(out, e.Value)
		}
	}
	return out
}

// keyClashes refuses a token that would select two profiles.
func (b *builder) keyClashes(pol *Policy) {
	owner := map[[sha256.Size]byte]string{}
	for _, name := range pol.Names() {
		for i, k := range pol.Agents[name].Keys {
			if !k.usable {
				continue
			}
			if o, dup := owner[k.digest]; dup {
				if o == name {
					b.errAt(pth{"agents", name, "keys"}.i(i), 0, "the same key is listed twice")
				} else {
					b.errAt(pth{"agents", name, "keys"}.i(i), 0, "the same key also selects profile %q", o)
				}
				continue
			}
			owner[k.digest] = name
		}
	}
}
