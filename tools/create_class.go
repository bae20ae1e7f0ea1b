package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func createClassTool() *Tool {
	return &Tool{
		Name:        "create_class",
		Title:       "Create a class",
		Category:    CategoryMutation,
		Description: `Create a class (master key only). fields maps each field name to {"type": String|Number|Boolean|Date|Object|Array|Pointer|Relation|File|GeoPoint|Polygon|Bytes, "targetClass": for Pointer and Relation, "required": bool}; objectId, createdAt, updatedAt and ACL are added. class_level_permissions takes Parse's CLP JSON. Pass dry_run:true to validate without creating.`,
		Permission:  agent.Admin,
		Gate:        agent.GateRawSchema,
		Op:          parse.OpAddField,
		Timeout:     30 * time.Second,
		Input: schemaFor[createClassArgs](map[string]*jsonschema.Schema{
			"fields": {
				Type:        "object",
				Description: "Field name → field definition.",
				Examples: []any{map[string]any{"title": map[string]any{"type": "String", "required": true},
					"project": map[string]any{"type": "Pointer", "targetClass": "Project"}}},
				AdditionalProperties: &jsonschema.Schema{
					Type: "object",
					Properties: map[string]*jsonschema.Schema{
						"type":        {Type: "string", Enum: fieldTypeEnum()},
						"targetClass": {Type: "string", Description: "The class a Pointer or Relation refers to."},
						"required":    {Type: "boolean"},
					},
					Required:             []string{"type"},
					AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
				},
			},
			"class_level_permissions": objectArg("Parse class-level permissions; omitted operations stay public.", map[string]any{"find": map[string]any{"*": true}, "create": map[string]any{"role:Admin": true}, "protectedFields": map[string]any{"*": []any{"secret"}}}),
			"dry_run":                 dryRunArg(),
		}),
		Handler: createClass,
	}
}

func fieldTypeEnum() []any {
	out := make([]any, len(parse.FieldTypes))
	for i, t := range parse.FieldTypes {
		out[i] = string(t)
	}
	return out
}

type fieldSpec struct {
	Type        string `json:"type"`
	TargetClass string `json:"targetClass,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

type createClassArgs struct {
	ClassName string               `json:"class_name" jsonschema:"the name of the new class: a letter, then letters, digits or underscores"`
	Fields    map[string]fieldSpec `json:"fields,omitempty"`
	CLP       json.RawMessage      `json:"class_level_permissions,omitempty"`
	DryRun    bool                 `json:"dry_run,omitempty"`
}

// buildSchema turns create_class's arguments into a schema, checking the
// field definitions and the class-level permissions.
func buildSchema(args createClassArgs) (parse.Schema, error) {
	sch := parse.NewSchema(args.ClassName)
	for _, name := range slices.Sorted(maps.Keys(args.Fields)) {
		spec := args.Fields[name]
		if parse.IsSystemField(name) {
			return parse.Schema{}, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("fields.%s: %s is a default field of every class and cannot be defined", name, name), Details: map[string]any{"argument": "fields"}}
		}
		t := parse.FieldType(spec.Type)
		if !t.Valid() || t == parse.TypeACL {
			return parse.Schema{}, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("fields.%s: unknown type %q (use one of %v)", name, spec.Type, parse.FieldTypes), Details: map[string]any{"argument": "fields"}}
		}
		isRef := t == parse.TypePointer || t == parse.TypeRelation
		if isRef != (spec.TargetClass != "") {
			msg := fmt.Sprintf("fields.%s: a %s field needs a targetClass", name, t)
			if !isRef {
				msg = fmt.Sprintf("fields.%s: targetClass is only for Pointer and Relation fields", name)
			}
			return parse.Schema{}, &Error{Code: CodeInvalidArgument, Message: msg, Details: map[string]any{"argument": "fields"}}
		}
		sch.Fields[name] = parse.Field{Type: t, TargetClass: spec.TargetClass, Required: spec.Required}
	}
	if raw := bytes.TrimSpace(args.CLP); len(raw) > 0 && string(raw) != "null" {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&sch.CLP); err != nil {
			return parse.Schema{}, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument \"class_level_permissions\": %v", strings.TrimPrefix(err.Error(), "json: ")), Details: map[string]any{"argument": "class_level_permissions"}}
		}
		// Stored with the omitted operations stated public, so Parse
		// Server (which reads an omitted operation as master-key only)
		// and parsemcp agree on what was meant.
		sch.CLP = sch.CLP.Completed()
	}
	if err := sch.Validate(); err != nil {
		return parse.Schema{}, &agent.InvalidError{Msg: err.Error()}
	}
	return sch, nil
}

func createClass(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[createClassArgs](c.Args)
	if err != nil {
		return nil, err
	}
	if err := schemaClassName(args.ClassName); err != nil {
		return nil, err
	}
	sch, err := buildSchema(args)
	if err != nil {
		return nil, err
	}
	if args.DryRun {
		// The refusals of a real create, nothing written.
		if err := c.Scope.CheckCreateClass(ctx, sch); err != nil {
			return nil, err
		}
		return map[string]any{"dry_run": true, "class_name": sch.ClassName, "would_create_class": schemaSummary(sch)}, nil
	}
	if err := c.Scope.CreateClass(ctx, sch); err != nil {
		return nil, err
	}
	created, err := c.Scope.Schema(ctx, sch.ClassName)
	if err != nil {
		return nil, err
	}
	return map[string]any{"class_name": sch.ClassName, "created": true, "schema": schemaSummary(created)}, nil
}
