package tools

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func createObjectTool() *Tool {
	return &Tool{
		Name:        "create_object",
		Title:       "Create an object",
		Category:    CategoryMutation,
		Description: `Create one object of a class. object maps field names to values in Parse REST JSON (Dates as {"__type":"Date","iso":"…"}, Pointers as {"__type":"Pointer","className":"…","objectId":"…"}); objectId, createdAt and updatedAt are assigned by the server. Pass dry_run:true to validate without writing. Prefer a declared method (call_method) when the class has one.`,
		Permission:  agent.Write,
		Gate:        agent.GateRawCRUD,
		Op:          parse.OpCreate,
		Timeout:     15 * time.Second,
		Input: schemaFor[createObjectArgs](map[string]*jsonschema.Schema{
			"object":  objectArg("Field values of the new object (REST JSON). ACL may be set.", map[string]any{"title": "Check the valves", "priority": 2, "project": map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pApollo001"}}),
			"dry_run": dryRunArg(),
		}),
		Handler: createObject,
	}
}

type createObjectArgs struct {
	ClassName string     `json:"class_name" jsonschema:"the Parse class"`
	Object    JSONObject `json:"object"`
	DryRun    bool       `json:"dry_run,omitempty"`
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
