package store

import (
	"fmt"
	"sort"
	"time"

	"github.com/parsemcp/parsemcp/parse"
)

// Row is an object checked against its schema and ready for a backend to
// encode: the system columns, the ACL and each user field's normalized value.
type Row struct {
	CreatedAt, UpdatedAt time.Time
	ObjectID             string
	ACL                  parse.ACL
	Fields               []string // user fields present, sorted
	Values               []parse.Normalized
	Types                []parse.Field
}

// PrepareCreate validates objs for class sch and assigns what is missing
// (objectId, createdAt, updatedAt = createdAt). It does not change objs:
// a backend writes what was assigned back once the rows are committed. Errors wrap ErrInvalid and
// name the object and field.
func PrepareCreate(sch parse.Schema, objs []parse.Object, now time.Time) ([]Row, error) {
	rows := make([]Row, 0, len(objs))
	seen := make(map[string]bool, len(objs))
	for i, obj := range objs {
		if obj == nil {
			return nil, fmt.Errorf("%w: object %d is null", ErrInvalid, i)
		}
		r := Row{CreatedAt: now}
		id, isString := obj[parse.FieldObjectID].(string)
		if !isString && obj[parse.FieldObjectID] != nil {
			return nil, fmt.Errorf("%w: object %d: objectId must be a string, got %T", ErrInvalid, i, obj[parse.FieldObjectID])
		}
		switch {
		case id == "":
			id = parse.NewObjectID()
		case !parse.ValidObjectID(id):
			return nil, fmt.Errorf("%w: object %d: invalid objectId %q", ErrInvalid, i, id)
		case seen[id]:
			return nil, fmt.Errorf("%w: duplicate objectId %s in %s", ErrInvalid, id, sch.ClassName)
		}
		seen[id] = true
		r.ObjectID = id
		dateField := parse.Field{Type: parse.TypeDate}
		if v, ok := obj[parse.FieldCreatedAt]; ok && v != nil {
			n, err := parse.Normalize(parse.FieldCreatedAt, dateField, v)
			if err != nil {
				return nil, fmt.Errorf("%w: object %d: %v", ErrInvalid, i, err)
			}
			r.CreatedAt = n.Time
		}
		r.UpdatedAt = r.CreatedAt
		if v, ok := obj[parse.FieldUpdatedAt]; ok && v != nil {
			n, err := parse.Normalize(parse.FieldUpdatedAt, dateField, v)
			if err != nil {
				return nil, fmt.Errorf("%w: object %d: %v", ErrInvalid, i, err)
			}
			r.UpdatedAt = n.Time
		}
		acl, err := parse.ParseACL(obj[parse.FieldACL])
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %v", ErrInvalid, i, err)
		}
		r.ACL = acl
		for k := range obj {
			if !parse.IsSystemField(k) {
				r.Fields = append(r.Fields, k)
			}
		}
		sort.Strings(r.Fields)
		for _, k := range r.Fields {
			f, ok := sch.Fields[k]
			if !ok {
				return nil, fmt.Errorf("%w: object %d: unknown field %q on class %s", ErrInvalid, i, k, sch.ClassName)
			}
			n, err := parse.Normalize(k, f, obj[k])
			if err != nil {
				return nil, fmt.Errorf("%w: object %d: %v", ErrInvalid, i, err)
			}
			r.Values = append(r.Values, n)
			r.Types = append(r.Types, f)
		}
		for k, f := range sch.Fields {
			if f.Required && obj[k] == nil {
				return nil, fmt.Errorf("%w: object %d: required field %q is missing", ErrInvalid, i, k)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}
