package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// deleteClassName is the tool's name (its approvals name it too).
const deleteClassName = "delete_class"

func deleteClassTool() *Tool {
	return &Tool{
		Name:        deleteClassName,
		Title:       "Delete a class",
		Category:    CategoryMutation,
		Description: "Delete an empty class (master key only); a class holding objects is refused. Pass dry_run:true to check without deleting.",
		Permission:  agent.Admin,
		Gate:        agent.GateRawSchema,
		Op:          parse.OpAddField,
		Destructive: true,
		Idempotent:  true,
		Timeout:     30 * time.Second,
		Input:       schemaFor[deleteClassArgs](map[string]*jsonschema.Schema{"dry_run": dryRunArg()}),
		Handler:     deleteClass,
	}
}

type deleteClassArgs struct {
	ClassName string `json:"class_name" jsonschema:"the class to delete"`
	DryRun    bool   `json:"dry_run,omitempty"`
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
	ctx, err = c.approve(ctx, Approval{Tool: deleteClassName, Summary: fmt.Sprintf(
		"Permanently delete the class %s (%d fields): its table and schema are dropped. This cannot be undone.", sch.ClassName, len(sch.Fields))})
	if err != nil {
		return nil, err
	}
	if err := c.Scope.DeleteClass(ctx, args.ClassName); err != nil {
		return nil, err
	}
	return map[string]any{"class_name": args.ClassName, "deleted": true}, nil
}
