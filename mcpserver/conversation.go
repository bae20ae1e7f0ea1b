package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/parsemcp/parsemcp/internal/reqlog"
)

// ConversationHeader carries the conversation a request belongs to, as
// the reference guide names it; a tools/call may instead say it in its
// _meta (conversationMetaKey). Audit events carry it as conversation_id.
const ConversationHeader = "X-MCP-Session-Id"

// conversationMetaKey is the tools/call _meta key of the conversation id.
const conversationMetaKey = "conversation_id"

// maxConversationID bounds a conversation id; a longer one, or one with
// other characters than reqlog.SafeID allows, is dropped.
const maxConversationID = 128

// callOrigin returns the MCP session a tools/call came in (none over
// stdio, or without sessions) and the conversation its client names, the
// _meta's before the header's.
func callOrigin(req mcp.Request, p *mcp.CallToolParamsRaw) (session, conversation string) {
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		session = ss.ID()
	}
	if p != nil {
		if c, _ := p.Meta[conversationMetaKey].(string); reqlog.SafeID(c, maxConversationID) {
			return session, c
		}
	}
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		if c := ex.Header.Get(ConversationHeader); reqlog.SafeID(c, maxConversationID) {
			conversation = c
		}
	}
	return session, conversation
}
