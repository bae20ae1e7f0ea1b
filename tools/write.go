package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// The raw write tools: create, update and delete one object, create and
// delete a class. They are the escape hatch behind two operator gates each
// (a declared method through call_method needs one); every write goes
// through the agent's scope, so class-level permissions, ACLs, the agent's
// filters, tenant scope and protected fields apply exactly as on reads.

func writeTools() []*Tool {
	dry := &jsonschema.Schema{Type: "boolean", Description: "Preview only: validate and show what would change; nothing is written."}
	obj := func(desc string, example map[string]any) *jsonschema.Schema {
		return &jsonschema.Schema{Type: "object", Description: desc, Examples: []any{example}}
	}
	return []*Tool{
		{
			Name:        "create_object",
			Title:       "Create an object",
			Category:    CategoryMutation,
			Description: `Create one object of a class. object maps field names to values in Parse REST JSON (Dates as {"__type":"Date","iso":"…"}, Pointers as {"__type":"Pointer","className":"…","objectId":"…"}); objectId, createdAt and updatedAt are assigned by the server. Pass dry_run:true to validate without writing. Prefer a declared method (call_method) when the class has one.`,
			Permission:  agent.Write,
			Gate:        agent.GateRawCRUD,
			Op:          parse.OpCreate,
			Timeout:     15 * time.Second,
			Input: schemaFor[createObjectArgs](map[string]*jsonschema.Schema{
				"object":  obj("Field values of the new object (REST JSON). ACL may be set.", map[string]any{"title": "Check the valves", "priority": 2, "project": map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pApollo001"}}),
				"dry_run": dry,
			}),
			Handler: createObject,
		},
		{
			Name:        "update_object",
			Title:       "Update an object",
			Category:    CategoryMutation,
			Description: `Set fields of one object. object maps the fields to change to their new values (REST JSON); null or {"__op":"Delete"} unsets a field. Only objects this agent can read and write are found. Pass dry_run:true to see the current and the new values without writing.`,
			Permission:  agent.Write,
			Gate:        agent.GateRawCRUD,
			Op:          parse.OpUpdate,
			Destructive: true,
			Idempotent:  true,
			Timeout:     15 * time.Second,
			Input: schemaFor[updateObjectArgs](map[string]*jsonschema.Schema{
				"object":  obj("The fields to change and their new values (REST JSON).", map[string]any{"status": "closed", "priority": 1}),
				"dry_run": dry,
			}),
			Handler: updateObject,
		},
		{
			Name:        "delete_object",
			Title:       "Delete an object",
			Category:    CategoryMutation,
			Description: "Delete one object by objectId. Only objects this agent can read and write are found. Pass dry_run:true to see the object that would be deleted.",
			Permission:  agent.Write,
			Gate:        agent.GateRawCRUD,
			Op:          parse.OpDelete,
			Destructive: true,
			Idempotent:  true,
			Timeout:     15 * time.Second,
			Input:       schemaFor[deleteObjectArgs](map[string]*jsonschema.Schema{"dry_run": dry}),
			Handler:     deleteObject,
		},
		{
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
				"class_level_permissions": obj("Parse class-level permissions; omitted operations stay public.", map[string]any{"find": map[string]any{"*": true}, "create": map[string]any{"role:Admin": true}, "protectedFields": map[string]any{"*": []any{"secret"}}}),
				"dry_run":                 dry,
			}),
			Handler: createClass,
		},
		{
			Name:        "delete_class",
			Title:       "Delete a class",
			Category:    CategoryMutation,
			Description: "Delete an empty class (master key only); a class holding objects is refused. Pass dry_run:true to check without deleting.",
			Permission:  agent.Admin,
			Gate:        agent.GateRawSchema,
			Op:          parse.OpAddField,
			Destructive: true,
			Idempotent:  true,
			Timeout:     30 * time.Second,
			Input:       schemaFor[deleteClassArgs](map[string]*jsonschema.Schema{"dry_run": dry}),
			Handler:     deleteClass,
		},
	}
}

func fieldTypeEnum() []any {
	out := make([]any, len(parse.FieldTypes))
	for i, t := range parse.FieldTypes {
		out[i] = string(t)
	}
	return out
}

// JSONObject is an object argument; a string holding a JSON object is
// accepted too, as models often send one.
type JSONObject map[string]any

// UnmarshalJSON accepts a JSON object or a string holding one.
func (o *JSONObject) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(strings.TrimSpace(s))
	}
	if string(b) == "null" {
		*o = nil
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		// A type error gets the argument's name filled in by the decoder.
		return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[map[string]any]()}
	}
	*o = m
	return nil
}

type createObjectArgs struct {
	ClassName string     `json:"class_name" jsonschema:"the Parse class"`
	Object    JSONObject `json:"object"`
	DryRun    bool       `json:"dry_run,omitempty"`
}

type updateObjectArgs struct {
	ClassName string     `json:"class_name" jsonschema:"the Parse class"`
	ObjectID  string     `json:"object_id" jsonschema:"the objectId of the object to change"`
	Object    JSONObject `json:"object"`
	DryRun    bool       `json:"dry_run,omitempty"`
}

type deleteObjectArgs struct {
	ClassName string `json:"class_name" jsonschema:"the Parse class"`
	ObjectID  string `json:"object_id" jsonschema:"the objectId of the object to delete"`
	DryRun    bool   `json:"dry_run,omitempty"`
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

type deleteClassArgs struct {
	ClassName string `json:"class_name" jsonschema:"the class to delete"`
	DryRun    bool   `json:"dry_run,omitempty"`
}

func argRequired(name string) *Error {
	return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q is required", name), Details: map[string]any{"argument": name}}
}

// objectNotFound is the answer for an object that is missing, unreadable or
// not writable: the three read the same, as get_object's.
func objectNotFound(class, id string) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf("Object not found: %s#%s", class, id), Details: map[string]any{"kind": "object_not_found"}}
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

func createObject(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[createObjectArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	if args.Object == nil {
		return nil, argRequired("object")
	}
	if args.DryRun {
		obj, err := c.Scope.PreviewCreate(ctx, sch.ClassName, parse.Object(args.Object))
		if err != nil {
			return nil, err
		}
		return map[string]any{"dry_run": true, "class_name": sch.ClassName, "would_create": obj,
			"note": "nothing was written; objectId, createdAt and updatedAt are assigned on creation"}, nil
	}
	obj, err := c.Scope.Create(ctx, sch.ClassName, parse.Object(args.Object))
	if err != nil {
		return nil, err
	}
	return map[string]any{"class_name": sch.ClassName, "object_id": obj[parse.FieldObjectID], "created": obj}, nil
}

func updateObject(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[updateObjectArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classObject(ctx, c.Scope, args.ClassName, args.ObjectID)
	if err != nil {
		return nil, err
	}
	if args.Object == nil {
		return nil, argRequired("object")
	}
	// The object must be one the agent can write: otherwise it is not
	// found. As in Parse Server, writing does not need reading; an object
	// the agent cannot read is changed, but nothing of it is shown.
	t, err := c.Scope.Preview(ctx, sch.ClassName, args.ObjectID, parse.OpUpdate)
	if err != nil {
		return nil, err
	}
	if !t.Writable {
		return nil, objectNotFound(sch.ClassName, args.ObjectID)
	}
	if args.DryRun {
		if err := c.Scope.ValidateUpdate(ctx, sch.ClassName, parse.Object(args.Object)); err != nil {
			return nil, err
		}
		return map[string]any{"dry_run": true, "class_name": sch.ClassName, "object_id": args.ObjectID,
			"would_update": map[string]any{"before": t.Before(parse.Object(args.Object)), "after": map[string]any(args.Object)}}, nil
	}
	after, err := c.Scope.Update(ctx, sch.ClassName, args.ObjectID, parse.Object(args.Object))
	if err != nil {
		return nil, writeErr(err, sch.ClassName, args.ObjectID)
	}
	return map[string]any{"class_name": sch.ClassName, "object_id": args.ObjectID, "updated": after}, nil
}

func deleteObject(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[deleteObjectArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classObject(ctx, c.Scope, args.ClassName, args.ObjectID)
	if err != nil {
		return nil, err
	}
	t, err := c.Scope.Preview(ctx, sch.ClassName, args.ObjectID, parse.OpDelete)
	if err != nil {
		return nil, err
	}
	if !t.Writable {
		return nil, objectNotFound(sch.ClassName, args.ObjectID)
	}
	if args.DryRun {
		shown := t.Object
		if shown == nil {
			shown = parse.Object{parse.FieldObjectID: args.ObjectID} // writable, not readable: nothing else is shown
		}
		return map[string]any{"dry_run": true, "class_name": sch.ClassName, "object_id": args.ObjectID, "would_delete": shown}, nil
	}
	ctx, err = c.approve(ctx, Approval{Tool: "delete_object", Summary: fmt.Sprintf(
		"Permanently delete the %s object %s (with its relation links). This cannot be undone.", sch.ClassName, args.ObjectID)})
	if err != nil {
		return nil, err
	}
	before, err := c.Scope.Delete(ctx, sch.ClassName, args.ObjectID)
	if err != nil {
		return nil, writeErr(err, sch.ClassName, args.ObjectID)
	}
	return map[string]any{"class_name": sch.ClassName, "object_id": args.ObjectID, "deleted": before}, nil
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
		if err := classCheck(ctx, c.Scope, sch.ClassName, parse.OpAddField); err != nil {
			return nil, err
		}
		if _, err := c.Scope.Schema(ctx, sch.ClassName); err == nil {
			return nil, &agent.InvalidError{Msg: fmt.Sprintf("%v: %s", store.ErrClassExists, sch.ClassName)}
		}
		for name, f := range sch.Fields {
			if (f.Type == parse.TypePointer || f.Type == parse.TypeRelation) && !c.Scope.Accessible(f.TargetClass) {
				return nil, &agent.InvalidError{Msg: fmt.Sprintf("field %q points to class %q, which was not found", name, f.TargetClass)}
			}
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

func deleteClass(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[deleteClassArgs](c.Args)
	if err != nil {
		return nil, err
	}
	if err := schemaClassName(args.ClassName); err != nil {
		return nil, err
	}
	// The checks run before anything is asked or written: a person is
	// asked only about a deletion that can happen.
	if err := classCheck(ctx, c.Scope, args.ClassName, parse.OpAddField); err != nil {
		return nil, err
	}
	sch, err := c.Scope.Schema(ctx, args.ClassName)
	if err != nil {
		return nil, err
	}
	n, err := c.Scope.WithoutCanonicalFilter().Count(ctx, &query.Query{Class: sch.ClassName})
	if err != nil {
		return nil, err
	}
	if n > 0 {
		return nil, &agent.InvalidError{Msg: store.ClassNotEmpty(sch.ClassName, n).Error()}
	}
	if args.DryRun {
		return map[string]any{"dry_run": true, "class_name": sch.ClassName, "would_delete_class": schemaSummary(sch)}, nil
	}
	ctx, err = c.approve(ctx, Approval{Tool: "delete_class", Summary: fmt.Sprintf(
		"Permanently delete the class %s (%d fields): its table and schema are dropped. This cannot be undone.", sch.ClassName, len(sch.Fields))})
	if err != nil {
		return nil, err
	}
	if err := c.Scope.DeleteClass(ctx, args.ClassName); err != nil {
		return nil, err
	}
	return map[string]any{"class_name": args.ClassName, "deleted": true}, nil
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
