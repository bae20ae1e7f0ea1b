package agent

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The placeholders of a default ACL entry.
const (
	aclUser   = "{user}"
	aclTenant = "{tenant}"
)

var tenantFieldRef = regexp.MustCompile(`\{tenant\.([A-Za-z][A-Za-z0-9_]*)\}`)

// CheckACLTemplate checks one entry of a class's default_acl: "*", a user
// objectId, "{user}", or "role:" and a name that may hold "{tenant}" and
// "{tenant.<field>}".
func CheckACLTemplate(entry string) error {
	switch {
	case entry == parse.PublicKey, entry == aclUser, parse.ValidObjectID(entry):
		return nil
	case parse.IsRoleEntry(entry):
		name := tenantFieldRef.ReplaceAllString(strings.ReplaceAll(strings.TrimPrefix(entry, parse.RolePrefix), aclTenant, "x"), "x")
		if name != "" && !strings.ContainsAny(name, "{}") {
			return nil
		}
	}
	return fmt.Errorf("%q: want \"*\", a user objectId, %q or \"role:<name>\" (the name may hold %q or \"{tenant.<field>}\")", entry, aclUser, aclTenant)
}

// createACL returns the ACL an object the agent creates in the class of
// raw gets when the write names none: the class's declared default ACL
// with its placeholders filled in (entries whose placeholder has no value
// for this agent are left out), else read and write for the creating user
// only (an agent acting as roles without a user: for those roles; an
// anonymous agent: nobody but the master key). A master-key agent's
// objects get none, as Parse Server's do. ok is false when no ACL is set.
func (s *Scope) createACL(ctx context.Context, raw parse.Schema) (acl parse.ACL, ok bool, err error) {
	p := s.principal()
	if p.Master {
		return nil, false, nil
	}
	acl = parse.ACL{}
	if m := s.meta(raw.ClassName); m != nil && m.DefaultACL != nil {
		for entry, perm := range m.DefaultACL {
			e, keep, err := s.fillACLEntry(ctx, raw, entry)
			if err != nil {
				return nil, false, err
			}
			if keep {
				old := acl[e]
				acl[e] = parse.Perm{Read: old.Read || perm.Read, Write: old.Write || perm.Write}
			}
		}
		return acl, true, nil
	}
	for _, e := range p.Entries {
		if e == parse.PublicKey || (p.UserID != "" && e != p.UserID) {
			continue
		}
		acl[e] = parse.Perm{Read: true, Write: true}
	}
	return acl, true, nil
}

// fillACLEntry fills in one default ACL entry's placeholders.
func (s *Scope) fillACLEntry(ctx context.Context, raw parse.Schema, entry string) (string, bool, error) {
	if entry == aclUser {
		id := s.principal().UserID
		return id, id != "", nil
	}
	if !strings.Contains(entry, "{") {
		return entry, true, nil
	}
	tenant := s.agent.Policy.TenantID
	if tenant == "" {
		return "", false, nil
	}
	entry = strings.ReplaceAll(entry, aclTenant, tenant)
	var ferr error
	keep := true
	entry = tenantFieldRef.ReplaceAllStringFunc(entry, func(ref string) string {
		field := tenantFieldRef.FindStringSubmatch(ref)[1]
		v, err := s.tenantField(ctx, raw, field)
		if err != nil {
			ferr = err
		}
		if v == "" {
			keep = false
		}
		return v
	})
	return entry, keep && ferr == nil, ferr
}

// tenantField reads a String field of the agent's tenant object (the
// object the class's tenant Pointer names), as the server: the operator
// named it, the agent need not be able to read it.
func (s *Scope) tenantField(ctx context.Context, raw parse.Schema, field string) (string, error) {
	path, ok := s.tenantPath(raw)
	if !ok || path.Type != parse.TypePointer {
		return "", nil
	}
	target := raw.Fields[path.Field].TargetClass
	rows, err := s.st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: target, Limit: 1, Keys: []string{field},
		Where: query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpEq, Value: s.agent.Policy.TenantID}})
	if err != nil || len(rows) == 0 {
		return "", err
	}
	v, _ := rows[0][field].(string)
	return v, nil
}

// applyDefaults fills in, on an object about to be created, the schema's
// defaultValue of every field the write leaves unset (as Parse Server does
// before checking required fields).
func applyDefaults(raw parse.Schema, obj parse.Object) {
	for name, f := range raw.Fields {
		if f.DefaultValue == nil || parse.IsSystemField(name) {
			continue
		}
		if v, set := obj[name]; !set || v == nil {
			obj[name] = f.DefaultValue
		}
	}
}
