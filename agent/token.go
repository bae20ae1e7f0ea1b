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
