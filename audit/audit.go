// Package audit records one structured event per tool call. Events carry
// what an operator needs to see and bill — who called what, how it ended,
// how big the answer was — and never argument values or row data.
package audit

import (
	"context"
	"io"
	"log/slog"
	"time"
)

// Event is one tool call.
type Event struct {
	Event         string    `json:"event"` // "tool_call"
	Time          time.Time `json:"time"`
	Tool          string    `json:"tool"`
	ArgKeys       []string  `json:"args_keys"` // names only, never values
	AgentID       string    `json:"agent_id"`
	Profile       string    `json:"agent_profile,omitempty"` // the policy profile the agent was built from
	TenantID      string    `json:"tenant_id,omitempty"`
	AuthType      string    `json:"auth_type"`
	Permission    string    `json:"permission"`
	CorrelationID string    `json:"correlation_id,omitempty"`
	// SessionID is the MCP session the call came in (Mcp-Session-Id; none
	// over stdio or in the stateless 2026-07-28 era).
	SessionID string `json:"session_id,omitempty"`
	// ConversationID is the conversation the client says the call belongs
	// to (X-MCP-Session-Id header, or the call's _meta conversation_id).
	ConversationID string `json:"conversation_id,omitempty"`
	// AgentDepth is 0 for a top-level agent, one more per sub-agent level;
	// ParentAgentID is the parent's agent_id on a sub-agent.
	AgentDepth    int    `json:"agent_depth"`
	ParentAgentID string `json:"parent_agent_id,omitempty"`
	// The agent's narrowing lists, when it has them.
	ClassesOnly   []string `json:"classes_only,omitempty"`
	ClassesExcept []string `json:"classes_except,omitempty"`
	ToolsOnly     []string `json:"tools_only,omitempty"`
	ToolsExcept   []string `json:"tools_except,omitempty"`
	MethodsOnly   []string `json:"methods_only,omitempty"`
	MethodsExcept []string `json:"methods_except,omitempty"`
	// Filters maps each class the agent's filters constrain to the field
	// names they name; never the values.
	Filters        map[string][]string `json:"filters,omitempty"`
	RequestID      string              `json:"request_id,omitempty"`  // the HTTP request (or stdio message) that carried the call
	ClientAddr     string              `json:"client_addr,omitempty"` // the HTTP client's address (behind trusted proxies, the one they name)
	TraceID        string              `json:"trace_id,omitempty"`    // the OpenTelemetry trace, when traced
	Success        bool                `json:"success"`
	ErrorCode      string              `json:"error_code,omitempty"`
	DenialKind     string              `json:"denial_kind,omitempty"`
	DurationMS     float64             `json:"duration_ms"`
	ResultBytes    int                 `json:"result_bytes"`
	EstInputTokens int                 `json:"est_input_tokens"` // result bytes / 4: what the result costs the model to read
	// EstCostUSD prices EstInputTokens at the operator's rate; nil (and
	// left out of every sink's record) when no rate is configured, so
	// that no dashboard sums a cost nobody set.
	EstCostUSD *float64 `json:"est_cost_usd,omitempty"`
}

// Sink receives events. Record must not block for long.
type Sink interface {
	Record(ctx context.Context, e Event)
}

// Estimate fills the token estimate from ResultBytes and, when
// usdPerMillionTokens is positive (a rate is configured), the cost at
// that rate.
func (e *Event) Estimate(usdPerMillionTokens float64) {
	e.EstInputTokens = e.ResultBytes / 4
	e.EstCostUSD = nil
	if usdPerMillionTokens > 0 {
		cost := float64(e.EstInputTokens) * usdPerMillionTokens / 1e6
		e.EstCostUSD = &cost
	}
}

// SlogSink writes events as JSON lines through log/slog.
type SlogSink struct{ log *slog.Logger }

// NewJSONSink writes JSON lines to w (stderr, or a file).
func NewJSONSink(w io.Writer) *SlogSink {
	return &SlogSink{log: slog.New(slog.NewJSONHandler(w, nil))}
}

// Record writes e.
func (s *SlogSink) Record(ctx context.Context, e Event) {
	attrs := []slog.Attr{
		slog.String("tool", e.Tool), slog.Any("args_keys", e.ArgKeys), slog.String("agent_id", e.AgentID),
		slog.String("auth_type", e.AuthType), slog.String("permission", e.Permission),
		slog.String("correlation_id", e.CorrelationID), slog.Bool("success", e.Success),
		slog.String("error_code", e.ErrorCode), slog.String("denial_kind", e.DenialKind),
		slog.Float64("duration_ms", e.DurationMS), slog.Int("result_bytes", e.ResultBytes),
		slog.Int("est_input_tokens", e.EstInputTokens), slog.Int("agent_depth", e.AgentDepth),
	}
	if e.EstCostUSD != nil {
		attrs = append(attrs, slog.Float64("est_cost_usd", *e.EstCostUSD))
	}
	// The profile, tenant, request and trace ids and the client's address
	// appear when there are some.
	for _, a := range []slog.Attr{slog.String("agent_profile", e.Profile), slog.String("tenant_id", e.TenantID),
		slog.String("request_id", e.RequestID), slog.String("client_addr", e.ClientAddr), slog.String("trace_id", e.TraceID),
		slog.String("session_id", e.SessionID), slog.String("conversation_id", e.ConversationID), slog.String("parent_agent_id", e.ParentAgentID)} {
		if a.Value.String() != "" {
			attrs = append(attrs, a)
		}
	}
	// The agent's narrowing lists and filtered fields, when it has them.
	for _, l := range []struct {
		key  string
		list []string
	}{{"classes_only", e.ClassesOnly}, {"classes_except", e.ClassesExcept}, {"tools_only", e.ToolsOnly},
		{"tools_except", e.ToolsExcept}, {"methods_only", e.MethodsOnly}, {"methods_except", e.MethodsExcept}} {
		if l.list != nil {
			attrs = append(attrs, slog.Any(l.key, l.list))
		}
	}
	if e.Filters != nil {
		attrs = append(attrs, slog.Any("filters", e.Filters))
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, e.Event, attrs...)
}
