package audit

import (
	"reflect"
	"strings"
	"unicode"

	"github.com/parsemcp/parsemcp/parse"
)

// The audit class's fields are Event's own: each field of Event is stored
// under its JSON name in Parse's camelCase (args_keys → argsKeys), typed
// by its Go type, left out when empty exactly where the JSON leaves it
// out (omitempty), so the log line and the stored object can never name
// or omit a field differently. Event.Time is the object's createdAt;
// Event.Event (always "tool_call") is the class itself.

// column is one stored field of Event.
type column struct {
	index     int    // in Event
	name      string // in the audit class
	typ       parse.FieldType
	omitEmpty bool
}

var columns = eventColumns()

func eventColumns() []column {
	var out []column
	t := reflect.TypeFor[Event]()
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "event" || tag == "time" || tag == "" || tag == "-" {
			continue
		}
		out = append(out, column{index: i, name: camel(tag), typ: fieldType(f.Type), omitEmpty: strings.Contains(opts, "omitempty")})
	}
	return out
}

// fieldType is the Parse type storing a value of Go type t.
func fieldType(t reflect.Type) parse.FieldType {
	switch t.Kind() {
	case reflect.String:
		return parse.TypeString
	case reflect.Bool:
		return parse.TypeBoolean
	case reflect.Int, reflect.Float64, reflect.Pointer: // *float64: a number or nothing
		return parse.TypeNumber
	case reflect.Slice:
		return parse.TypeArray
	case reflect.Map:
		return parse.TypeObject
	}
	panic("audit: no Parse type for Event field of type " + t.String())
}

// camel is a snake_case JSON name in camelCase.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if p := parts[i]; p != "" {
			r := []rune(p)
			r[0] = unicode.ToUpper(r[0])
			parts[i] = string(r)
		}
	}
	return strings.Join(parts, "")
}

// schema is the audit class: Event's fields, readable and writable by the
// master key only.
func schema() parse.Schema {
	sch := parse.NewSchema(AuditClass)
	for _, c := range columns {
		sch.Fields[c.name] = parse.Field{Type: c.typ}
	}
	none := parse.OpPerm{Entries: map[string]bool{}}
	sch.CLP = parse.CLP{Get: &none, Find: &none, Count: &none, Create: &none, Update: &none, Delete: &none, AddField: &none}
	return sch
}

// object is e as an object of the audit class.
func object(e Event) parse.Object {
	o := parse.Object{"createdAt": parse.Date(e.Time), "ACL": map[string]any{}} // master key only
	v := reflect.ValueOf(e)
	for _, c := range columns {
		fv := v.Field(c.index)
		if c.omitEmpty && fv.IsZero() {
			continue
		}
		o[c.name] = storedValue(fv)
	}
	return o
}

// storedValue is a field's value as the store takes it: numbers as
// float64, string lists as arrays, the filters map as an object of arrays.
func storedValue(v reflect.Value) any {
	switch x := v.Interface().(type) {
	case int:
		return float64(x)
	case *float64:
		if x == nil {
			return nil
		}
		return *x
	case []string:
		return anyList(x)
	case map[string][]string:
		m := make(map[string]any, len(x))
		for k, list := range x {
			m[k] = anyList(list)
		}
		return m
	}
	return v.Interface()
}

// anyList is list as a JSON array value of an object.
func anyList(list []string) []any {
	a := make([]any, len(list))
	for i, v := range list {
		a[i] = v
	}
	return a
}
