package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/parsemcp/parsemcp/agent"
)

// Operator-side introspection: what governs this agent. Admin only, and
// only for an agent whose policy exposes introspection (OperatorOnly).
// The answer carries no credentials and not the values of the agent's
// row filters (only the fields they test).

func describeAgentTool() *Tool {
	return &Tool{
		Name:         "describe_agent",
		Title:        "Describe agent",
		Category:     CategoryDiscovery,
		Description:  "Every layer that governs this agent: tier, identity mode, class/tool/method filters (the effective tool list included), the fields its row filters test, hidden classes, operator gates and per-class access. With class_name, only what governs that class.",
		Permission:   agent.Admin,
		OperatorOnly: true,
		Timeout:      10 * time.Second,
		ReadOnly:     true,
		Input:        schemaFor[describeAgentArgs](nil),
		Handler:      describeAgent,
	}
}

type describeAgentArgs struct {
	ClassName string `json:"class_name,omitempty" jsonschema:"only what governs this class"`
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
