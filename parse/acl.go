package parse

import (
	"fmt"
	"sort"
	"strings"
)

// PublicKey is the ACL entry for everyone.
const PublicKey = "*"

// RolePrefix starts the ACL entry of a role ("role:Admin").
const RolePrefix = "role:"

// Perm is one ACL entry's rights.
type Perm struct {
	Read  bool `json:"read,omitempty"`
	Write bool `json:"write,omitempty"`
}

// ACL maps an entry ("*", a user objectId, "role:Name") to its rights. A nil
// ACL means the object has none: public read and write, as in Parse.
type ACL map[string]Perm

// ParseACL decodes the REST form `{"*":{"read":true},"role:Admin":{…}}`.
func ParseACL(v any) (ACL, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("ACL must be an object of entries, got %T", v)
	}
	acl := make(ACL, len(m))
	for k, raw := range m {
		if k == "" {
			return nil, fmt.Errorf("ACL has an empty entry name")
		}
		e, ok := raw.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("ACL entry %q must be an object like {\"read\":true}", k)
		}
		var p Perm
		for op, b := range e {
			bv, ok := b.(bool)
			if !ok {
				return nil, fmt.Errorf("ACL entry %q.%s must be a boolean", k, op)
			}
			switch op {
			case "read":
				p.Read = bv
			case "write":
				p.Write = bv
			default:
				return nil, fmt.Errorf("ACL entry %q has unknown permission %q", k, op)
			}
		}
		acl[k] = p
	}
	return acl, nil
}

// PermsOf returns the `_rperm`/`_wperm` arrays of an ACL in REST form (as
// ParseACL takes it): nil arrays for no ACL (public), empty ones for an ACL
// that does not decode (it grants nothing).
func PermsOf(rest any) (rperm, wperm []string) {
	if rest == nil {
		return nil, nil
	}
	acl, err := ParseACL(rest)
	if err != nil {
		return []string{}, []string{}
	}
	return acl.Perms()
}

// Encode returns the REST form.
func (a ACL) Encode() map[string]any {
	if a == nil {
		return nil
	}
	out := make(map[string]any, len(a))
	for k, p := range a {
		e := map[string]any{}
		if p.Read {
			e["read"] = true
		}
		if p.Write {
			e["write"] = true
		}
		out[k] = e
	}
	return out
}

// Perms returns the sorted `_rperm` and `_wperm` arrays of Parse Server's
// storage layout. A nil ACL yields nil arrays (no restriction).
func (a ACL) Perms() (rperm, wperm []string) {
	if a == nil {
		return nil, nil
	}
	rperm, wperm = []string{}, []string{}
	for k, p := range a {
		if p.Read {
			rperm = append(rperm, k)
		}
		if p.Write {
			wperm = append(wperm, k)
		}
	}
	sort.Strings(rperm)
	sort.Strings(wperm)
	return rperm, wperm
}

// ACLFromPerms rebuilds an ACL from stored `_rperm`/`_wperm`; both nil means
// no ACL.
func ACLFromPerms(rperm, wperm []string) ACL {
	if rperm == nil && wperm == nil {
		return nil
	}
	a := ACL{}
	for _, k := range rperm {
		p := a[k]
		p.Read = true
		a[k] = p
	}
	for _, k := range wperm {
		p := a[k]
		p.Write = true
		a[k] = p
	}
	return a
}

// RoleEntry returns the ACL entry for a role name.
func RoleEntry(name string) string { return RolePrefix + name }

// IsRoleEntry reports whether an ACL entry names a role.
func IsRoleEntry(entry string) bool { return strings.HasPrefix(entry, RolePrefix) }
