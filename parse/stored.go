package parse

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The `_SCHEMA` row's "schema" JSON, in the form Parse Server writes it:
// `fields` holds objectId, createdAt, updatedAt and the `_rperm`/`_wperm`
// arrays (not ACL); internal columns (`_hashed_password`, …) may appear and
// are not user fields; `classLevelPermissions` and `indexes` are present
// once set, and `indexes` always has `_id_`.

type storedSchema struct {
	ClassName string                    `json:"className"`
	Fields    map[string]Field          `json:"fields"`
	CLP       *CLP                      `json:"classLevelPermissions,omitempty"`
	Indexes   map[string]map[string]int `json:"indexes,omitempty"`
}

var permArrayField = Field{Type: TypeArray}

// MarshalStoredSchema renders s as Parse Server stores it in `_SCHEMA`.
func MarshalStoredSchema(s Schema) ([]byte, error) {
	st := storedSchema{ClassName: s.ClassName, Fields: map[string]Field{}, Indexes: map[string]map[string]int{"_id_": {"_id": 1}}}
	for name, f := range s.Fields {
		if name == FieldACL {
			continue
		}
		st.Fields[name] = f
	}
	for name, f := range DefaultFields() {
		if name != FieldACL {
			st.Fields[name] = f
		}
	}
	st.Fields["_rperm"], st.Fields["_wperm"] = permArrayField, permArrayField
	if !s.CLP.IsZero() {
		clp := s.CLP
		st.CLP = &clp
	}
	for name, keys := range s.Indexes {
		st.Indexes[name] = keys
	}
	return json.Marshal(st)
}

// UnmarshalStoredSchema reads a `_SCHEMA` row written by Parse Server or by
// MarshalStoredSchema. Internal fields are dropped; ACL and the default
// fields are added; the automatic `_id_` index is omitted.
func UnmarshalStoredSchema(class string, raw []byte) (Schema, error) {
	var st storedSchema
	if err := json.Unmarshal(raw, &st); err != nil {
		return Schema{}, fmt.Errorf("_SCHEMA row %s: %w", class, err)
	}
	s := Schema{ClassName: class, Fields: DefaultFields()}
	for name, f := range st.Fields {
		if strings.HasPrefix(name, "_") || IsSystemField(name) {
			continue // _rperm, _wperm, _hashed_password, … are storage, not fields
		}
		s.Fields[name] = f
	}
	if st.CLP != nil {
		s.CLP = *st.CLP
	}
	for name, keys := range st.Indexes {
		if name == "_id_" {
			continue
		}
		if s.Indexes == nil {
			s.Indexes = map[string]map[string]int{}
		}
		s.Indexes[name] = keys
	}
	return s, nil
}

// Relation is the REST value Parse returns for a Relation field on every
// object: `{"__type":"Relation","className":<target>}`.
func Relation(target string) map[string]any {
	return map[string]any{"__type": "Relation", "className": target}
}
