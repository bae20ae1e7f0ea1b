package parse

import (
	"encoding/json"
	"fmt"
)

// Op names a class-level permission operation.
type Op string

// The CLP operations.
const (
	OpGet      Op = "get"
	OpFind     Op = "find"
	OpCount    Op = "count"
	OpCreate   Op = "create"
	OpUpdate   Op = "update"
	OpDelete   Op = "delete"
	OpAddField Op = "addField"
)

// OpPerm is the permission of one CLP operation. What a nil *OpPerm means
// depends on the whole CLP (see CLP.Decide): public when no CLP is stored,
// master key only when a stored CLP leaves the operation out.
type OpPerm struct {
	// Entries maps "*", a user objectId or "role:Name" to true.
	Entries map[string]bool
	// RequiresAuthentication admits any authenticated user.
	RequiresAuthentication bool
	// PointerFields admits the users a row's named pointer fields point to.
	PointerFields []string
}

// MarshalJSON renders Parse's form: {"*":true,"requiresAuthentication":true,"pointerFields":[…]}.
func (p OpPerm) MarshalJSON() ([]byte, error) {
	m := make(map[string]any, len(p.Entries)+2)
	for k, v := range p.Entries {
		if v {
			m[k] = true
		}
	}
	if p.RequiresAuthentication {
		m["requiresAuthentication"] = true
	}
	if len(p.PointerFields) > 0 {
		m["pointerFields"] = p.PointerFields
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads Parse's form.
func (p *OpPerm) UnmarshalJSON(b []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*p = OpPerm{Entries: map[string]bool{}}
	for k, raw := range m {
		switch k {
		case "requiresAuthentication":
			if err := json.Unmarshal(raw, &p.RequiresAuthentication); err != nil {
				return fmt.Errorf("requiresAuthentication: %w", err)
			}
		case "pointerFields":
			if err := json.Unmarshal(raw, &p.PointerFields); err != nil {
				return fmt.Errorf("pointerFields: %w", err)
			}
		default:
			var v bool
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("entry %q: %w", k, err)
			}
			p.Entries[k] = v
		}
	}
	return nil
}

// CLP is a class's class-level permissions.
type CLP struct {
	Get      *OpPerm `json:"get,omitempty"`
	Find     *OpPerm `json:"find,omitempty"`
	Count    *OpPerm `json:"count,omitempty"`
	Create   *OpPerm `json:"create,omitempty"`
	Update   *OpPerm `json:"update,omitempty"`
	Delete   *OpPerm `json:"delete,omitempty"`
	AddField *OpPerm `json:"addField,omitempty"`
	// ProtectedFields maps an entry ("*", a user id, "role:Name",
	// "userField:field") to fields hidden from it.
	ProtectedFields map[string][]string `json:"protectedFields,omitempty"`
	ReadUserFields  []string            `json:"readUserFields,omitempty"`
	WriteUserFields []string            `json:"writeUserFields,omitempty"`
}

// Perm returns the permission stored for op, nil when the CLP leaves it
// out (what that means: Decide); for a name that is no operation, a
// permission that admits nobody.
func (c CLP) Perm(op Op) *OpPerm {
	switch op {
	case OpGet:
		return c.Get
	case OpFind:
		return c.Find
	case OpCount:
		return c.Count
	case OpCreate:
		return c.Create
	case OpUpdate:
		return c.Update
	case OpDelete:
		return c.Delete
	case OpAddField:
		return c.AddField
	}
	return &OpPerm{Entries: map[string]bool{}} // not an operation: nobody but the master key
}

// validOp reports whether op is one of the CLP operations.
func validOp(op Op) bool {
	switch op {
	case OpGet, OpFind, OpCount, OpCreate, OpUpdate, OpDelete, OpAddField:
		return true
	}
	return false
}

// IsZero reports whether the CLP is empty: no class-level permissions are
// stored, so every operation is public.
func (c CLP) IsZero() bool {
	return c.Get == nil && c.Find == nil && c.Count == nil && c.Create == nil && c.Update == nil &&
		c.Delete == nil && c.AddField == nil && c.ProtectedFields == nil && c.ReadUserFields == nil && c.WriteUserFields == nil
}

// PublicPerm is an operation open to everyone ({"*": true}).
func PublicPerm() *OpPerm { return &OpPerm{Entries: map[string]bool{PublicKey: true}} }

// PublicCLP is the CLP Parse Server stores for a class it creates without
// one: every operation public, nothing protected.
func PublicCLP() CLP {
	return CLP{Get: PublicPerm(), Find: PublicPerm(), Count: PublicPerm(), Create: PublicPerm(),
		Update: PublicPerm(), Delete: PublicPerm(), AddField: PublicPerm()}
}

// Completed returns c with every operation it leaves out stated as
// public: what a writer means when it names only some operations and wants
// the others open. (Stored as is, a left-out operation is master-key only.)
// An empty CLP stays empty (public).
func (c CLP) Completed() CLP {
	if c.IsZero() {
		return c
	}
	for _, op := range []**OpPerm{&c.Get, &c.Find, &c.Count, &c.Create, &c.Update, &c.Delete, &c.AddField} {
		if *op == nil {
			*op = PublicPerm()
		}
	}
	return c
}

// Filled returns c as Parse Server's schema API shows a stored CLP: every
// operation it leaves out stated as {} (master key only). An empty CLP
// (public) stays empty.
func (c CLP) Filled() CLP {
	if c.IsZero() {
		return c
	}
	for _, op := range []**OpPerm{&c.Get, &c.Find, &c.Count, &c.Create, &c.Update, &c.Delete, &c.AddField} {
		if *op == nil {
			*op = &OpPerm{Entries: map[string]bool{}}
		}
	}
	return c
}

// Principal is who is asking, for permission checks: the user's id (empty
// when anonymous), the ACL entries they hold ("*", their id, "role:…"), and
// whether they hold the master key.
type Principal struct {
	UserID  string
	Entries []string
	Master  bool
}

// authenticated reports whether the caller is a signed-in user, what
// requiresAuthentication and the "authenticated" protectedFields entry ask
// for. Parse Server's callers are users or anonymous; an identity acting
// only as roles (parsemcp's) holds no session and is not one.
func (p Principal) authenticated() bool { return p.UserID != "" }

// users returns the caller's user entries (neither "*" nor a role).
func (p Principal) users() []string {
	var out []string
	for _, e := range p.Entries {
		if e != PublicKey && !IsRoleEntry(e) {
			out = append(out, e)
		}
	}
	return out
}

// Decision is what the class-level permissions let one principal do with
// one operation on a class.
type Decision struct {
	// Allowed is false when the operation is refused outright.
	Allowed bool
	// UserFields, when not empty, keeps the operation to the rows one of
	// whose named fields points at User (pointerFields of the operation,
	// readUserFields for get/find/count, writeUserFields for
	// update/delete). Resolving a field to a row constraint depends on
	// its type: a Pointer must equal the user, an Array must contain the
	// user's Pointer; a field of any other type (or missing) matches no
	// row.
	UserFields []string
	User       string
	// NoRows is true when the operation is allowed but no row can be
	// reached: pointer permissions apply and the caller is not exactly one
	// user. Parse Server answers an empty result (a get: not found).
	NoRows bool
}

// Decide evaluates the CLP for op and p, as Parse Server 9 does
// (SchemaController.validatePermission, then
// DatabaseController.addPointerPermissions):
//
//   - the master key passes;
//   - an empty CLP (none stored) is public;
//   - an operation a stored CLP leaves out is master-key only (Parse
//     Server's storage adapters fill it in as {});
//   - "*" or an entry the caller holds passes, for every row;
//   - requiresAuthentication passes any signed-in user (not an identity
//     acting only as roles);
//   - otherwise pointerFields of the operation, or readUserFields (get,
//     find, count) / writeUserFields (update, delete), let the operation
//     through restricted to the rows pointing at the user (never create);
//   - anything else is refused.
//
// A caller let through by requiresAuthentication is still restricted by
// pointerFields and user fields where the CLP has them.
func (c CLP) Decide(op Op, p Principal) Decision {
	switch {
	case p.Master:
		return Decision{Allowed: true}
	case !validOp(op):
		return Decision{} // fail closed on a name that is no operation
	case c.IsZero():
		return Decision{Allowed: true}
	}
	perm := c.Perm(op)
	if perm == nil {
		perm = &OpPerm{} // left out of a stored CLP: master key only
	}
	if perm.Entries[PublicKey] {
		return Decision{Allowed: true}
	}
	for _, e := range p.Entries {
		if perm.Entries[e] {
			return Decision{Allowed: true}
		}
	}
	userFields := c.WriteUserFields
	switch op {
	case OpGet, OpFind, OpCount:
		userFields = c.ReadUserFields
	}
	switch {
	case perm.RequiresAuthentication:
		if !p.authenticated() {
			return Decision{}
		}
	case op == OpCreate:
		return Decision{} // no row to point at the user
	case len(userFields) > 0:
	case len(perm.PointerFields) > 0 && op != OpAddField:
	default:
		return Decision{}
	}
	if op == OpCreate {
		return Decision{Allowed: true}
	}
	fields := append([]string(nil), perm.PointerFields...)
	for _, f := range userFields {
		if !contains(fields, f) {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 {
		return Decision{Allowed: true}
	}
	users := p.users()
	if len(users) != 1 {
		return Decision{Allowed: true, NoRows: true}
	}
	return Decision{Allowed: true, UserFields: fields, User: users[0]}
}

// Protected returns the fields the CLP's protectedFields hide from p, as
// Parse Server 9 computes them (DatabaseController.addProtectedFields):
// the lists of every entry that applies to p — "*" always, each role and
// user id p holds, and "authenticated" for a signed-in user — intersected,
// so a field stays hidden only if every applicable
// entry hides it. "userField:" entries, which Parse Server applies per row,
// are not used: ignoring them can only hide more. The master key sees
// everything. The owner exemption (a user reading its own _User row sees
// it whole) is per row: see OwnerExempt.
func (c CLP) Protected(p Principal) []string {
	if p.Master || len(c.ProtectedFields) == 0 {
		return nil
	}
	held := map[string]bool{PublicKey: true, "authenticated": p.authenticated()}
	for _, e := range p.Entries {
		held[e] = true
	}
	var sets [][]string
	for entry, fields := range c.ProtectedFields {
		if held[entry] {
			sets = append(sets, fields)
		}
	}
	if len(sets) == 0 {
		return nil
	}
	var out []string
	for _, f := range sets[0] {
		in := true
		for _, set := range sets[1:] {
			if !contains(set, f) {
				in = false
				break
			}
		}
		if in && !contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// DefaultProtectedFields are the protectedFields Parse Server 9 adds to a
// class's CLP whatever is stored (its protectedFields option, whose default
// hides a user's email from everyone else).
var DefaultProtectedFields = map[string]map[string][]string{ClassUser: {PublicKey: {"email"}}}

// ProtectedFor returns the fields of sch hidden from p: its CLP's
// protectedFields merged with DefaultProtectedFields, evaluated by
// CLP.Protected.
func ProtectedFor(sch Schema, p Principal) []string {
	c := sch.CLP
	if def := DefaultProtectedFields[sch.ClassName]; def != nil {
		merged := make(map[string][]string, len(c.ProtectedFields)+len(def))
		for k, v := range c.ProtectedFields {
			merged[k] = v
		}
		for k, v := range def {
			list := append([]string(nil), merged[k]...)
			for _, f := range v {
				if !contains(list, f) {
					list = append(list, f)
				}
			}
			merged[k] = list
		}
		c.ProtectedFields = merged
	}
	return c.Protected(p)
}

// OwnerExempt reports whether p reads the row id of class as its owner:
// Parse Server 9 does not apply protectedFields to a user's own _User row.
func OwnerExempt(class, id string, p Principal) bool {
	return OwnsSomeRow(class, p) && id == p.UserID
}

// OwnsSomeRow reports whether some row of class may be OwnerExempt for
// p (p is a signed-in user reading _User).
func OwnsSomeRow(class string, p Principal) bool {
	return class == ClassUser && p.UserID != ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
