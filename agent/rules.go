package agent

import (
	"context"
	"fmt"
	"slices"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// and joins constraints, skipping nils.
func and(es ...query.Expr) query.Expr {
	var out []query.Expr
	for _, e := range es {
		if e != nil {
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return query.And{Exprs: out}
}

// rowFilter returns the operator's and the agent's row constraints on
// class: the canonical filter (unless byID or opted out), every layer of
// the agent's filters, and the tenant scope. raw is the class's full
// schema: operator filters may name fields the agent cannot.
func (s *Scope) rowFilter(ctx context.Context, raw parse.Schema, byID bool) (query.Expr, error) {
	class := raw.ClassName
	parser := query.Parser{Resolve: func(c string) (parse.Schema, error) { return s.st.Schema(ctx, c) }}
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
	return and(parts...), nil
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
		if s.principal().Master || (m.Tenant.BypassAdmin && s.agent.Permission >= Admin) {
			return nil, nil
		}
		return nil, &DeniedError{Kind: "tenant", Msg: fmt.Sprintf("class %s is scoped by tenant and this agent has no tenant binding", raw.ClassName)}
	}
	return query.Cmp{Path: path, Op: query.OpEq, Value: tenant}, nil
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
// merged over the default entry (its keys win). The default entry applies
// only to classes whose schema it fits (it names fields a class may lack;
// there it has nothing to constrain); the class's own entry must fit.
func (f ClassFilters) parse(parser query.Parser, raw parse.Schema) (query.Expr, error) {
	class := raw.ClassName
	own, def := f[class], f[DefaultFilterKey]
	if len(own) == 0 && len(def) == 0 {
		return nil, nil
	}
	if len(def) > 0 {
		if e, err := parser.Where(raw, f.forClass(class)); err == nil {
			return e, nil
		}
	}
	if len(own) == 0 {
		return nil, nil
	}
	e, err := parser.Where(raw, own)
	if err != nil {
		return nil, fmt.Errorf("agent filter on %s: %w", class, err)
	}
	return e, nil
}
