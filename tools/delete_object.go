package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// deleteObjectName is the tool's name (its approvals name it too).
const deleteObjectName = "delete_object"

func deleteObjectTool() *Tool {
	return &Tool{
		Name:        deleteObjectName,
		Title:       "Delete an object",
		Category:    CategoryMutation,
		Description: "Delete one object by objectId. Only objects this agent can read and write are found. Pass dry_run:true to see the object that would be deleted.",
		Permission:  agent.Write,
		Gate:        agent.GateRawCRUD,
		Op:          parse.OpDelete,
		Destructive: true,
		Idempotent:  true,
		Timeout:     15 * time.Second,
		Input:       schemaFor[deleteObjectArgs](map[string]*jsonschema.Schema{"dry_run": dryRunArg()}),
		Handler:     deleteObject,
	}
}

type deleteObjectArgs struct {
	ClassName string `json:"class_name" jsonschema:"the Parse class"`
	ObjectID  string `json:"object_id" jsonschema:"the objectId of the object to delete"`
	DryRun    bool   `json:"dry_run,omitempty"`
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
	ctx, err = c.approve(ctx, Approval{Tool: deleteObjectName, Summary: fmt.Sprintf(
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
