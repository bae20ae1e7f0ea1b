package agent

import "fmt"

// TokenScope is what a personal access token narrows, beyond the agent's
// tier and policy: a read-only token reaches only tools that declare
// themselves read-only, and a team-scoped token only the remote agents of
// its team. It applies alike to the server's own tools and to remote
// agents' tools. The zero value is read-only.
type TokenScope struct {
	// ID is the token's id (for audit).
	ID string
	// Write lets the token call tools that may write.
	Write bool
	// Team, when set, confines the token to remote agents of this team.
	Team string
}

// ToolTraits is what the token rule needs to know of a tool.
type ToolTraits struct {
	// ReadOnly is the tool's readOnlyHint; a tool without one writes.
	ReadOnly bool
	// Remote marks a remote agent's tool; Team is that agent's team.
	Remote bool
	Team   string
}

// Admits returns nil when the token may call the tool name, or a
// DeniedError (kind token_scope or token_team) saying why not. A nil
// scope (no token) admits everything.
func (t *TokenScope) Admits(name string, tr ToolTraits) error {
	if t == nil {
		return nil
	}
	if !t.Write && !tr.ReadOnly {
		return &DeniedError{Kind: "token_scope", Msg: fmt.Sprintf("tool %s may write, and this personal access token is read-only", name)}
	}
	if tr.Remote && t.Team != "" && tr.Team != t.Team {
		return &DeniedError{Kind: "token_team", Msg: fmt.Sprintf("tool %s belongs to an agent outside this token's team %s", name, t.Team)}
	}
	return nil
}
