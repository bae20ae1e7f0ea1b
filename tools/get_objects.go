package tools

import (
	"context"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

// MaxGetObjects bounds the ids of one get_objects call.
const MaxGetObjects = 50

// getObjectsName is the tool's name (its next_call names it too).
const getObjectsName = "get_objects"

func getObjectsTool() *Tool {
	return &Tool{
		Name:        getObjectsName,
		Op:          parse.OpGet,
		Category:    CategoryQuery,
		Title:       "Get objects by id",
		Description: "Fetch objects by objectId.",
		Permission:  agent.Readonly,
		Timeout:     10 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[getObjectsArgs](map[string]*jsonschema.Schema{
			"ids":     {Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(MaxGetObjects), Description: "objectIds"},
			"include": includeSchema,
		}),
		Handler: getObjects,
	}
}

type getObjectsArgs struct {
	ClassName string     `json:"class_name"`
	IDs       []string   `json:"ids"`
	Include   StringList `json:"include,omitempty"`
}

func getObjects(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[getObjectsArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	sch := cls.Schema
	var ids []string
	seen := map[string]bool{}
	for _, id := range args.IDs {
		if err := validID("ids", id); err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, &Error{Code: CodeInvalidArgument, Message: "argument \"ids\" must hold at least one objectId", Details: map[string]any{"argument": "ids"}}
	}
	if len(ids) > MaxGetObjects {
		return nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument \"ids\" holds %d distinct ids; at most %d per call (use query_class with {\"objectId\":{\"$in\":[…]}} for more)", len(ids), MaxGetObjects), Details: map[string]any{"argument": "ids", "max": MaxGetObjects}}
	}
	_, _, include, err := projection(sch, nil, args.Include)
	if err != nil {
		return nil, err
	}
	rows, err := cls.Get(ctx, ids, nil)
	if err != nil {
		return nil, err
	}
	if err := cls.Include(ctx, rows, include, nil); err != nil {
		return nil, err
	}
	byID := make(map[string]parse.Object, len(rows))
	for _, r := range rows {
		byID[r[parse.FieldObjectID].(string)] = r
	}
	res := &ObjectsResult{ClassName: sch.ClassName, Missing: []string{}, Requested: len(ids)}
	for _, id := range ids {
		if o, ok := byID[id]; ok {
			res.found = append(res.found, o)
		} else {
			res.Missing = append(res.Missing, id)
		}
	}
	res.ElidedFields = elideLarge(res.found, nil)
	res.args = map[string]any{"class_name": sch.ClassName}
	if len(args.Include) > 0 {
		res.args["include"] = []string(args.Include)
	}
	res.keepRows(len(res.found))
	return res, nil
}

// ObjectsResult is the answer of get_objects.
type ObjectsResult struct {
	ClassName string                  `json:"class_name"`
	Objects   map[string]parse.Object `json:"objects"`
	Missing   []string                `json:"missing"`
	Requested int                     `json:"requested"`
	Found     int                     `json:"found"`
	// ElidedFields: see QueryResult.
	ElidedFields []string `json:"elided_fields,omitempty"`
	Truncated    bool     `json:"truncated,omitempty"`
	RowsLeftOut  int      `json:"rows_left_out,omitempty"`
	// NextCall fetches the found objects the budget left out.
	NextCall *NextCall      `json:"next_call,omitempty"`
	found    []parse.Object // in request order
	args     map[string]any
}

func (r *ObjectsResult) pageRows() int { return len(r.found) }

func (r *ObjectsResult) keepRows(n int) {
	r.Objects = make(map[string]parse.Object, n)
	for _, o := range r.found[:n] {
		r.Objects[o[parse.FieldObjectID].(string)] = o
	}
	rest := make([]string, 0, len(r.found)-n)
	for _, o := range r.found[n:] {
		rest = append(rest, o[parse.FieldObjectID].(string))
	}
	r.Found = n
	r.Truncated = n < len(r.found)
	r.RowsLeftOut = len(r.found) - n
	r.NextCall = nil
	if r.Truncated {
		args := map[string]any{}
		for k, v := range r.args {
			args[k] = v
		}
		args["ids"] = rest
		r.NextCall = &NextCall{Tool: getObjectsName, Arguments: args}
	}
}

func (r *ObjectsResult) objectRows() []map[string]any { return objectMaps(r.found) }

func objectMaps(rows []parse.Object) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}
