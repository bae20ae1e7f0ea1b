package agent

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
