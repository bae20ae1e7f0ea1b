package agent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// rowFilter returns the operator's and the agent's row constraints on
// class: the canonical filter (unless byID or opted out), every layer of
// the agent's filters, and the tenant scope. raw is the class's full
// schema: operator filters may name fields the agent cannot.
func (s *Scope) rowFilter(ctx context.Context, raw parse.Schema, byID bool) (query.Expr, error) {
	class := raw.ClassName
	parser := query.Parser{Resolve: func(c string) (parse.Schema, error) { return s.raw(ctx, c) }}
	var parts []query.Expr
	m := s.meta(class)
	if m != nil && len(m.CanonicalFilter) > 0 && !byID && !s.noCanonical {
		e, err := parser.Where(raw, m.CanonicalFilter)
		if err != nil {
			return nil, fmt.Errorf("canonical filter of %s: %w", class, err)
		}
		parts = append(parts, e)
	}
	for _, layer := range s.agent.Policy.Filters {
		e, err := layer.parse(parser, raw)
		if err != nil {
			return nil, err
		}
		if e != nil {
			parts = append(parts, e)
		}
	}
	t, err := s.tenantRule(raw)
	if err != nil {
		return nil, err
	}
	parts = append(parts, t)
	return query.AndOf(parts...), nil
}

// tenantRule returns the tenant constraint of class, nil when the class has
// no tenant scope or the agent may bypass it, or a refusal when the agent
// has no tenant binding to apply.
func (s *Scope) tenantRule(raw parse.Schema) (query.Expr, error) {
	path, ok := s.tenantPath(raw)
	if !ok {
		return nil, nil
	}
	tenant := s.agent.Policy.TenantID
	if tenant == "" {
		m := s.meta(raw.ClassName)
		if s.principal().Master || m.Tenant.Bypass.Allows(s.agent) {
			return nil, nil
		}
		return nil, &DeniedError{Kind: "tenant", Msg: fmt.Sprintf("class %s is scoped by tenant and this agent has no tenant binding", raw.ClassName)}
	}
	return query.Cmp{Path: path, Op: query.OpEq, Value: tenant}, nil
}

// Allows reports whether a, an agent without a tenant binding, reads
// every tenant under the rules b: one of them matches a, and, as a
// sub-agent is never wider than its parent, one matches each agent above
// it. An agent with a binding never asks: it is held to its tenant.
func (b TenantBypass) Allows(a *Agent) bool {
	if a == nil {
		return false
	}
	for ; a != nil; a = a.Parent() {
		if !b.Covers(a.Policy.Name, a.Permission) {
			return false
		}
	}
	return true
}

// Covers reports whether one of the rules b matches an agent of policy
// name and tier, its parents aside (Allows asks it of each).
func (b TenantBypass) Covers(name string, tier Permission) bool {
	byTier := b.Permission != nil && *b.Permission > Readonly && tier >= *b.Permission
	return byTier || name != "" && slices.Contains(b.Agents, name)
}

// tenantPath returns the path of class's tenant field, if it declares one.
func (s *Scope) tenantPath(raw parse.Schema) (query.Path, bool) {
	m := s.meta(raw.ClassName)
	if m == nil || m.Tenant == nil {
		return query.Path{}, false
	}
	f, ok := raw.Fields[m.Tenant.Field]
	if !ok {
		// Declared on a field the class lacks: the policy loader refuses
		// this; fail closed if it happens anyway.
		return query.Path{Field: m.Tenant.Field, Type: parse.TypeString}, true
	}
	return query.Path{Field: m.Tenant.Field, Type: f.Type}, true
}

// checkSpoof refuses a caller constraint on the tenant field of class that
// names another tenant: only equality with the agent's own tenant (or an
// $in of just that value) may mention it. The tenant constraint is ANDed
// in any case; refusing makes an attempt to reach another tenant visible
// instead of silently empty.
func (s *Scope) checkSpoof(raw parse.Schema, e query.Expr) error {
	path, ok := s.tenantPath(raw)
	if !ok || e == nil || s.agent.Policy.TenantID == "" {
		return nil
	}
	tenant := s.agent.Policy.TenantID
	bad := func() error {
		return &DeniedError{Kind: "tenant_spoof", Msg: fmt.Sprintf("the constraint on %s.%s names another tenant than this agent's", raw.ClassName, path.Field)}
	}
	var walk func(query.Expr) error
	walk = func(e query.Expr) error {
		switch x := e.(type) {
		case query.And:
			return walkAll(x.Exprs, walk)
		case query.Or:
			return walkAll(x.Exprs, walk)
		case query.Nor:
			return walkAll(x.Exprs, walk)
		case query.Cmp:
			if x.Path.Field == path.Field && !(x.Op == query.OpEq && len(x.Path.Sub) == 0 && x.Value == tenant) {
				return bad()
			}
		case query.In:
			if x.Path.Field == path.Field && (x.Not || slices.ContainsFunc(x.Values, func(v any) bool { return v != tenant })) {
				return bad()
			}
		default:
			if p, ok := exprPath(e); ok && p.Field == path.Field {
				return bad()
			}
		}
		return nil
	}
	return walk(e)
}

func walkAll(es []query.Expr, f func(query.Expr) error) error {
	for _, e := range es {
		if err := f(e); err != nil {
			return err
		}
	}
	return nil
}

// exprPath returns the field path a single-field constraint tests.
func exprPath(e query.Expr) (query.Path, bool) {
	switch x := e.(type) {
	case query.All:
		return x.Path, true
	case query.Exists:
		return x.Path, true
	case query.Regex:
		return x.Path, true
	case query.Text:
		return x.Path, true
	case query.InQuery:
		return x.Path, true
	case query.ContainedBy:
		return x.Path, true
	case query.GeoBox:
		return x.Path, true
	case query.GeoNear:
		return x.Path, true
	case query.GeoPolygon:
		return x.Path, true
	case query.RelationHas:
		return query.Path{Field: x.Field}, true
	}
	return query.Path{}, false
}

// parse returns the layer's constraint on the class of raw: its own entry
// merged over the default entry (its keys win).
//
// The default entry names fields a class may lack (it is written once for
// every class); where the class has none of them, it has nothing to
// constrain and applies as if absent. Whether it applies is decided from
// the fields it names (defaultFits), never from whether it parses: a
// default that names the class's own fields but does not parse there (a
// value of the wrong type, a bad operator) is an error that refuses the
// class, like an error in the class's own entry, because skipping it
// would give the agent more rows than the operator wrote.
func (f ClassFilters) parse(parser query.Parser, raw parse.Schema) (query.Expr, error) {
	class := raw.ClassName
	own, def := f[class], f[DefaultFilterKey]
	if len(own) == 0 && len(def) == 0 {
		return nil, nil
	}
	where := own
	applies, err := f.DefaultApplies(raw)
	if err != nil {
		return nil, filterError(class, err)
	}
	if applies {
		where = f.forClass(class)
	}
	if len(where) == 0 {
		return nil, nil
	}
	e, err := parser.Where(raw, where)
	if err != nil {
		return nil, filterError(class, err)
	}
	return e, nil
}

// filterError refuses the agent's access to class: its filter there cannot
// be applied as written, and a filter is never dropped.
func filterError(class string, err error) error {
	return &DeniedError{Kind: "agent_filter", Msg: fmt.Sprintf("agent filter on %s: %v", class, err)}
}

// DefaultApplies reports whether the default entry applies to the class of
// raw (false when there is none), or why it can neither apply nor be
// skipped there (see defaultFits). The policy validator reports the same
// error at load time.
func (f ClassFilters) DefaultApplies(raw parse.Schema) (bool, error) {
	def := f[DefaultFilterKey]
	if len(def) == 0 {
		return false, nil
	}
	return defaultFits(def, f[raw.ClassName], raw)
}

// defaultFits decides whether the default entry def applies to the class
// of raw, whose own entry own overrides def's keys. The fields it names
// are the heads of its keys (meta for "meta.plan") at the top level and
// inside $or, $and and $nor, at any depth, leaving out the keys own
// overrides (they do not apply here). A constraint tied to no field of
// the class ($relatedTo, an unknown operator, an $or that is not an array
// of objects) counts as one the class has: it constrains any class, so
// the default is not skipped for it. Then:
//
//   - every named field is in the class (or it names none): the default
//     applies, and must parse;
//   - none is, and nothing else constrains: the default does not apply
//     (nothing to constrain);
//   - some are and some are not: an error. There is no fail-closed reading
//     of the part that names the missing fields: dropping a top-level key
//     drops a condition; dropping an $or branch or reading it as true
//     widens the $or (to everything), and reading a branch of $nor as
//     false widens the $nor; reading a missing field as null would make
//     {"region": {"$ne": "eu"}} match every row. Refusing the class makes
//     the operator say what they mean: an entry of the class's own that
//     overrides the keys naming its fields, or a default that names fields
//     classes have or lack together.
func defaultFits(def, own map[string]any, raw parse.Schema) (bool, error) {
	fields, other := whereFields(def, own)
	have := other
	var lack []string
	for _, name := range fields {
		if _, ok := raw.Fields[name]; ok {
			have = append(have, name)
		} else {
			lack = append(lack, name)
		}
	}
	switch {
	case len(lack) == 0:
		return true, nil
	case len(have) == 0:
		return false, nil
	}
	return false, fmt.Errorf("the %s filter names %s, which %s lacks, and %s, which constrain it: it can be neither applied nor skipped without widening what the agent sees (give %s an entry of its own that overrides %s)",
		DefaultFilterKey, quoteList(lack), raw.ClassName, quoteList(have), raw.ClassName, quoteList(topLevel(def, own, have)))
}

// whereFields lists, sorted and once each, the fields a where-constraint
// names: the heads of its keys at the top level (except those in skip)
// and inside $or, $and and $nor at any depth. other lists the operators
// that constrain without naming a field of this class ($relatedTo, an
// unknown operator, a logical operator whose value is not an array of
// constraint objects); what $inQuery or $select name is another class's.
func whereFields(m map[string]any, skip map[string]any) (fields, other []string) {
	add := func(list *[]string, s string) {
		if !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	var walk func(m map[string]any, top bool)
	walk = func(m map[string]any, top bool) {
		for k, v := range m {
			if _, over := skip[k]; top && over {
				continue
			}
			switch k {
			case "$or", "$and", "$nor":
				arr, ok := v.([]any)
				if !ok {
					add(&other, k)
				}
				for _, item := range arr {
					if sub, ok := item.(map[string]any); ok {
						walk(sub, false)
					} else {
						add(&other, k)
					}
				}
				continue
			}
			if strings.HasPrefix(k, "$") {
				add(&other, k)
				continue
			}
			head, _, _ := strings.Cut(k, ".")
			add(&fields, head)
		}
	}
	walk(m, true)
	slices.Sort(fields)
	slices.Sort(other)
	return fields, other
}

// topLevel lists the keys of def (not overridden by own) that name one of
// fields, directly or inside a logical operator: what a class's own entry
// would have to override.
func topLevel(def, own map[string]any, fields []string) []string {
	var out []string
	for k, v := range def {
		if _, over := own[k]; over {
			continue
		}
		fs, other := whereFields(map[string]any{k: v}, nil)
		for _, f := range append(fs, other...) {
			if slices.Contains(fields, f) {
				out = append(out, k)
				break
			}
		}
	}
	slices.Sort(out)
	return out
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
