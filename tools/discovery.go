package tools

import (
	"context"
	"time"

	"github.com/parsemcp/parsemcp/agent"
)

func discoveryTools() []*Tool {
	return []*Tool{{
		Name:        "list_tools",
		Category:    CategoryDiscovery,
		Description: "A compact catalog of the tools you may call: name, category and one-line description, without input schemas. Cheaper than tools/list; pass category to narrow it.",
		Permission:  agent.Readonly,
		Timeout:     5 * time.Second,
		ReadOnly:    true,
		Input:       schemaFor[listToolsArgs](nil),
		Handler:     listTools,
	}}
}

type listToolsArgs struct {
	Category string `json:"category,omitempty" jsonschema:"only tools of this category (schema, query, aggregate, mutation, export, discovery, custom, remote)"`
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

// gates returns the operator gates of the call (all closed without a
// configuration).
func (c *Call) gates() agent.Gates {
	if c.Config == nil {
		return agent.Gates{}
	}
	return c.Config.Gates
}
