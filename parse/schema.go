package parse

import (
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
	switch name {
	case FieldObjectID, FieldCreatedAt, FieldUpdatedAt, FieldACL:
		return true
	}
	return false
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
	user.CLP = PublicCLP()
	user.CLP.ProtectedFields = map[string][]string{PublicKey: {"email"}}
	role := NewSchema(ClassRole)
	role.CLP = PublicCLP()
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
	none := func() *OpPerm { return &OpPerm{Entries: map[string]bool{}} }
	session.CLP = CLP{Find: none(), Get: none(), Count: none(), Create: none(), Update: none(), Delete: none(), AddField: none()}
	return []Schema{user, role, session}
}

// NewSchema returns a schema with the default fields and default (public)
// class-level permissions.
func NewSchema(class string) Schema {
	return Schema{ClassName: class, Fields: DefaultFields()}
}

// FieldNames returns the schema's field names, sorted, system fields first.
func (s Schema) FieldNames() []string {
	names := make([]string, 0, len(s.Fields)+5) // and one for a caller's rank
	names = append(names, FieldObjectID, FieldCreatedAt, FieldUpdatedAt, FieldACL)
	for n := range s.Fields {
		if !IsSystemField(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names[4:])
	return names
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
