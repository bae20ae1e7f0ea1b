package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/tools"
)

// structuredVersion is the protocol version that brought tools'
// outputSchema and results' structuredContent (MCP 2025-06-18).
const structuredVersion = "2025-06-18"

// legacySession reports whether a request comes from a session that
// negotiated a protocol older than structuredVersion: it is sent no output
// schemas and no structuredContent (it does not know them, and they would
// double a result's bytes for nothing). The SDK itself sends both at every
// version. A request whose version is unknown is taken as current.
func legacySession(ss mcp.Session) bool {
	s, ok := ss.(*mcp.ServerSession)
	if !ok || s == nil {
		return false
	}
	ip := s.InitializeParams()
	return ip != nil && ip.ProtocolVersion != "" && ip.ProtocolVersion < structuredVersion
}

// outputChecks validates results against tools' output schemas. The SDK
// validates structuredContent only for tools added through its typed
// mcp.AddTool; ours are added raw (mcp.Server.AddTool), so the check is
// ours: a result that does not match the schema its tool declares is an
// internal error, never sent. The built-in tools' schema (a JSON object)
// is checked on the encoded bytes without decoding them.
type outputChecks struct {
	mu       sync.Mutex
	resolved map[*jsonschema.Schema]*jsonschema.Resolved
}

// check reports whether the encoded result b matches out.
func (oc *outputChecks) check(out *jsonschema.Schema, b []byte) error {
	if out == tools.ObjectOutput {
		if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
			return fmt.Errorf("the result is not a JSON object")
		}
		return nil
	}
	oc.mu.Lock()
	if oc.resolved == nil {
		oc.resolved = map[*jsonschema.Schema]*jsonschema.Resolved{}
	}
	r, ok := oc.resolved[out]
	if !ok {
		var err error
		if r, err = out.Resolve(nil); err != nil {
			oc.mu.Unlock()
			return fmt.Errorf("output schema: %w", err)
		}
		oc.resolved[out] = r
	}
	oc.mu.Unlock()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return r.Validate(v)
}
