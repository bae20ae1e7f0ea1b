package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func getObjectTool() *Tool {
	return &Tool{
		Name:        "get_object",
		Op:          parse.OpGet,
		Category:    CategoryQuery,
		Title:       "Get an object",
		Description: "Fetch one object in full by objectId.",
		Permission:  agent.Readonly,
		Timeout:     10 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[getObjectArgs](map[string]*jsonschema.Schema{
			"object_id": objectIDSchema,
			"include":   includeSchema,
		}),
		Handler: getObject,
	}
}

type getObjectArgs struct {
	ClassName string     `json:"class_name"`
	ObjectID  string     `json:"object_id"`
	Include   StringList `json:"include,omitempty"`
}

func getObject(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[getObjectArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openObject(ctx, c.Scope, args.ClassName, args.ObjectID)
	if err != nil {
		return nil, err
	}
	sch := cls.Schema
	_, _, include, err := projection(sch, nil, args.Include)
	if err != nil {
		return nil, err
	}
	rows, err := getRows(ctx, cls, []string{args.ObjectID}, include)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, objectNotFound(sch.ClassName, args.ObjectID)
	}
	return &ObjectResult{ClassName: sch.ClassName, Object: rows[0]}, nil
}

// getRows reads objects by id as JSON text, as findRows reads a find's.
func getRows(ctx context.Context, cls *agent.Class, ids []string, include []string) ([]json.RawMessage, error) {
	if len(include) == 0 {
		return cls.GetJSON(ctx, ids, nil)
	}
	rows, err := cls.Get(ctx, ids, nil)
	if err != nil {
		return nil, err
	}
	if err := cls.Include(ctx, rows, include, nil); err != nil {
		return nil, err
	}
	return agent.EncodeRows(rows)
}

// ObjectResult is the answer of get_object: one object in full.
type ObjectResult struct {
	ClassName string          `json:"class_name"`
	Object    json.RawMessage `json:"object"`
}

func (r *ObjectResult) objectRows() []map[string]any { return decodeRows([]json.RawMessage{r.Object}) }
