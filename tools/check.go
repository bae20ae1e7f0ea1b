package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	segjson "github.com/segmentio/encoding/json"
)

// CheckArgs checks a call's arguments against the tool's declared input
// schema, once, before the tool runs: required arguments present, a value
// of a closed set (enum) one of its members, and the bounds (minimum,
// maximum, minItems, maxItems) of the arguments given.
// Errors are invalid_argument naming the argument. Types and unknown
// arguments are checked where the arguments are decoded (decodeArgs),
// which also accepts the forms models often send (a JSON string holding
// an object, a comma-separated list).
func CheckArgs(t *Tool, raw json.RawMessage) error {
	if t == nil {
		return nil
	}
	if t.CheckInput != nil {
		if err := t.CheckInput(raw); err != nil {
			return &Error{Code: CodeInvalidArgument, Message: "the arguments do not match the tool's input schema: " + err.Error()}
		}
		return nil
	}
	if t.Input == nil {
		return nil
	}
	raw = bytes.TrimSpace(raw)
	args := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := segjson.Unmarshal(raw, &args); err != nil {
			return Errorf(CodeInvalidArgument, "arguments must be a JSON object")
		}
	}
	for _, name := range t.Input.Required {
		if v, ok := args[name]; !ok || string(bytes.TrimSpace(v)) == "null" {
			return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q is required", name), Details: map[string]any{"argument": name}}
		}
	}
	for name, v := range args {
		p := t.Input.Properties[name]
		if !bounded(p) {
			continue // nothing here to check: its type is checked where it is decoded
		}
		var x any
		if segjson.Unmarshal(v, &x) != nil {
			continue
		}
		d := map[string]any{"argument": name}
		if len(p.Enum) > 0 && !inEnum(p.Enum, x, v) {
			d["allowed"] = p.Enum
			return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be one of %s; got %s", name, enumList(p.Enum), bytes.TrimSpace(v)), Details: d}
		}
		switch x := x.(type) {
		case float64:
			if p.Type == "integer" && x != math.Trunc(x) {
				return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be a whole number, got %v", name, x), Details: d}
			}
			low := p.Minimum != nil && x < *p.Minimum
			high := p.Maximum != nil && x > *p.Maximum
			switch {
			case (low || high) && p.Minimum != nil && p.Maximum != nil:
				d["min"], d["max"] = *p.Minimum, *p.Maximum
				return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be between %v and %v, got %v", name, *p.Minimum, *p.Maximum, x), Details: d}
			case low:
				d["min"] = *p.Minimum
				return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be at least %v, got %v", name, *p.Minimum, x), Details: d}
			case high:
				d["max"] = *p.Maximum
				return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be at most %v, got %v", name, *p.Maximum, x), Details: d}
			}
		case []any:
			if p.MinItems != nil && len(x) < *p.MinItems {
				d["min"] = *p.MinItems
				return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must hold at least %d items, got %d", name, *p.MinItems, len(x)), Details: d}
			}
			if p.MaxItems != nil && len(x) > *p.MaxItems {
				d["max"] = *p.MaxItems
				return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q holds %d items; at most %d", name, len(x), *p.MaxItems), Details: d}
			}
		}
	}
	return nil
}

// bounded reports whether the input schema's property p says more than
// a type: a closed set, bounds, or a whole number.
func bounded(p *jsonschema.Schema) bool {
	return p != nil && (len(p.Enum) > 0 || p.Minimum != nil || p.Maximum != nil || p.MinItems != nil || p.MaxItems != nil || p.Type == "integer")
}

// enumAliases are other names models often give members of the built-in
// tools' closed sets; the handlers map them to the member (enumMember).
var enumAliases = map[string]string{"md": ExportMarkdown, "text": ExportTable, "average": "avg"}

// enumMember returns the member of values that v names: case and
// surrounding space do not matter, and an alias names its member.
func enumMember[T any](values []T, v string) (string, bool) {
	v = strings.ToLower(strings.TrimSpace(v))
	if a, ok := enumAliases[v]; ok {
		v = a
	}
	for _, m := range values {
		if s, ok := any(m).(string); ok && strings.ToLower(s) == v {
			return s, true
		}
	}
	return "", false
}

// inEnum reports whether the argument x (raw: its JSON) is a member of
// enum. An empty string is an omitted optional argument (its default).
func inEnum(enum []any, x any, raw json.RawMessage) bool {
	if s, ok := x.(string); ok {
		if strings.TrimSpace(s) == "" {
			return true
		}
		_, ok := enumMember(enum, s)
		return ok
	}
	for _, m := range enum {
		if b, err := json.Marshal(m); err == nil && bytes.Equal(b, bytes.TrimSpace(raw)) {
			return true
		}
	}
	return false
}

// enumList renders a closed set for an error: "csv, markdown or text".
func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, m := range enum {
		parts[i] = fmt.Sprint(m)
	}
	if len(parts) == 1 {
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}
