package federation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
)

// The bounds on what a remote agent may send. Everything an agent
// publishes is checked against them before the platform, the MCP SDK or
// any session sees it: a payload past them is dropped, a tool past them
// is left out of the catalog with a warning.
const (
	// MaxPayloadDepth bounds the nesting of any payload (presence, tool
	// list, tool result): arrays and objects at most this deep.
	MaxPayloadDepth = 64
	// MaxSchemaBytes bounds one tool's input or output schema.
	MaxSchemaBytes = 64 << 10
	// MaxSchemaDepth bounds the nesting of one schema (a property of an
	// object property of an object … counts two levels each).
	MaxSchemaDepth = 32
	// MaxSchemaKeys bounds the keys of any one object in a schema (its
	// properties, its definitions …).
	MaxSchemaKeys = 1000
	// MaxKeyBytes bounds one key of a schema (a property name).
	MaxKeyBytes = 256
	// MaxDescriptionBytes bounds a tool's description.
	MaxDescriptionBytes = 16 << 10
	// MaxTitleBytes bounds a tool's title, an annotation title, an agent's
	// name and a presence revision.
	MaxTitleBytes = 256
)

// checkDepth reports whether b (JSON text, not yet known to be valid)
// nests arrays and objects deeper than max, before any decoder meets it.
func checkDepth(b []byte, max int) error {
	if jsonenc.NestingDepth(b, max) > max {
		return fmt.Errorf("%w: nested deeper than %d levels", ErrMalformed, max)
	}
	return nil
}

// checkSchemaShape checks one schema's size, nesting, and each object's
// key count and key length.
func checkSchemaShape(raw json.RawMessage) error {
	if len(raw) > MaxSchemaBytes {
		return fmt.Errorf("%d bytes (limit %d)", len(raw), MaxSchemaBytes)
	}
	if err := checkDepth(raw, MaxSchemaDepth); err != nil {
		return fmt.Errorf("nested deeper than %d levels", MaxSchemaDepth)
	}
	// Each open object: how many keys it holds so far, and whether the
	// next string token is a key.
	type frame struct {
		object bool
		keys   int
		atKey  bool
	}
	var stack []frame
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not JSON: %v", err)
		}
		top := len(stack) - 1
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:top]
			if top > 0 && stack[top-1].object {
				stack[top-1].atKey = true
			}
			continue
		}
		if top >= 0 && stack[top].object && stack[top].atKey {
			key, _ := tok.(string)
			stack[top].keys++
			stack[top].atKey = false
			if stack[top].keys > MaxSchemaKeys {
				return fmt.Errorf("an object holds more than %d keys", MaxSchemaKeys)
			}
			if len(key) > MaxKeyBytes {
				return fmt.Errorf("key %.40q… is longer than %d bytes", key, MaxKeyBytes)
			}
			continue
		}
		if d, ok := tok.(json.Delim); ok {
			stack = append(stack, frame{object: d == '{', atKey: d == '{'})
			continue
		}
		if top >= 0 && stack[top].object {
			stack[top].atKey = true // a scalar value ends a member
		}
	}
}

// checkText bounds a human-readable string an agent sends.
func checkText(what, s string, max int) error {
	if len(s) > max {
		return fmt.Errorf("%s is %d bytes (limit %d)", what, len(s), max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", what)
	}
	return nil
}

// objectSchema checks raw as a tool's schema: bounded, a JSON object, of
// type "object" when typed is set.
func objectSchema(what string, raw json.RawMessage, typed bool) error {
	if err := checkSchemaShape(raw); err != nil {
		return fmt.Errorf("%s: %v", what, err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil || s == nil {
		return fmt.Errorf("%s must be a JSON object", what)
	}
	if typed && s["type"] != "object" {
		return fmt.Errorf("%s must be a schema of type \"object\"", what)
	}
	return nil
}

// resolveInput reads and prepares an input schema for validating
// arguments. References must point inside the schema: nothing is ever
// fetched.
func resolveInput(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("input schema: %v", err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("input schema: %v", err)
	}
	return r, nil
}
