package agent

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/parsemcp/parsemcp/parse"
)

// Verdict is WouldPermit's answer. Reason uses the audit vocabulary:
// permission_tier, operator_only, tool_filtered, env_gate, hidden_class, class_filter,
// unknown, clp, tenant, method_filtered, unknown_method.
type Verdict struct {
	Allowed  bool   `json:"allowed"`
	Reason   string `json:"reason,omitempty"`
	DeniedAt string `json:"denied_at,omitempty"`
	Message  string `json:"message,omitempty"`
}

// WouldPermit judges a call of tool on class (and, for call_method, of
// method) the way dispatch would, without running it.
func (s *Scope) WouldPermit(ctx context.Context, t ToolInfo, gates Gates, class, method string) Verdict {
	a := s.agent
	var refusal *DeniedError
	if err := a.MayCall(t, gates); errors.As(err, &refusal) {
		v := Verdict{Reason: refusal.Kind, DeniedAt: mayCallDeniedAt[refusal.Kind], Message: refusal.Msg}
		if refusal.Kind == "tool_filtered" {
			v.Message = "" // the filter's contents are the operator's
		}
		return v
	}
	if class == "" {
		return Verdict{Allowed: true}
	}
	return s.ClassVerdict(ctx, t.Op, gates, class, method)
}

// ClassVerdict is the class-level part of WouldPermit: may the agent
// perform op on class (through method, when one is named), judged without
// touching data.
func (s *Scope) ClassVerdict(ctx context.Context, op parse.Op, gates Gates, class, method string) Verdict {
	a := s.agent
	if method != "" {
		m := a.Policy.Catalog.Method(class, method)
		if m == nil {
			return Verdict{Reason: "unknown_method", DeniedAt: "call_method"}
		}
		if !a.Policy.Methods.AllowsMethod(class, method) {
			return Verdict{Reason: "method_filtered", DeniedAt: "methods_filter"}
		}
		if !a.Can(m.Permission) {
			return Verdict{Reason: "permission_tier", DeniedAt: "method_permission"}
		}
		if err := gates.Check(MethodGate(m), "method "+m.QualifiedName()); err != nil {
			return Verdict{Reason: "env_gate", DeniedAt: "env_gate", Message: err.Error()}
		}
		op = MethodOp(m)
	}
	var err error
	switch op {
	case "": // schema tools: the class need only be visible
		_, err = s.Schema(ctx, class)
	case parse.OpAddField: // schema operations: the class need not exist
		err = s.checkSchemaOp(ctx, class, false)
	default:
		_, err = s.govern(ctx, class, op, false, nil)
	}
	if err == nil {
		return Verdict{Allowed: true}
	}
	var ce *ClassError
	var de *DeniedError
	switch {
	case errors.As(err, &ce):
		return Verdict{Reason: ce.Kind, DeniedAt: "class_access", Message: ce.Error()}
	case errors.As(err, &de):
		return Verdict{Reason: de.Kind, DeniedAt: "class_access", Message: de.Msg}
	case errors.As(err, new(*InvalidError)):
		return Verdict{Reason: "invalid", DeniedAt: "class_access", Message: err.Error()}
	}
	return Verdict{Reason: "error", Message: err.Error()}
}

// MethodGate is the operator gate a declared method needs.
func MethodGate(m *Method) GateKind {
	if m.Permission >= Admin {
		return GateAdminCall
	}
	if m.Permission >= Write {
		return GateMethod
	}
	return GateNone
}

// MethodOp is the class-level operation a declared method is checked
// against: readonly methods find, write methods update (create for a
// create method), admin methods delete.
func MethodOp(m *Method) parse.Op {
	switch {
	case m.Permission >= Admin:
		return parse.OpDelete
	case m.Kind == MethodCreate:
		return parse.OpCreate
	case m.Permission >= Write:
		return parse.OpUpdate
	}
	return parse.OpFind
}

// Description is Describe's answer: every layer that gates the agent.
// Filter values and credentials never appear in it.
type Description struct {
	AgentID       string                      `json:"agent_id"`
	Profile       string                      `json:"profile,omitempty"`
	Permission    string                      `json:"permission"`
	Auth          map[string]any              `json:"auth"`
	TenantID      string                      `json:"tenant_id,omitempty"`
	Classes       NameFilter                  `json:"classes"`
	Tools         map[string]any              `json:"tools"`
	Methods       NameFilter                  `json:"methods"`
	Filters       map[string][]string         `json:"filters"`
	HiddenClasses []string                    `json:"hidden_classes"`
	PerClass      map[string]ClassDescription `json:"per_class"`
	Gates         Gates                       `json:"env_gates"`
	SubAgentDepth int                         `json:"sub_agent_depth"`
	CorrelationID string                      `json:"correlation_id,omitempty"`
}

// ClassDescription is DescribeFor's answer.
type ClassDescription struct {
	ClassName       string         `json:"class_name"`
	Accessible      string         `json:"accessible"` // "permitted" or the denial kind
	AgentFields     []string       `json:"agent_fields,omitempty"`
	JoinFields      []string       `json:"join_fields,omitempty"`
	LargeFields     []string       `json:"large_fields,omitempty"`
	CanonicalFilter map[string]any `json:"canonical_filter,omitempty"`
	// AgentFilterFields names the fields the agent's filters constrain
	// (never their values: FilterFor has those).
	AgentFilterFields []string       `json:"agent_filter_fields,omitempty"`
	TenantScope       map[string]any `json:"tenant_scope,omitempty"`
	Methods           []string       `json:"methods,omitempty"`
	// AllowFullScan: the policy spares the class the full-scan refusal.
	AllowFullScan bool `json:"allow_full_scan,omitempty"`
}

// describeTenant is a class's tenant scope as this agent meets it: the
// field, the agent's tenant, the bypass rules and whether they let this
// agent read every tenant.
func (s *Scope) describeTenant(t *TenantScope) map[string]any {
	rules := map[string]any{}
	if p := t.Bypass.Permission; p != nil {
		rules["permission"] = p.String()
	}
	if len(t.Bypass.Agents) > 0 {
		rules["agents"] = slices.Clone(t.Bypass.Agents)
	}
	tenant := s.agent.Policy.TenantID
	bypasses := tenant == "" && (s.principal().Master || t.Bypass.Allows(s.agent))
	return map[string]any{"field": t.Field, "value": tenant, "bypass": rules, "bypasses": bypasses}
}

// Describe lists every layer gating the agent. tools are the registered
// tools (for the effective tool list).
func (s *Scope) Describe(ctx context.Context, tools []ToolInfo, gates Gates) (Description, error) {
	a := s.agent
	d := Description{
		AgentID:       a.ID,
		Profile:       a.Policy.Name,
		Permission:    a.Permission.String(),
		Auth:          map[string]any{"mode": string(a.Identity.Mode)},
		TenantID:      a.Policy.TenantID,
		Classes:       a.Policy.Classes,
		Methods:       a.Policy.Methods,
		Filters:       map[string][]string{},
		PerClass:      map[string]ClassDescription{},
		Gates:         gates,
		SubAgentDepth: a.Depth(),
		CorrelationID: a.CorrelationID,
	}
	if a.Identity.UserID != "" {
		d.Auth["user_id"] = a.Identity.UserID
	}
	if len(a.Identity.Roles) > 0 {
		d.Auth["roles"] = a.Identity.Roles
	}
	var effective []string
	for _, t := range tools {
		if a.MayCall(t, gates) == nil {
			effective = append(effective, t.Name)
		}
	}
	d.Tools = map[string]any{"only": a.Policy.Tools.Only, "except": a.Policy.Tools.Except, "effective": effective, "introspection": a.Policy.Introspection}
	for _, layer := range a.Policy.Filters {
		for class, f := range layer {
			for field := range f {
				if !slices.Contains(d.Filters[class], field) {
					d.Filters[class] = append(d.Filters[class], field)
				}
			}
		}
	}
	for class := range d.Filters {
		slices.Sort(d.Filters[class])
	}
	d.HiddenClasses = s.hiddenClasses()
	names, err := s.ClassNames(ctx)
	if err != nil {
		return Description{}, err
	}
	for _, n := range names {
		d.PerClass[n] = s.DescribeFor(ctx, n)
	}
	return d, nil
}

// DescribeFor describes what governs the agent on one class.
func (s *Scope) DescribeFor(ctx context.Context, class string) ClassDescription {
	d := ClassDescription{ClassName: class, Accessible: "permitted"}
	if _, err := s.Schema(ctx, class); err != nil {
		var ce *ClassError
		if errors.As(err, &ce) {
			d.Accessible = ce.Kind
		} else {
			d.Accessible = "error"
		}
		return d
	}
	if m := s.meta(class); m != nil {
		d.AgentFields = m.AgentFields
		d.JoinFields = m.JoinFields
		d.LargeFields = m.LargeFields
		if !s.noCanonical {
			d.CanonicalFilter = maps.Clone(m.CanonicalFilter)
		}
		if m.Tenant != nil {
			d.TenantScope = s.describeTenant(m.Tenant)
		}
		d.AllowFullScan = m.AllowFullScan
	}
	for _, f := range s.agent.FilterFor(class) {
		for field := range f {
			if !slices.Contains(d.AgentFilterFields, field) {
				d.AgentFilterFields = append(d.AgentFilterFields, field)
			}
		}
	}
	slices.Sort(d.AgentFilterFields)
	for _, m := range s.agent.Policy.Catalog.MethodsOf(class) {
		if s.agent.Can(m.Permission) && s.agent.Policy.Methods.AllowsMethod(class, m.Name) {
			d.Methods = append(d.Methods, m.Name)
		}
	}
	return d
}
