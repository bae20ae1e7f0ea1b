package parse

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Field is one field of a class schema, as stored in `_SCHEMA`.
type Field struct {
	Type         FieldType `json:"type"`
	TargetClass  string    `json:"targetClass,omitempty"`
	Required     bool      `json:"required,omitempty"`
	DefaultValue any       `json:"defaultValue,omitempty"`
}

// Schema is one class: its fields, class-level permissions and indexes.
type Schema struct {
	ClassName string           `json:"className"`
	Fields    map[string]Field `json:"fields"`
	CLP       CLP              `json:"classLevelPermissions"`
	// Indexes maps an index name to its keys (field → 1 or -1), as Parse
	// Server reports them.
	Indexes map[string]map[string]int `json:"indexes,omitempty"`
}

// DefaultFields are the fields every class carries.
func DefaultFields() map[string]Field {
	return map[string]Field{
		FieldObjectID:  {Type: TypeString},
		FieldCreatedAt: {Type: TypeDate},
		FieldUpdatedAt: {Type: TypeDate},
		FieldACL:       {Type: TypeACL},
	}
}

// IsSystemField reports whether name is one of the fields every class has.
func IsSystemField(name string) bool {
	_, ok := DefaultFields()[name]
	return ok
}

// IsSystemClass reports whether the class is one of Parse's built-in classes.
func IsSystemClass(name string) bool { return len(name) > 0 && name[0] == '_' }

// SystemSchemas returns the schemas of `_User`, `_Role` and `_Session`,
// with the fields Parse Server creates for them.
func SystemSchemas() []Schema {
	user := NewSchema(ClassUser)
	for name, f := range map[string]Field{
		"username": {Type: TypeString}, "email": {Type: TypeString},
		"emailVerified": {Type: TypeBoolean}, "authData": {Type: TypeObject},
	} {
		user.Fields[name] = f
	}
	user.CLP.ProtectedFields = map[string][]string{PublicKey: {"email", "authData"}}
	role := NewSchema(ClassRole)
	role.Fields["name"] = Field{Type: TypeString}
	role.Fields["users"] = Field{Type: TypeRelation, TargetClass: ClassUser}
	role.Fields["roles"] = Field{Type: TypeRelation, TargetClass: ClassRole}
	session := NewSchema(ClassSession)
	for name, f := range map[string]Field{
		"user": {Type: TypePointer, TargetClass: ClassUser}, "sessionToken": {Type: TypeString},
		"expiresAt": {Type: TypeDate}, "createdWith": {Type: TypeObject},
		"installationId": {Type: TypeString}, "restricted": {Type: TypeBoolean},
	} {
		session.Fields[name] = f
	}
	// Sessions are master-key only by default, as in Parse Server.
	none := OpPerm{Entries: map[string]bool{}}
	session.CLP = CLP{Find: &none, Get: &none, Count: &none, Create: &none, Update: &none, Delete: &none, AddField: &none}
	return []Schema{user, role, session}
}

// NewSchema returns a schema with the default fields and default (public)
// class-level permissions.
func NewSchema(class string) Schema {
	return Schema{ClassName: class, Fields: DefaultFields()}
}

// FieldNames returns the schema's field names, sorted, system fields first.
func (s Schema) FieldNames() []string {
	names := make([]string, 0, len(s.Fields))
	for n := range s.Fields {
		if !IsSystemField(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return append([]string{FieldObjectID, FieldCreatedAt, FieldUpdatedAt, FieldACL}, names...)
}

// Validate checks a schema before it is stored.
func (s Schema) Validate() error {
	if !ValidClassName(s.ClassName) {
		return fmt.Errorf("invalid class name %q: use a letter followed by letters, digits or underscores (at most 120)", s.ClassName)
	}
	for name, f := range s.Fields {
		if IsSystemField(name) {
			continue
		}
		if !ValidFieldName(name) {
			return fmt.Errorf("class %s: invalid field name %q", s.ClassName, name)
		}
		if !f.Type.Valid() || f.Type == TypeACL {
			return fmt.Errorf("class %s: field %q has unknown type %q", s.ClassName, name, f.Type)
		}
		if (f.Type == TypePointer || f.Type == TypeRelation) && !ValidClassName(f.TargetClass) {
			return fmt.Errorf("class %s: %s field %q needs a valid targetClass", s.ClassName, f.Type, name)
		}
	}
	return nil
}

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

// OpPerm is the permission of one CLP operation. A nil *OpPerm in a CLP
// means the operation is public (Parse's default).
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

// Perm returns the permission of op (nil: public).
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
	return &OpPerm{}
}

// Principal is who is asking, for permission checks: the user's id (empty
// when anonymous), the ACL entries they hold ("*", their id, "role:…"), and
// whether they hold the master key.
type Principal struct {
	UserID  string
	Entries []string
	Master  bool
}

// Allows reports whether p may perform op on the class at the class level.
// A pointerFields-only permission is reported as allowed; the per-row check
// is the query's job.
func (c CLP) Allows(op Op, p Principal) bool {
	if p.Master {
		return true
	}
	perm := c.Perm(op)
	if perm == nil {
		return true
	}
	if perm.RequiresAuthentication && p.UserID == "" {
		return false
	}
	for _, e := range p.Entries {
		if perm.Entries[e] {
			return true
		}
	}
	if perm.RequiresAuthentication {
		return true // any authenticated user
	}
	return len(perm.PointerFields) > 0 && p.UserID != ""
}
