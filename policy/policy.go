// Package policy loads the operator's policy file: agent profiles (who an
// agent acts as, its tier, its tool/class/method filters, the bearer keys
// that select it), class metadata (descriptions, field allowlists, tenant
// scopes, canonical filters) and declared methods. One YAML file holds all
// three; docs/POLICY.md describes the format.
//
// Loading is two steps. Load (or Parse) reads the file and runs every check
// that needs no database: unknown keys, names, permissions, filters that
// use forbidden operators, parent chains, method templates. Validate then
// checks the file against the store's real schemas (classes and fields
// exist, filters parse). Agent builds a fresh agent.Agent for a profile, and
// Select picks the profile of an HTTP request from its bearer token.
package policy

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
)

// Settings are the file's process-wide switches.
type Settings struct {
	// StrictToolFilter makes a tool name in a tools filter that is not in
	// Options.KnownTools a load error (otherwise a warning).
	StrictToolFilter bool
	// StrictClassFilter makes a class named in a classes.only list that the
	// store does not have an error at Validate (otherwise a warning).
	StrictClassFilter bool
	// RecursionDepth is the sub-agent budget of a top-level agent built
	// from a profile without its own depth (agent.DefaultRecursionDepth
	// when the file does not set it; 0 allows no sub-agents).
	RecursionDepth int
	// DefaultAgent is the profile of requests that carry no bearer token
	// ("" refuses them).
	DefaultAgent string
}

// Policy is a loaded policy file.
type Policy struct {
	Settings
	// Agents are the profiles, by name.
	Agents map[string]*Profile
	// Catalog holds the class metadata and the declared methods; every
	// agent built by Agent shares it.
	Catalog *agent.Catalog
	// Warnings are problems that do not stop the policy from loading
	// (literal keys, unset key variables, unknown names in non-strict
	// mode). Validate may add more. They never contain key material.
	Warnings []string
	// OAuth maps access tokens' claims to profiles and identities (nil:
	// the file has no oauth section).
	OAuth *OAuth

	src *source
}

// Profile is one agent profile.
type Profile struct {
	Name       string
	Permission agent.Permission
	// Identity is who the agent acts as; a sub-agent profile without one
	// inherits its parent's.
	Identity IdentitySpec
	// Keys are the bearer tokens that select the profile over HTTP.
	Keys    []Key
	Tenant  string
	Tools   agent.NameFilter
	Classes agent.NameFilter
	Methods agent.NameFilter
	Filters agent.ClassFilters
	// Parent names the profile this one is a sub-agent of ("" for none).
	Parent string
	// Depth, when positive, tightens the sub-agent budget (0: inherit the
	// parent's, or Settings.RecursionDepth for a top-level profile).
	Depth int
	// Introspection exposes the operator-only tools (describe_agent,
	// would_permit) to the profile's model: agent.Policy.Introspection.
	Introspection bool
}

// IdentityKind says how a profile's identity is established.
type IdentityKind string

// The identity kinds.
const (
	// IdentityInherit: no identity given (only for sub-agent profiles,
	// which then act as their parent).
	IdentityInherit IdentityKind = ""
	// IdentityMaster acts with the master key: every row.
	IdentityMaster IdentityKind = "master"
	// IdentityAnonymous sees public rows only.
	IdentityAnonymous IdentityKind = "anonymous"
	// IdentityUser acts as one _User (by objectId or username), with its
	// roles resolved from _Role.
	IdentityUser IdentityKind = "user"
	// IdentityRoles acts as a holder of the named roles (and of the roles
	// that inherit from them), with no user id.
	IdentityRoles IdentityKind = "roles"
	// IdentitySession acts as the user of the request's Parse session
	// token (header X-Parse-Session-Token); a request without one is
	// refused.
	IdentitySession IdentityKind = "session"
)

// IdentitySpec is a profile's identity as written in the file; Agent
// resolves it against the store.
type IdentitySpec struct {
	Kind  IdentityKind
	User  string   // IdentityUser: an objectId or a username
	Roles []string // IdentityRoles
}

// SessionHeader is the request header that carries a Parse session token.
const SessionHeader = "X-Parse-Session-Token"

// Key is one bearer token that selects a profile. It holds only the
// SHA-256 digest of the token; String never shows key material.
type Key struct {
	// Source is "env" (the token is in an environment variable, read at
	// load time), "sha256" (the file holds the digest) or "literal" (the
	// file holds the token itself).
	Source string
	// Env is the variable name of an "env" key.
	Env string

	digest [sha256.Size]byte
	usable bool // false: an env key whose variable was unset or empty
}

// Usable reports whether the key can match a token (an env key whose
// variable was unset or empty at load time cannot).
func (k Key) Usable() bool { return k.usable }

func (k Key) String() string {
	switch k.Source {
	case "env":
		return "env " + k.Env
	case "sha256":
		return "sha256 digest"
	}
	return "literal key"
}

// Options configure Load and Parse.
type Options struct {
	// Name identifies the file in messages (Load uses the path).
	Name string
	// Funcs are the Go implementations that methods declared with go:
	// name.
	Funcs map[string]agent.MethodFunc
	// KnownTools are the tool names a tools filter may name. With
	// settings.strict_tool_filter an unknown name is an error, otherwise a
	// warning; nil skips the check.
	KnownTools []string
	// LookupEnv reads the variables named by env keys (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
}

// Load reads and checks the policy file at path (see Parse).
func Load(path string, opts Options) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if opts.Name == "" {
		opts.Name = path
	}
	return Parse(data, opts)
}

// Parse reads and checks a policy file's content. Every problem found is
// reported (an *Error each, joined with errors.Join, in file order); a
// policy is returned only when there is none.
func Parse(data []byte, opts Options) (*Policy, error) {
	b := &builder{opts: opts, src: &source{name: opts.Name}}
	if b.opts.LookupEnv == nil {
		b.opts.LookupEnv = os.LookupEnv
	}
	pol := b.build(data)
	if err := b.err(); err != nil {
		return nil, err
	}
	return pol, nil
}

// Error is one problem in a policy file.
type Error struct {
	File string // the file's name ("" when Parse was given none)
	Line int    // 1-based; 0 when unknown
	Path string // where in the document, e.g. "agents.analyst.tools"
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.File, e.Line)
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// joinErrors sorts errs by line (file order) and joins them.
func joinErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = e
	}
	if len(out) == 1 {
		return out[0]
	}
	return errors.Join(out...)
}

// Profile returns the named profile, or nil.
func (p *Policy) Profile(name string) *Profile { return p.Agents[name] }

// Names returns the profile names, sorted.
func (p *Policy) Names() []string {
	out := make([]string, 0, len(p.Agents))
	for n := range p.Agents {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
