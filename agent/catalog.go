package agent

import (
	"slices"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/parse"
)

// Catalog is the operator's description of the data for agents: class
// metadata and declared methods, usually loaded from the policy file.
type Catalog struct {
	Classes map[string]*ClassMeta
	// Methods by "Class.name".
	Methods map[string]*Method
}

// Class returns the metadata of class, or nil.
func (c *Catalog) Class(class string) *ClassMeta {
	if c == nil {
		return nil
	}
	return c.Classes[class]
}

// Method returns the declared method class.name, or nil.
func (c *Catalog) Method(class, name string) *Method {
	if c == nil {
		return nil
	}
	return c.Methods[class+"."+name]
}

// MethodsOf returns the methods declared on class, sorted by name.
func (c *Catalog) MethodsOf(class string) []*Method {
	if c == nil {
		return nil
	}
	var out []*Method
	for _, m := range c.Methods {
		if m.Class == class {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *Method) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// Hidden modes of a class.
const (
	// HiddenExceptMaster hides a class from every agent but the master key.
	HiddenExceptMaster = "except_master"
	// HiddenAlways hides a class from every agent, the master key included.
	HiddenAlways = "always"
	// HiddenNever makes a class visible that parsemcp hides by default
	// (parse.DefaultHiddenClasses, ExceptMasterClasses): the policy said
	// `hidden: false` for it.
	HiddenNever = "never"
)

// ClassMeta is what the operator declares about one class.
type ClassMeta struct {
	Description string
	// Hidden is "", HiddenExceptMaster, HiddenAlways or HiddenNever.
	Hidden string
	// AgentFields, when non-nil, is the only fields agents see (objectId,
	// createdAt and updatedAt always stay).
	AgentFields []string
	// JoinFields narrows the class's objects when another class's query
	// includes them (a subset of AgentFields).
	JoinFields []string
	// LargeFields are left out of results unless asked for by name.
	LargeFields []string
	Fields      map[string]*FieldMeta
	// DefaultACL, when non-nil, is the ACL of the objects agents create in
	// the class without naming one: entries are "*", a user id, "{user}"
	// (the creating user) or "role:<name>", where the name may hold
	// "{tenant}" (the agent's tenant id) or "{tenant.<field>}" (a field of
	// the tenant object). See Scope.Create.
	DefaultACL map[string]parse.Perm
	// CanonicalFilter is the class's "valid rows" where-constraint, applied
	// to every read but id lookups unless the caller opts out.
	CanonicalFilter map[string]any
	Tenant          *TenantScope
	// AllowFullScan spares the class the full-scan refusal (the tools'
	// RefuseFullScans): a small lookup table a scan of which is cheap.
	AllowFullScan bool
}

// FieldMeta documents one field.
type FieldMeta struct {
	Description string
	Enum        []EnumValue
}

// EnumValue is one allowed value of a string field.
type EnumValue struct {
	Value       string `json:"value"`
	Description string `json:"description,omitempty"`
}

// TenantScope confines a class to the agent's tenant.
type TenantScope struct {
	// Field holds the tenant: a String field compared with the agent's
	// TenantID, or a Pointer whose objectId is compared with it.
	Field string
	// Bypass says which agents without a tenant binding read every tenant
	// of the class. An agent with a binding is always held to its tenant.
	Bypass TenantBypass
}

// TenantBypass are the rules by which an agent without a tenant binding
// reads every tenant of a class: any rule that matches bypasses. The
// zero value lets nobody bypass but the master key, which always does.
type TenantBypass struct {
	// Permission, when set, lets agents at that tier or above bypass
	// (Write or Admin; Readonly would be every agent and matches none).
	Permission *Permission
	// Agents lets the agents of these policy names (Policy.Name) bypass.
	Agents []string
}

// Method kinds: what a declared method does.
const (
	MethodUpdate = "update" // sets fields of one object (an instance method)
	MethodCreate = "create" // creates one object of the class
	MethodGo     = "go"     // runs a registered Go function
)

// Method is a declared agent method.
type Method struct {
	Class       string
	Name        string
	Description string
	Permission  Permission
	// Instance methods act on one object (object_id required).
	Instance bool
	// Parameters is the JSON schema of the arguments (an object schema).
	Parameters *jsonschema.Schema
	// Resolved is Parameters resolved for validation (set by the loader).
	Resolved       *jsonschema.Resolved
	SupportsDryRun bool
	// Destructive methods ask a human before running where the transport
	// can.
	Destructive bool
	Kind        string
	// Set is the field template of update and create methods: values are
	// literals, or {"$arg": "name"} for an argument.
	Set map[string]any
	// Func runs a MethodGo method.
	Func     MethodFunc
	FuncName string
}

// QualifiedName is "Class.name".
func (m *Method) QualifiedName() string { return m.Class + "." + m.Name }
