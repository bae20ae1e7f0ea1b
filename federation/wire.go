package federation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
)

// DefaultMaxPayload bounds an MQTT payload the federation accepts or sends
// (1 MiB); a larger one is rejected and logged.
const DefaultMaxPayload = 1 << 20

// The methods a request carries.
const (
	MethodListTools = "tools/list"
	MethodCallTool  = "tools/call"
	MethodCancel    = "notifications/cancelled"
)

// Annotations are a tool's MCP behaviour hints. A nil pointer is an
// absent hint.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// ReadOnly reports whether the annotations declare the tool read-only.
// Absent annotations, or an absent readOnlyHint, count as writing: only a
// tool that says it changes nothing is treated as a reader.
func (a *Annotations) ReadOnly() bool {
	return a != nil && a.ReadOnlyHint != nil && *a.ReadOnlyHint
}

// Destructive reports whether a writing tool may destroy data: MCP's
// default for an absent destructiveHint is true.
func (a *Annotations) Destructive() bool {
	if a.ReadOnly() {
		return false
	}
	return a == nil || a.DestructiveHint == nil || *a.DestructiveHint
}

// Tool is a remote tool as its agent describes it (the MCP Tool shape).
type Tool struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	Annotations  *Annotations    `json:"annotations,omitempty"`
}

var remoteToolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.\-/]{1,128}$`)

// validate checks what the platform needs of a tool: a usable name and an
// object input schema.
func (t *Tool) validate() error {
	if !remoteToolNameRE.MatchString(t.Name) {
		return fmt.Errorf("tool name %q: not a valid MCP tool name", t.Name)
	}
	if len(t.InputSchema) == 0 {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	var s struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(t.InputSchema, &s); err != nil || s.Type != "object" {
		return fmt.Errorf("tool %s: input schema must be a JSON object schema of type \"object\"", t.Name)
	}
	return nil
}

// Caller is who a proxied request acts for; the agent receives it with
// every request. User and Session also name the request's topics.
type Caller struct {
	User    string `json:"user"`
	Session string `json:"session"`
	// Team is the caller's team scope ("" for none).
	Team string `json:"team,omitempty"`
	// ReadOnly is set when the caller's token is read-only.
	ReadOnly bool `json:"read_only,omitempty"`
}

// request is the payload of a request message.
type request struct {
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	Caller Caller          `json:"caller"`
	// TimeoutMS is how long the platform waits for the answer.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// callParams are a tools/call request's params.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// cancelParams are a notifications/cancelled request's params.
type cancelParams struct {
	RequestID string `json:"requestId"`
}

// response is the payload of a response message: a result or an error.
type response struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *WireError      `json:"error,omitempty"`
}

// WireError is an agent's refusal of a request (not a tool's own error,
// which is a result with isError).
type WireError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (e *WireError) Error() string { return e.Code + ": " + e.Message }

// listResult is a tools/list response's result.
type listResult struct {
	Tools []Tool `json:"tools"`
}

// decodeToolList reads a tools/list result: the valid tools, at most
// limit of them, the errors of the tools skipped as invalid, and whether
// tools past the limit were left out.
func decodeToolList(raw json.RawMessage, limit int) (tools []Tool, skipped []error, truncated bool, err error) {
	var lr listResult
	if err := json.Unmarshal(raw, &lr); err != nil {
		return nil, nil, false, fmt.Errorf("%w: tools/list result: %v", ErrMalformed, err)
	}
	tools = make([]Tool, 0, min(len(lr.Tools), limit))
	for _, t := range lr.Tools {
		if err := t.validate(); err != nil {
			skipped = append(skipped, err)
			continue
		}
		if len(tools) == limit {
			return tools, skipped, true, nil
		}
		tools = append(tools, t)
	}
	return tools, skipped, false, nil
}

// Presence is what an agent announces, retained, on its presence topic.
type Presence struct {
	// Status is "online" or "offline" (the agent's will message).
	Status string `json:"status"`
	// Revision changes whenever the agent's tool list changes.
	Revision string `json:"revision,omitempty"`
	// Name is a human-readable name of the agent.
	Name string `json:"name,omitempty"`
}

// Errors of payload decoding.
var (
	ErrPayloadTooLarge = errors.New("payload too large")
	ErrMalformed       = errors.New("malformed payload")
)

var corrIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// decodeStrict decodes one JSON value of at most max bytes into v; a
// second value, trailing garbage or an oversized payload is an error.
func decodeStrict(b []byte, max int, v any) error {
	if len(b) > max {
		return fmt.Errorf("%w: %d bytes (limit %d)", ErrPayloadTooLarge, len(b), max)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	return nil
}

// decodeRequest reads a request payload.
func decodeRequest(b []byte, max int) (*request, error) {
	var r request
	if err := decodeStrict(b, max, &r); err != nil {
		return nil, err
	}
	if !corrIDRE.MatchString(r.ID) {
		return nil, fmt.Errorf("%w: bad or missing id", ErrMalformed)
	}
	switch r.Method {
	case MethodListTools, MethodCallTool, MethodCancel:
	default:
		return nil, fmt.Errorf("%w: unknown method %q", ErrMalformed, r.Method)
	}
	return &r, nil
}

// decodeResponse reads a response payload.
func decodeResponse(b []byte, max int) (*response, error) {
	var r response
	if err := decodeStrict(b, max, &r); err != nil {
		return nil, err
	}
	if !corrIDRE.MatchString(r.ID) {
		return nil, fmt.Errorf("%w: bad or missing id", ErrMalformed)
	}
	if (r.Error == nil) == (len(r.Result) == 0) {
		return nil, fmt.Errorf("%w: want exactly one of result and error", ErrMalformed)
	}
	return &r, nil
}

// decodePresence reads a presence payload.
func decodePresence(b []byte, max int) (*Presence, error) {
	var p Presence
	if err := decodeStrict(b, max, &p); err != nil {
		return nil, err
	}
	if p.Status != "online" && p.Status != "offline" {
		return nil, fmt.Errorf("%w: presence status %q", ErrMalformed, p.Status)
	}
	return &p, nil
}

// callResult is the part of an MCP CallToolResult the platform checks.
type callResult struct {
	Content []json.RawMessage `json:"content"`
	IsError bool              `json:"isError,omitempty"`
}

// checkCallResult checks that raw is an MCP CallToolResult (an object
// with a content array) and reports whether it is a tool error, with the
// text of its first text content.
func checkCallResult(raw json.RawMessage) (isError bool, text string, err error) {
	var r callResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return false, "", fmt.Errorf("%w: tool result: %v", ErrMalformed, err)
	}
	if r.Content == nil {
		return false, "", fmt.Errorf("%w: tool result without content", ErrMalformed)
	}
	for _, c := range r.Content {
		var tc struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(c, &tc) == nil && tc.Type == "text" {
			text = tc.Text
			break
		}
	}
	return r.IsError, text, nil
}
