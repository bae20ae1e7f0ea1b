package tools

import (
	"context"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
)

func listToolsTool() *Tool {
	return &Tool{
		Name:        "list_tools",
		Title:       "List tools",
		Category:    CategoryDiscovery,
		Description: "The tools you may call, one line each.",
		Permission:  agent.Readonly,
		Timeout:     5 * time.Second,
		ReadOnly:    true,
		Input:       schemaFor[listToolsArgs](map[string]*jsonschema.Schema{"category": enumSchema("", "", CategorySchema, CategoryQuery, CategorySearch, CategoryAggregate, CategoryExport, CategoryMutation, CategoryDiscovery, CategoryCustom, CategoryRemote)}),
		Handler:     listTools,
	}
}

type listToolsArgs struct {
	Category string `json:"category,omitempty" jsonschema:"a category"`
}

func listTools(_ context.Context, c *Call) (any, error) {
	args, err := decodeArgs[listToolsArgs](c.Args)
	if err != nil {
		return nil, err
	}
	list := []any{}
	for _, t := range c.allowed(args.Category) {
		list = append(list, map[string]any{"name": t.Name, "category": t.Category, "description": t.Description})
	}
	return map[string]any{"tools": list, "categories": Categories}, nil
}
