package mcpserver

import (
	"regexp"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ConversationHeader carries the conversation a request belongs to, as
// the reference guide names it; a tools/call may instead say it in its
// _meta (conversationMetaKey). Audit events carry it as conversation_id.
const ConversationHeader = "X-MCP-Session-Id"

// conversationMetaKey is the tools/call _meta key of the conversation id.
const conversationMetaKey = "conversation_id"

// validConversation is what a conversation id may be: anything else is
// dropped, so a client cannot inject into log lines.
var validConversation = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// callOrigin returns the MCP session a tools/call came in (none over
// stdio, or without sessions) and the conversation its client names, the
// _meta's before the header's.
func callOrigin(req mcp.Request, p *mcp.CallToolParamsRaw) (session, conversation string) {
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		session = ss.ID()
	}
	if p != nil {
		if c, _ := p.Meta[conversationMetaKey].(string); validConversation.MatchString(c) {
			return session, c
		}
	}
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		if c := ex.Header.Get(ConversationHeader); validConversation.MatchString(c) {
			conversation = c
		}
	}
	return session, conversation
}
