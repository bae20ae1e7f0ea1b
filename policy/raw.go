package policy

// The raw types: the policy file as the YAML decoder sees it, and how the
// decoder's errors name them.

import (
	"reflect"

	"go.yaml.in/yaml/v3"
)

// The file as the YAML decoder sees it. Polymorphic values (identity,
// filters, schemas, templates) stay yaml.Node and are read by the builder,
// which knows their path and line.
type rawPolicy struct {
	Settings rawSettings            `yaml:"settings"`
	Agents   map[string]*rawProfile `yaml:"agents"`
	Classes  map[string]*rawClass   `yaml:"classes"`
	Methods  map[string]*rawMethod  `yaml:"methods"`
	OAuth    *rawOAuth              `yaml:"oauth"`
}

type rawSettings struct {
	StrictToolFilter  bool   `yaml:"strict_tool_filter"`
	StrictClassFilter bool   `yaml:"strict_class_filter"`
	RecursionDepth    *int   `yaml:"recursion_depth"`
	DefaultAgent      string `yaml:"default_agent"`
}

type rawProfile struct {
	Permission string               `yaml:"permission"`
	Identity   yaml.Node            `yaml:"identity"`
	Keys       []*rawKey            `yaml:"keys"`
	Tenant     string               `yaml:"tenant"`
	Tools      yaml.Node            `yaml:"tools"`
	Classes    yaml.Node            `yaml:"classes"`
	Methods    yaml.Node            `yaml:"methods"`
	Filters    map[string]yaml.Node `yaml:"filters"`
	Parent     string               `yaml:"parent"`
	Depth      *int                 `yaml:"depth"`
	// Introspection exposes describe_agent and would_permit to the model.
	Introspection bool `yaml:"introspection"`
}

type rawKey struct {
	Env    string `yaml:"env"`
	SHA256 string `yaml:"sha256"`
	Key    string `yaml:"key"`
}

type rawClass struct {
	Description     string               `yaml:"description"`
	Hidden          yaml.Node            `yaml:"hidden"`
	AgentFields     []string             `yaml:"agent_fields"`
	JoinFields      []string             `yaml:"join_fields"`
	LargeFields     []string             `yaml:"large_fields"`
	Fields          map[string]*rawField `yaml:"fields"`
	CanonicalFilter yaml.Node            `yaml:"canonical_filter"`
	Tenant          *rawTenant           `yaml:"tenant"`
	DefaultACL      map[string]rawPerm   `yaml:"default_acl"`
	// AllowFullScan spares the class the full-scan refusal.
	AllowFullScan bool `yaml:"allow_full_scan"`
}

type rawPerm struct {
	Read  bool `yaml:"read"`
	Write bool `yaml:"write"`
}

type rawField struct {
	Description string      `yaml:"description"`
	Enum        []yaml.Node `yaml:"enum"`
}

type rawTenant struct {
	Field string `yaml:"field"`
	// Bypass is admin, or a mapping of rules (permission, agents).
	Bypass yaml.Node `yaml:"bypass"`
}

type rawMethod struct {
	Description    string    `yaml:"description"`
	Permission     string    `yaml:"permission"`
	Instance       *bool     `yaml:"instance"`
	Destructive    bool      `yaml:"destructive"`
	SupportsDryRun bool      `yaml:"supports_dry_run"`
	Parameters     yaml.Node `yaml:"parameters"`
	Update         yaml.Node `yaml:"update"`
	Create         yaml.Node `yaml:"create"`
	Go             string    `yaml:"go"`
}

// rawTypes names the raw types for the decoder's unknown-key errors.
var rawTypes = map[string]struct {
	what string
	t    reflect.Type
}{
	"policy.rawPolicy":   {"the policy file", reflect.TypeFor[rawPolicy]()},
	"policy.rawSettings": {"settings", reflect.TypeFor[rawSettings]()},
	"policy.rawProfile":  {"an agent profile", reflect.TypeFor[rawProfile]()},
	"policy.rawKey":      {"a key", reflect.TypeFor[rawKey]()},
	"policy.rawClass":    {"a class", reflect.TypeFor[rawClass]()},
	"policy.rawField":    {"a field", reflect.TypeFor[rawField]()},
	"policy.rawTenant":   {"a tenant scope", reflect.TypeFor[rawTenant]()},
	"policy.rawMethod":   {"a method", reflect.TypeFor[rawMethod]()},
	"policy.rawOAuth":    {"the oauth section", reflect.TypeFor[rawOAuth]()},
}

// rawShapes describe the raw types in the decoder's type errors: alone,
// and in a list or mapping.
var rawShapes = map[string][2]string{
	"rawPolicy":   {"a mapping (settings, agents, classes, methods)", "policies"},
	"rawSettings": {"settings (a mapping)", "settings"},
	"rawProfile":  {"an agent profile (a mapping)", "agent profiles"},
	"rawKey":      {"a key ({env: VAR}, {sha256: <hex>} or {key: <token>})", "keys ({env: VAR}, {sha256: <hex>} or {key: <token>})"},
	"rawClass":    {"class metadata (a mapping)", "class metadata"},
	"rawField":    {"field metadata ({description: ..., enum: [...]})", "field metadata ({description: ..., enum: [...]})"},
	"rawTenant":   {"a tenant scope ({field: ..., bypass: ...})", "tenant scopes"},
	"rawMethod":   {"a method (a mapping)", "methods"},
	"rawOAuth":    {"the oauth section (a mapping)", "oauth"},
}
