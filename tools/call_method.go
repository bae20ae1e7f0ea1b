package tools

import (
	"context"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
)

// call_method runs an operator-declared method of a class: the
// intent-based write path. The tool itself is open to every tier and
// needs no gate; the method's own tier, the agent's method filter, the
// method's gate and the class-level permission are checked by the scope.

// callMethodName is the tool's name (its approvals name it too).
const callMethodName = "call_method"

func callMethodTool() *Tool {
	return &Tool{
		Name:        callMethodName,
		Title:       "Call a method",
		Category:    CategoryMutation,
		Description: "Call a class's declared method (see get_schema); instance methods need object_id.",
		Permission:  agent.Readonly,
		Gate:        agent.GateNone,
		Destructive: true, // some declared methods are
		// would_permit judges the method named in method_name.
		MethodArg: "method_name",
		Timeout:   60 * time.Second,
		Input: schemaFor[callMethodArgs](map[string]*jsonschema.Schema{
			"arguments": {Type: "object", Description: "see get_schema"},
			"dry_run":   {Type: "boolean"},
		}),
		Handler: callMethod,
	}
}

type callMethodArgs struct {
	ClassName  string     `json:"class_name"`
	MethodName string     `json:"method_name"`
	ObjectID   string     `json:"object_id,omitempty" jsonschema:"an instance method's object"`
	Arguments  JSONObject `json:"arguments,omitempty"`
	DryRun     bool       `json:"dry_run,omitempty"`
}

func callMethod(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[callMethodArgs](c.Args)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.ClassName) == "" {
		return nil, argRequired("class_name")
	}
	if strings.TrimSpace(args.MethodName) == "" {
		return nil, argRequired("method_name")
	}
	margs := map[string]any(args.Arguments)
	dry := args.DryRun
	// dry_run inside arguments is the same flag (the form some clients
	// use); it is never passed on to the method.
	if v, ok := margs["dry_run"].(bool); ok {
		dry = dry || v
		margs = cloneWithout(margs, "dry_run")
	}
	res, err := c.Scope.CallMethod(ctx, agent.MethodRequest{
		Class: args.ClassName, Method: args.MethodName, ObjectID: args.ObjectID,
		Args: margs, DryRun: dry, Gates: c.gates(),
		Confirm: func(ctx context.Context, summary string) (context.Context, error) {
			return c.approve(ctx, Approval{Tool: callMethodName, Summary: summary})
		},
	})
	if err != nil {
		if args.ObjectID != "" {
			return nil, writeErr(err, args.ClassName, args.ObjectID)
		}
		return nil, err
	}
	if dry {
		return res, nil
	}
	out := map[string]any{"class_name": args.ClassName, "method": args.MethodName, "result": res}
	if args.ObjectID != "" {
		out["object_id"] = args.ObjectID
	}
	return out, nil
}

func cloneWithout(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
