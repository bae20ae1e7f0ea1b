// Package agent is identity and governance: who an agent is (an Agent),
// and the governed view of the store it gets (a Scope). Every rule that
// decides what an agent may see lives here, so a security rule lives in one
// place.
package agent

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Permission is an agent's tier.
type Permission int

// The permission tiers, each including the ones below it.
const (
	Readonly Permission = iota
	Write
	Admin
)

func (p Permission) String() string {
	switch p {
	case Readonly:
		return "readonly"
	case Write:
		return "write"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("permission(%d)", int(p))
}

// ParsePermission reads "readonly", "write" or "admin".
func ParsePermission(s string) (Permission, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "readonly", "read", "":
		return Readonly, nil
	case "write":
		return Write, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("unknown permission %q (use readonly, write or admin)", s)
}

// AuthMode says how an agent's identity was established.
type AuthMode string

// The identity modes.
const (
	// AuthMaster sees every row: the master key. An explicit choice.
	AuthMaster AuthMode = "master_key"
	// AuthUser acts as a user (by session token or a pre-resolved user id).
	AuthUser AuthMode = "acl_user"
	// AuthRole acts as a holder of the named roles, with no user id.
	AuthRole AuthMode = "acl_role"
	// AuthAnonymous sees only public rows.
	AuthAnonymous AuthMode = "anonymous"
)

// Identity is who the agent acts as, for ACL and CLP checks.
type Identity struct {
	Mode   AuthMode
	UserID string   // AuthUser
	Roles  []string // role names held (AuthUser, AuthRole), inherited ones included
	// Session is the Parse session token the identity was established
	// with (SessionIdentity), for a store that forwards it to Parse Server
	// (store.SessionBinder). It prints, logs and marshals as "[redacted]".
	Session Secret
}

// Secret is a credential that never shows: fmt, slog and JSON see
// "[redacted]" (or "" when empty); Reveal gives the value.
type Secret struct{ v string }

// NewSecret wraps a credential.
func NewSecret(v string) Secret { return Secret{v} }

// Reveal returns the credential, for the one place that sends it.
func (s Secret) Reveal() string { return s.v }

func (s Secret) String() string {
	if s.v == "" {
		return ""
	}
	return "[redacted]"
}

// Equal compares two secrets (go-cmp uses it).
func (s Secret) Equal(o Secret) bool { return s.v == o.v }

// GoString keeps %#v from showing the value.
func (s Secret) GoString() string { return s.String() }

// LogValue keeps slog from showing the value.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON keeps JSON from showing the value.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// Principal returns the ACL entries the identity holds.
func (id Identity) Principal() parse.Principal {
	if id.Mode == AuthMaster {
		return parse.Principal{Master: true}
	}
	p := parse.Principal{Entries: []string{parse.PublicKey}}
	if id.Mode == AuthUser && id.UserID != "" {
		p.UserID = id.UserID
		p.Entries = append(p.Entries, id.UserID)
	}
	if id.Mode == AuthUser || id.Mode == AuthRole {
		for _, r := range id.Roles {
			p.Entries = append(p.Entries, parse.RoleEntry(r))
		}
	}
	return p
}

// ACLFilter is the ACL restriction the identity reads and writes under:
// none for the master key, else the ACL entries it holds.
func (id Identity) ACLFilter() query.ACLFilter {
	p := id.Principal()
	if p.Master {
		return query.NoACLFilter
	}
	return query.ACLEntries(p.Entries...)
}

// Agent is one caller of the server's tools.
type Agent struct {
	ID            string
	Permission    Permission
	Identity      Identity
	CorrelationID string
	// Policy narrows what the agent may do beyond its tier and identity.
	Policy Policy
	// Token, when the request came with a personal access token, narrows
	// the tools it may call (nil: no token).
	Token *TokenScope

	parent *Agent
	budget int // sub-agent levels left; 0 on a top-level agent means the default
}

// New returns an agent with a random id.
func New(perm Permission, id Identity) *Agent {
	return &Agent{ID: randomID(), Permission: perm, Identity: id}
}

// WithIntrospection returns a copy of a whose policy exposes the
// operator-only tools (Policy.Introspection): for the operator's own
// surface (parsemcp call), never for a model's session.
func (a *Agent) WithIntrospection() *Agent {
	c := *a
	c.Policy.Introspection = true
	return &c
}

// Can reports whether the agent's tier reaches need.
func (a *Agent) Can(need Permission) bool { return a.Permission >= need }

func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("agt_%x", b)
}

// ErrUnauthorized is returned by an agent factory that cannot authenticate
// the request; the HTTP transport answers 401.
var ErrUnauthorized = errors.New("unauthorized")

// Key identifies the principal across requests (agent IDs are per
// request), for rate limits: the auth mode plus the user or the roles.
func (a *Agent) Key() string {
	switch a.Identity.Mode {
	case AuthUser:
		return string(AuthUser) + ":" + a.Identity.UserID
	case AuthRole:
		roles := slices.Clone(a.Identity.Roles)
		slices.Sort(roles)
		return string(AuthRole) + ":" + strings.Join(roles, ",")
	}
	return string(a.Identity.Mode)
}
