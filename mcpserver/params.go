package mcpserver

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// loggingLevels are the levels logging/setLevel takes (RFC 5424, as the
// MCP specification names them).
var loggingLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// checkParams refuses request parameters the SDK lets through but the
// specification does not allow, with invalid params: a logging level
// outside the eight.
func (s *Server) checkParams(next Handler) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		if r.Method == "logging/setLevel" {
			p, _ := r.Params.GetParams().(*mcp.SetLoggingLevelParams)
			if p == nil || !slices.Contains(loggingLevels, p.Level) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
					Message: "invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency"}
			}
		}
		return next(ctx, r)
	}
}
