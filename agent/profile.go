package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// NameFilter narrows a set of names (tools, classes or methods): Only, when
// non-nil, lists the names allowed, and Except the names refused. A name
// must pass both. The zero value allows everything.
//
// An entry ending in "*" is a prefix: it names every name that starts with
// what precedes the star. Tool filters use it for the tools of a remote
// agent, which the federation names "<type>-<id>__<tool>":
// "device-d1__*" is every tool agent device/d1 offers, now or later.
// (Class and method names cannot hold a star, so their filters hold none.)
type NameFilter struct {
	Only   []string `json:"only,omitempty" yaml:"only,omitempty"`
	Except []string `json:"except,omitempty" yaml:"except,omitempty"`
}

// IsZero reports whether f allows everything.
func (f NameFilter) IsZero() bool { return f.Only == nil && len(f.Except) == 0 }

// Allows reports whether name passes f.
func (f NameFilter) Allows(name string) bool {
	if f.Only != nil && !matchesAny(f.Only, name) {
		return false
	}
	return !matchesAny(f.Except, name)
}

// matchesAny reports whether an entry of list names name.
func matchesAny(list []string, name string) bool {
	return slices.ContainsFunc(list, func(e string) bool { return EntryNames(e, name) })
}

// EntryNames reports whether a filter entry names name: exactly, or, for
// an entry ending in "*", as a prefix ("device-*" names
// "device-thermo__read_temperature"). It is the one rule of every name
// filter; the policy loader checks entries with it too.
func EntryNames(entry, name string) bool {
	if prefix, ok := strings.CutSuffix(entry, "*"); ok {
		return strings.HasPrefix(name, prefix)
	}
	return entry == name
}

// covers reports whether entry a names everything entry b names.
func covers(a, b string) bool {
	pa, aPrefix := strings.CutSuffix(a, "*")
	if !aPrefix {
		return a == b
	}
	return strings.HasPrefix(strings.TrimSuffix(b, "*"), pa)
}

// intersect returns the entry naming what both a and b name: the
// narrower one, when one covers the other (two prefixes neither of which
// covers the other, or two different names, share nothing).
func intersect(a, b string) (string, bool) {
	switch {
	case covers(a, b):
		return b, true
	case covers(b, a):
		return a, true
	}
	return "", false
}

// AllowsMethod reports whether the method class.name passes f, whose
// entries are bare method names (any class) or qualified "Class.method".
func (f NameFilter) AllowsMethod(class, name string) bool {
	q := class + "." + name
	if f.Only != nil && !slices.Contains(f.Only, name) && !slices.Contains(f.Only, q) {
		return false
	}
	return !slices.Contains(f.Except, name) && !slices.Contains(f.Except, q)
}

// narrow returns the filter that allows what both f and child allow: the
// Only lists intersect, the Except lists unite. A child Only list that
// shares nothing with f's is an error, not a silently empty agent.
func (f NameFilter) narrow(child NameFilter, what string) (NameFilter, error) {
	out := NameFilter{Except: slices.Clone(f.Except)}
	for _, e := range child.Except {
		if !slices.Contains(out.Except, e) {
			out.Except = append(out.Except, e)
		}
	}
	switch {
	case f.Only == nil:
		out.Only = slices.Clone(child.Only)
	case child.Only == nil:
		out.Only = slices.Clone(f.Only)
	default:
		out.Only = []string{}
		for _, n := range child.Only {
			for _, p := range f.Only {
				if e, ok := intersect(p, n); ok && !slices.Contains(out.Only, e) {
					out.Only = append(out.Only, e)
				}
			}
		}
		if len(out.Only) == 0 {
			return NameFilter{}, fmt.Errorf("sub-agent %s filter %v shares nothing with its parent's %v", what, child.Only, f.Only)
		}
	}
	return out, nil
}

// DefaultFilterKey is the key of a ClassFilters entry that applies to every
// class.
const DefaultFilterKey = ":default"

// ClassFilters maps a class name (or DefaultFilterKey) to a where
// constraint in Parse's REST form, AND-merged into every query the agent
// runs on that class.
type ClassFilters map[string]map[string]any

// forClass returns the class's entry merged over the default entry (the
// class's keys win on conflicts), or nil.
func (f ClassFilters) forClass(class string) map[string]any {
	c, d := f[class], f[DefaultFilterKey]
	if len(c) == 0 && len(d) == 0 {
		return nil
	}
	out := maps.Clone(d)
	if out == nil {
		out = map[string]any{}
	}
	maps.Copy(out, c)
	return out
}

// DefaultRecursionDepth is how many levels of sub-agents an agent may
// create below itself unless told otherwise.
const DefaultRecursionDepth = 4

// ErrRecursionLimit is returned when a sub-agent would exceed the depth cap.
var ErrRecursionLimit = errors.New("sub-agent recursion limit reached")

// Policy holds what an agent is restricted to beyond its identity and tier.
// The zero value restricts nothing but the operator-only tools.
type Policy struct {
	// Name of the profile the agent was built from (for audit and describe).
	Name string
	// TenantID binds the agent to one tenant of classes that declare a
	// tenant scope.
	TenantID string
	Tools    NameFilter
	Classes  NameFilter
	Methods  NameFilter
	// Filters are AND-composed layers (a sub-agent adds one on top of its
	// parent's): every layer's filter for a class applies.
	Filters []ClassFilters
	// Catalog is the operator's class metadata and declared methods (nil:
	// none).
	Catalog *Catalog
	// Introspection exposes the operator-only tools (ToolInfo.OperatorOnly:
	// describe_agent, would_permit) to the agent's model; their tier
	// (admin) still applies. Off, they are absent from its listings and
	// refused on call, as the reference guide keeps them operator-side.
	Introspection bool
}

// SubOptions narrows a sub-agent. Zero fields inherit.
type SubOptions struct {
	Name string
	// Permission, when set, must not exceed the parent's. Unset means
	// readonly, the safe default.
	Permission *Permission
	// Identity, when set, must hold no ACL entry the parent lacks (unless
	// the parent is the master key). Unset inherits the parent's.
	Identity *Identity
	// TenantID, when set, must equal the parent's binding if it has one.
	TenantID string
	Tools    NameFilter
	Classes  NameFilter
	Methods  NameFilter
	Filters  ClassFilters
	// Depth, when positive and below the inherited budget, tightens it.
	Depth int
	// Introspection keeps the parent's Policy.Introspection for the
	// sub-agent (it is off otherwise); a parent without it cannot give it.
	Introspection bool
}

// Sub returns a sub-agent of a: it inherits a's identity, tenant,
// correlation id and rate-limit principal, and can only be narrower.
func (a *Agent) Sub(o SubOptions) (*Agent, error) {
	if a.depth() <= 0 {
		return nil, fmt.Errorf("%w (agent %s may create no further sub-agents)", ErrRecursionLimit, a.ID)
	}
	child := &Agent{
		ID:            randomID(),
		Permission:    Readonly,
		Identity:      a.Identity,
		CorrelationID: a.CorrelationID,
		Token:         a.Token,
		parent:        a,
		budget:        a.depth() - 1,
	}
	if o.Depth > 0 && o.Depth < child.budget {
		child.budget = o.Depth
	}
	if o.Permission != nil {
		if *o.Permission > a.Permission {
			return nil, fmt.Errorf("sub-agent permission %s exceeds its parent's %s", *o.Permission, a.Permission)
		}
		child.Permission = *o.Permission
	}
	if o.Identity != nil {
		if err := subsetIdentity(a.Identity, *o.Identity); err != nil {
			return nil, err
		}
		child.Identity = *o.Identity
	}
	p := a.Policy
	p.Name = o.Name
	if p.Name == "" {
		p.Name = a.Policy.Name
	}
	if o.TenantID != "" {
		if a.Policy.TenantID != "" && o.TenantID != a.Policy.TenantID {
			return nil, fmt.Errorf("sub-agent tenant %q differs from its parent's", o.TenantID)
		}
		p.TenantID = o.TenantID
	}
	var err error
	if p.Tools, err = a.Policy.Tools.narrow(o.Tools, "tools"); err != nil {
		return nil, err
	}
	if p.Classes, err = a.Policy.Classes.narrow(o.Classes, "classes"); err != nil {
		return nil, err
	}
	if p.Methods, err = a.Policy.Methods.narrow(o.Methods, "methods"); err != nil {
		return nil, err
	}
	p.Filters = slices.Clone(a.Policy.Filters)
	if len(o.Filters) > 0 {
		p.Filters = append(p.Filters, o.Filters)
	}
	if o.Introspection && !a.Policy.Introspection {
		return nil, errors.New("sub-agent introspection exceeds its parent's")
	}
	p.Introspection = o.Introspection
	child.Policy = p
	return child, nil
}

// subsetIdentity refuses a child identity that holds an ACL entry the
// parent does not: a sub-agent never reaches rows its parent cannot.
func subsetIdentity(parent, child Identity) error {
	pp, cp := parent.Principal(), child.Principal()
	if pp.Master {
		return nil
	}
	if cp.Master {
		return errors.New("sub-agent cannot use the master key under a scoped parent")
	}
	for _, e := range cp.Entries {
		if !slices.Contains(pp.Entries, e) {
			return fmt.Errorf("sub-agent identity holds %q, which its parent does not", e)
		}
	}
	return nil
}

func (a *Agent) depth() int {
	if a.parent == nil && a.budget == 0 {
		return DefaultRecursionDepth
	}
	return a.budget
}

// Depth returns how many further levels of sub-agents a may create.
func (a *Agent) Depth() int { return a.depth() }

// SetDepth sets a top-level agent's sub-agent budget (default 4).
func (a *Agent) SetDepth(n int) {
	if n <= 0 {
		n = -1 // no sub-agents at all; budget 0 means "default"
	}
	a.budget = n
}

// Parent returns the agent that created a, or nil.
func (a *Agent) Parent() *Agent { return a.parent }

// FilterFor returns the agent's filters for class, one where-constraint
// per layer (AND-composed), or nil when none applies.
func (a *Agent) FilterFor(class string) []map[string]any {
	var out []map[string]any
	for _, layer := range a.Policy.Filters {
		if f := layer.forClass(class); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// Gates are the operator's process-wide switches for writes, set once at
// start (parsemcp: the --allow-* flags and their PARSEMCP_ALLOW_*
// variables).
type Gates struct {
	WriteTools bool // PARSEMCP_ALLOW_WRITE_TOOLS: declared methods of permission write
	SchemaOps  bool // PARSEMCP_ALLOW_SCHEMA_OPS: declared methods of permission admin
	RawCRUD    bool // PARSEMCP_ALLOW_RAW_CRUD: create/update/delete_object (with WriteTools)
	RawSchema  bool // PARSEMCP_ALLOW_RAW_SCHEMA: create/delete_class (with SchemaOps)
}

// The environment variables behind Gates, named in refusals.
const (
	EnvAllowWriteTools = "PARSEMCP_ALLOW_WRITE_TOOLS"
	EnvAllowSchemaOps  = "PARSEMCP_ALLOW_SCHEMA_OPS"
	EnvAllowRawCRUD    = "PARSEMCP_ALLOW_RAW_CRUD"
	EnvAllowRawSchema  = "PARSEMCP_ALLOW_RAW_SCHEMA"
)

// GateOpen reads one gate's value: 1, true, yes or on (any case) open it;
// anything else, the empty string included, leaves it closed.
func GateOpen(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// GateKind says which gates a write path needs.
type GateKind int

// The write paths.
const (
	GateNone      GateKind = iota
	GateMethod             // a declared method of permission write
	GateAdminCall          // a declared method of permission admin
	GateRawCRUD            // create/update/delete_object
	GateRawSchema          // create/delete_class
)

// Check returns nil if the gates open path k, or an error naming every
// variable still unset.
func (g Gates) Check(k GateKind, what string) error {
	var missing []string
	need := func(ok bool, env string) {
		if !ok {
			missing = append(missing, env+"=true")
		}
	}
	hint := ""
	switch k {
	case GateNone:
		return nil
	case GateMethod:
		need(g.WriteTools, EnvAllowWriteTools)
	case GateAdminCall:
		need(g.SchemaOps, EnvAllowSchemaOps)
	case GateRawCRUD:
		need(g.WriteTools, EnvAllowWriteTools)
		need(g.RawCRUD, EnvAllowRawCRUD)
		hint = " Prefer declaring a method on the class in the policy file: an intent-based write needs only " + EnvAllowWriteTools + "."
	case GateRawSchema:
		need(g.SchemaOps, EnvAllowSchemaOps)
		need(g.RawSchema, EnvAllowRawSchema)
	}
	if len(missing) == 0 {
		return nil
	}
	return &DeniedError{Kind: "env_gate", Msg: fmt.Sprintf("%s is disabled by the operator. Required: %s.%s", what, strings.Join(missing, " AND "), hint)}
}

// MethodCall is one invocation of a declared method backed by Go code.
type MethodCall struct {
	Scope    *Scope
	Method   *Method
	ObjectID string         // instance methods
	Args     map[string]any // validated against the method's parameters
	DryRun   bool           // only for methods declaring SupportsDryRun
}

// MethodFunc implements a declared method in Go. It must write only
// through call.Scope so the agent's rules apply.
type MethodFunc func(ctx context.Context, call *MethodCall) (any, error)
