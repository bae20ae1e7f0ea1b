package prepare

import (
	"fmt"
	"sort"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// UpdateSet is an update checked against its class's schema and ready for
// a backend to encode.
type UpdateSet struct {
	Fields []string           // user fields set or unset, sorted
	Values []parse.Normalized // Null unsets the field
	Types  []parse.Field
	// SetACL is true when the update replaces the ACL with ACL (nil: no
	// ACL, public).
	SetACL bool
	ACL    parse.ACL
}

// Update validates set, an update in REST form, against sch. A
// {"__op":"Delete"} value (or null) unsets a field; an "ACL" key replaces
// the ACL. objectId, createdAt and updatedAt cannot be set, Relation fields
// are changed with the Store's AddRelation, and required fields cannot be
// unset. Errors wrap store.ErrInvalid and name the field.
func Update(sch parse.Schema, set parse.Object) (UpdateSet, error) {
	var c UpdateSet
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := set[k]
		del, err := deleteOp(k, v)
		if err != nil {
			return UpdateSet{}, err
		}
		switch k {
		case parse.FieldObjectID, parse.FieldCreatedAt, parse.FieldUpdatedAt:
			return UpdateSet{}, fmt.Errorf("%w: field %q cannot be set on class %s (the store assigns it)", store.ErrInvalid, k, sch.ClassName)
		case parse.FieldACL:
			c.SetACL = true
			if del {
				continue
			}
			acl, err := parse.ParseACL(v)
			if err != nil {
				return UpdateSet{}, fmt.Errorf("%w: %v", store.ErrInvalid, err)
			}
			c.ACL = acl
			continue
		}
		f, ok := sch.Fields[k]
		if !ok {
			return UpdateSet{}, fmt.Errorf("%w: unknown field %q on class %s", store.ErrInvalid, k, sch.ClassName)
		}
		var n parse.Normalized
		switch {
		case f.Type == parse.TypeRelation:
			return UpdateSet{}, fmt.Errorf("%w: field %q is a Relation: link objects with AddRelation, not by update", store.ErrInvalid, k)
		case del:
			n = parse.Normalized{Null: true}
		default:
			if n, err = parse.Normalize(k, f, v); err != nil {
				return UpdateSet{}, fmt.Errorf("%w: %v", store.ErrInvalid, err)
			}
		}
		if n.Null && f.Required {
			return UpdateSet{}, fmt.Errorf("%w: required field %q cannot be unset", store.ErrInvalid, k)
		}
		c.Fields = append(c.Fields, k)
		c.Values = append(c.Values, n)
		c.Types = append(c.Types, f)
	}
	return c, nil
}

// deleteOp reports whether v unsets field k: null or {"__op":"Delete"}.
// Any other operation is refused: a value holding "__op" must not be stored
// as an Object literal by mistake.
func deleteOp(k string, v any) (bool, error) {
	if v == nil {
		return true, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false, nil
	}
	op, has := m["__op"]
	if !has {
		return false, nil
	}
	if op == "Delete" && len(m) == 1 {
		return true, nil
	}
	return false, fmt.Errorf(`%w: field %q: operation %v is not supported by update (only {"__op":"Delete"}, to unset a field)`, store.ErrInvalid, k, compactOp(op))
}

func compactOp(op any) string {
	if s, ok := op.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%T", op)
}
