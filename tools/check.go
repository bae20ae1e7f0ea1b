package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
)

// CheckArgs checks a call's arguments against the tool's declared input
// schema, once, before the tool runs: required arguments present, and the
// bounds (minimum, maximum, minItems, maxItems) of the arguments given.
// Errors are invalid_argument naming the argument. Types and unknown
// arguments are checked where the arguments are decoded (decodeArgs),
// which also accepts the forms models often send (a JSON string holding
// an object, a comma-separated list).
func CheckArgs(t *Tool, raw json.RawMessage) error {
	if t == nil || t.Input == nil {
		return nil
	}
	raw = bytes.TrimSpace(raw)
	args := map[string]json.RawMessage{}
	if len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
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
		if p == nil {
			continue
		}
		var x any
		if json.Unmarshal(v, &x) != nil {
			continue
		}
		d := map[string]any{"argument": name}
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
