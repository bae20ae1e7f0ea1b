package agent

import (
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
)

// ToolInfo is what the governance layer needs to know of a tool to judge a
// call before running it.
type ToolInfo struct {
	Name       string
	Permission Permission
	// Gate is the operator gate the tool needs (GateNone for reads).
	Gate GateKind
	// Op is the class-level operation the tool performs on its class_name
	// argument ("" when it takes none).
	Op parse.Op
	// ReadOnly marks a tool that changes nothing (its readOnlyHint; what
	// a read-only personal access token may call). A tool without one
	// writes.
	ReadOnly bool
	// Remote marks a remote agent's tool; Team is that agent's team.
	Remote bool
	Team   string
	// OperatorOnly marks operator-side introspection (describe_agent,
	// would_permit): only an agent whose Policy.Introspection is on may
	// call it.
	OperatorOnly bool
}

// MayCall is the one answer to "may this agent call this tool": nil, or a
// *DeniedError whose Kind says which layer refused, checked in this order:
//
//   - permission_tier: the tool needs a higher tier than the agent's;
//   - operator_only: the tool is operator-side introspection and the
//     agent's policy does not expose it (Policy.Introspection);
//   - tool_filtered: the tool is outside the profile's tool filter;
//   - env_gate: the operator's gate for it is closed (the message names
//     the variables to set);
//   - token_scope: the request's personal access token is read-only and
//     the tool may write;
//   - token_team: the token is confined to a team and the tool belongs to
//     a remote agent of another team (or of none).
//
// Dispatch (the call pipeline), every listing (tools/list, list_tools,
// GET /tools, describe_access) and would_permit call it, so what is listed
// is what may be called.
func (a *Agent) MayCall(t ToolInfo, gates Gates) error {
	if !a.Can(t.Permission) {
		return &DeniedError{Kind: "permission_tier", Msg: fmt.Sprintf("tool %s needs %s permission; this agent is %s", t.Name, t.Permission, a.Permission)}
	}
	if t.OperatorOnly && !a.Policy.Introspection {
		return &DeniedError{Kind: "operator_only", Msg: fmt.Sprintf("tool %s is not available to this agent", t.Name)}
	}
	if !a.Policy.Tools.Allows(t.Name) {
		return &DeniedError{Kind: "tool_filtered", Msg: fmt.Sprintf("tool %s is not available to this agent", t.Name)}
	}
	if err := gates.Check(t.Gate, "tool "+t.Name); err != nil {
		return err
	}
	return a.Token.admits(t)
}

// mayCallDeniedAt maps MayCall's refusal kinds to WouldPermit's DeniedAt.
var mayCallDeniedAt = map[string]string{
	"permission_tier": "permission", "operator_only": "operator_only", "tool_filtered": "tools_filter", "env_gate": "env_gate",
	"token_scope": "token_scope", "token_team": "token_scope",
}

// admits returns nil when the token may call tool t, or a DeniedError
// (kind token_scope or token_team) saying why not. A nil scope (no token)
// admits everything. MayCall applies it after the agent's own rules.
func (t *TokenScope) admits(tool ToolInfo) error {
	if t == nil {
		return nil
	}
	if !t.Write && !tool.ReadOnly {
		return &DeniedError{Kind: "token_scope", Msg: fmt.Sprintf("tool %s may write, and this personal access token is read-only", tool.Name)}
	}
	if tool.Remote && t.Team != "" && tool.Team != t.Team {
		return &DeniedError{Kind: "token_team", Msg: fmt.Sprintf("tool %s belongs to an agent outside this token's team %s", tool.Name, t.Team)}
	}
	return nil
}
