package tools

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func updateObjectTool() *Tool {
	return &Tool{
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
			"object":  objectArg("The fields to change and their new values (REST JSON).", map[string]any{"status": "closed", "priority": 1}),
			"dry_run": dryRunArg(),
		}),
		Handler: updateObject,
	}
}

type updateObjectArgs struct {
	ClassName string     `json:"class_name" jsonschema:"the Parse class"`
	ObjectID  string     `json:"object_id" jsonschema:"the objectId of the object to change"`
	Object    JSONObject `json:"object"`
	DryRun    bool       `json:"dry_run,omitempty"`
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
