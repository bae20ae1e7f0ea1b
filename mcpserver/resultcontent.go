package mcpserver

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/tools"
)

// ResultContent says how a successful result of a tool with an output
// schema travels to a session that knows structuredContent (protocol
// 2025-06-18 and later). Older sessions, and tools without an output
// schema, always get the JSON as a text block alone.
type ResultContent string

const (
	// ResultBoth sends the JSON twice: as a text block and as
	// structuredContent, as the specification recommends (SHOULD). The
	// default, and what the zero value means.
	ResultBoth ResultContent = "both"
	// ResultText sends the text block alone, and tools/list declares no
	// output schema (a server that declares one must send
	// structuredContent): every session is served as a pre-2025-06-18 one.
	ResultText ResultContent = "text"
	// ResultStructured sends structuredContent alone, with a one-line
	// text block (StructuredOnlyNote) for clients that read only content.
	ResultStructured ResultContent = "structured"
)

// ResultContents lists the accepted values, the default first.
var ResultContents = []ResultContent{ResultBoth, ResultText, ResultStructured}

// StructuredOnlyNote is the text block of a result under
// ResultStructured: the result itself is in structuredContent only.
const StructuredOnlyNote = "The result is in structuredContent (this server sends tool results as structured content only)."

// ParseResultContent reads a ResultContent; "" is ResultBoth.
func ParseResultContent(s string) (ResultContent, error) {
	if s == "" {
		return ResultBoth, nil
	}
	for _, v := range ResultContents {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("result content %q: want both, text or structured", s)
}

// structured reports whether tools/list declares output schemas to the
// session and its results carry structuredContent: the session knows
// them (legacySession) and the operator did not choose text only. It is
// the one rule both follow, so a declared schema always comes with
// structuredContent.
func (s *Server) structured(ss mcp.Session) bool {
	return s.resultContent != ResultText && !legacySession(ss)
}

// copies is how many times the JSON of a result of tool t travels in its
// response to session ss: twice when it goes as text and as
// structuredContent (ResultBoth, a tool with an output schema, a session
// that gets structuredContent), else once. The response budget holds
// every copy (capGuard). A remote agent's result is counted as the agent
// sent it.
func (s *Server) copies(ss mcp.Session, t *tools.Tool) int {
	if s.resultContent != ResultBoth || t == nil || t.Output == nil || t.Remote || !s.structured(ss) {
		return 1
	}
	return 2
}
