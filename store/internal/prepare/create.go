// Package prepare checks a write against its class before a backend runs
// it, the same way on every backend: the objects of a create become Rows
// and the set of an update an UpdateSet, ready to encode, with errors that
// wrap store.ErrInvalid and name the object and field; CheckWrite and
// CheckDeleteClass refuse what no backend may run, and ObjectNotFound is
// the error of a write that reaches no row.
package prepare

import (
	"fmt"
	"sort"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
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

// Create validates objs for class sch and assigns what is missing
// (objectId, createdAt, updatedAt = createdAt). It does not change objs:
// a backend writes what was assigned back once the rows are committed.
// Errors wrap store.ErrInvalid and name the object and field.
func Create(sch parse.Schema, objs []parse.Object, now time.Time) ([]Row, error) {
	rows := make([]Row, 0, len(objs))
	seen := make(map[string]bool, len(objs))
	for i, obj := range objs {
		if obj == nil {
			return nil, fmt.Errorf("%w: object %d is null", store.ErrInvalid, i)
		}
		r := Row{CreatedAt: now}
		id, isString := obj[parse.FieldObjectID].(string)
		if !isString && obj[parse.FieldObjectID] != nil {
			return nil, fmt.Errorf("%w: object %d: objectId must be a string, got %T", store.ErrInvalid, i, obj[parse.FieldObjectID])
		}
		switch {
		case id == "":
			id = parse.NewObjectID()
		case !parse.ValidObjectID(id):
			return nil, fmt.Errorf("%w: object %d: invalid objectId %q", store.ErrInvalid, i, id)
		case seen[id]:
			return nil, fmt.Errorf("%w: duplicate objectId %s in %s", store.ErrInvalid, id, sch.ClassName)
		}
		seen[id] = true
		r.ObjectID = id
		dateField := parse.Field{Type: parse.TypeDate}
		if v, ok := obj[parse.FieldCreatedAt]; ok && v != nil {
			n, err := parse.Normalize(parse.FieldCreatedAt, dateField, v)
			if err != nil {
				return nil, fmt.Errorf("%w: object %d: %v", store.ErrInvalid, i, err)
			}
			r.CreatedAt = n.Time
		}
		r.UpdatedAt = r.CreatedAt
		if v, ok := obj[parse.FieldUpdatedAt]; ok && v != nil {
			n, err := parse.Normalize(parse.FieldUpdatedAt, dateField, v)
			if err != nil {
				return nil, fmt.Errorf("%w: object %d: %v", store.ErrInvalid, i, err)
			}
			r.UpdatedAt = n.Time
		}
		acl, err := parse.ParseACL(obj[parse.FieldACL])
		if err != nil {
			return nil, fmt.Errorf("%w: object %d: %v", store.ErrInvalid, i, err)
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
				return nil, fmt.Errorf("%w: object %d: unknown field %q on class %s", store.ErrInvalid, i, k, sch.ClassName)
			}
			n, err := parse.Normalize(k, f, obj[k])
			if err != nil {
				return nil, fmt.Errorf("%w: object %d: %v", store.ErrInvalid, i, err)
			}
			r.Values = append(r.Values, n)
			r.Types = append(r.Types, f)
		}
		for k, f := range sch.Fields {
			if f.Required && obj[k] == nil {
				return nil, fmt.Errorf("%w: object %d: required field %q is missing", store.ErrInvalid, i, k)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}
