package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// The raw write tools: create, update and delete one object, create and
// delete a class. They are the escape hatch behind two operator gates each
// (a declared method through call_method needs one); every write goes
// through the agent's scope, so class-level permissions, ACLs, the agent's
// filters, tenant scope and protected fields apply exactly as on reads.
// This file holds what they share.

// dryRunArg is the dry_run argument of the write tools.
func dryRunArg() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "boolean", Description: "Preview only: validate and show what would change; nothing is written."}
}

// objectArg is an object argument of the write tools, with an example.
func objectArg(desc string, example map[string]any) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Description: desc, Examples: []any{example}}
}

// objectNotFound is the answer for an object that is missing, unreadable or
// not writable: the three read the same, as get_object's.
func objectNotFound(class, id string) *Error {
	return Refusal("object_not_found", fmt.Sprintf("Object not found: %s#%s", class, id), nil)
}

// writeErr gives a scope write error the object's name when it is "not
// found".
func writeErr(err error, class, id string) error {
	if errors.Is(err, agent.ErrNotFound) {
		return objectNotFound(class, id)
	}
	return err
}

// classCheck runs the class-level part of the dispatch gate for op on class
// (hidden, filtered, CLP, tenant; for OpAddField the schema-change rules)
// without touching data, and returns the refusal as the error the
// operation itself would give.
func classCheck(ctx context.Context, s *agent.Scope, class string, op parse.Op) error {
	v := s.ClassVerdict(ctx, op, agent.Gates{}, class, "")
	if v.Allowed {
		return nil
	}
	switch v.Reason {
	case "unknown", "hidden_class", "class_filter":
		return &agent.ClassError{Class: class, Kind: v.Reason}
	case "error":
		return errors.New(v.Message)
	}
	return &agent.DeniedError{Kind: v.Reason, Msg: v.Message}
}

// schemaClassName checks a class_name argument of the schema tools. System
// classes are refused up front, whoever asks and whether or not they
// exist, so a hidden one reads like any other.
func schemaClassName(class string) error {
	if strings.TrimSpace(class) == "" {
		return argRequired("class_name")
	}
	if parse.IsSystemClass(class) {
		return &agent.InvalidError{Msg: fmt.Sprintf("system class %s cannot be created or deleted by an agent", class)}
	}
	return nil
}

// schemaSummary is a compact view of a schema: field → type
// ("Pointer<_User>" for references), and the class-level permissions.
func schemaSummary(sch parse.Schema) map[string]any {
	fields := map[string]string{}
	for name, f := range sch.Fields {
		t := string(f.Type)
		if f.TargetClass != "" {
			t += "<" + f.TargetClass + ">"
		}
		if f.Required {
			t += " (required)"
		}
		fields[name] = t
	}
	return map[string]any{"fields": fields, "class_level_permissions": sch.CLP}
}
