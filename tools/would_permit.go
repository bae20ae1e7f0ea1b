package tools

import (
	"context"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
)

// Operator-side introspection: would a call pass the dispatch gate. Admin
// only, and only for an agent whose policy exposes introspection
// (OperatorOnly). The answer carries no credentials and not the values of
// the agent's row filters (only the fields they test).

func wouldPermitTool() *Tool {
	return &Tool{
		Name:         "would_permit",
		Title:        "Would a call be permitted",
		Category:     CategoryDiscovery,
		Description:  `Judge a tool call the way dispatch would, without running it: {"allowed":true} or the reason it would be refused (permission_tier, operator_only, tool_filtered, env_gate, token_scope, token_team, hidden_class, class_filter, unknown, clp, tenant, method_filtered, unknown_method, unknown_tool) and where. arguments are the call's arguments; class_name (and method_name for call_method) are what is judged.`,
		Permission:   agent.Admin,
		OperatorOnly: true,
		Timeout:      10 * time.Second,
		ReadOnly:     true,
		Input: schemaFor[wouldPermitArgs](map[string]*jsonschema.Schema{
			"arguments": {Type: "object", Description: "The arguments the call would have.", Examples: []any{map[string]any{"class_name": "Ticket"}}},
		}),
		Handler: wouldPermit,
	}
}

type wouldPermitArgs struct {
	Tool      string     `json:"tool" jsonschema:"the tool's name"`
	Arguments JSONObject `json:"arguments,omitempty"`
}

func wouldPermit(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[wouldPermitArgs](c.Args)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(args.Tool) == "" {
		return nil, argRequired("tool")
	}
	var t *Tool
	if c.Registry != nil {
		t, _ = c.Registry.Get(args.Tool)
	}
	if t == nil && c.Catalog != nil {
		// A remote agent's tool: judged as listed (the tier, the tool
		// filter and the token scope); one the agent may not call reads
		// as unknown, as it is absent from its listings.
		for _, ct := range c.Catalog("") {
			if ct.Name == args.Tool {
				t = ct
			}
		}
	}
	if t == nil {
		return agent.Verdict{Reason: "unknown_tool", Message: "no tool is named " + args.Tool}, nil
	}
	class, _ := args.Arguments["class_name"].(string)
	method := ""
	if t.MethodArg != "" { // the tool calls a declared method: it is judged too
		method, _ = args.Arguments[t.MethodArg].(string)
	}
	return c.Scope.WouldPermit(ctx, t.Info(), c.gates(), class, method), nil
}
