package tools

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
)

// Operator-side introspection: what governs this agent, and would a call
// pass the dispatch gate. Admin only. Neither answer carries credentials
// or the values of the agent's row filters (only the fields they test).

func governanceTools() []*Tool {
	return []*Tool{
		{
			Name:        "describe_agent",
			Title:       "Describe agent",
			Category:    CategoryDiscovery,
			Description: "Every layer that governs this agent: tier, identity mode, class/tool/method filters (the effective tool list included), the fields its row filters test, hidden classes, operator gates and per-class access. With class_name, only what governs that class.",
			Permission:  agent.Admin,
			Timeout:     10 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[describeAgentArgs](nil),
			Handler:     describeAgent,
		},
		{
			Name:        "would_permit",
			Title:       "Would a call be permitted",
			Category:    CategoryDiscovery,
			Description: `Judge a tool call the way dispatch would, without running it: {"allowed":true} or the reason it would be refused (permission_tier, tool_filtered, env_gate, token_scope, token_team, hidden_class, class_filter, unknown, clp, tenant, method_filtered, unknown_method, unknown_tool) and where. arguments are the call's arguments; class_name (and method_name for call_method) are what is judged.`,
			Permission:  agent.Admin,
			Timeout:     10 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[wouldPermitArgs](map[string]*jsonschema.Schema{
				"arguments": {Type: "object", Description: "The arguments the call would have.", Examples: []any{map[string]any{"class_name": "Ticket"}}},
			}),
			Handler: wouldPermit,
		},
	}
}

type describeAgentArgs struct {
	ClassName string `json:"class_name,omitempty" jsonschema:"only what governs this class"`
}

type wouldPermitArgs struct {
	Tool      string     `json:"tool" jsonschema:"the tool's name"`
	Arguments JSONObject `json:"arguments,omitempty"`
}

func describeAgent(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[describeAgentArgs](c.Args)
	if err != nil {
		return nil, err
	}
	if args.ClassName != "" {
		return classDescription(c.Scope.DescribeFor(ctx, args.ClassName))
	}
	var infos []agent.ToolInfo
	switch {
	case c.Catalog != nil: // remote agents' tools too, the token's scope applied
		for _, t := range c.Catalog("") {
			infos = append(infos, t.Info())
		}
	case c.Registry != nil:
		for _, t := range c.Registry.List() {
			infos = append(infos, t.Info())
		}
	}
	gates := c.gates()
	d, err := c.Scope.Describe(ctx, infos, gates)
	if err != nil {
		return nil, err
	}
	out, err := toMap(d)
	if err != nil {
		return nil, err
	}
	per := map[string]any{}
	for name, cd := range d.PerClass {
		if per[name], err = classDescription(cd); err != nil {
			return nil, err
		}
	}
	out["per_class"] = per
	out["env_gates"] = map[string]bool{
		agent.EnvAllowWriteTools: gates.WriteTools, agent.EnvAllowSchemaOps: gates.SchemaOps,
		agent.EnvAllowRawCRUD: gates.RawCRUD, agent.EnvAllowRawSchema: gates.RawSchema,
	}
	return out, nil
}

// classDescription renders a class description (it names filtered
// fields, never filter values).
func classDescription(cd agent.ClassDescription) (map[string]any, error) {
	return toMap(cd)
}

func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	err = json.Unmarshal(b, &m)
	return m, err
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
	if t.Name == "call_method" {
		method, _ = args.Arguments["method_name"].(string)
	}
	return c.Scope.WouldPermit(ctx, t.Info(), c.gates(), class, method), nil
}
