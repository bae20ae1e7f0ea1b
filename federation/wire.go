package federation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/internal/shape"
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

	input *jsonschema.Resolved // InputSchema, once validate accepted it
}

// validRemoteToolName is ^[A-Za-z0-9_.\-/]{1,128}$.
func validRemoteToolName(s string) bool { return shape.Run(s, remoteToolNameChars, 1, 128) }

var remoteToolNameChars = shape.Alnum.Or(shape.Chars("_.-/"))

// validate checks a tool against what the platform and the MCP SDK need
// of it, within the bounds of limits.go: a usable name, bounded texts, an
// object input schema the arguments can be checked against (kept in
// t.input), and an object output schema if any.
func (t *Tool) validate() error {
	if !validRemoteToolName(t.Name) {
		return fmt.Errorf("tool name %.80q: not a valid MCP tool name", t.Name)
	}
	if err := checkText("title", t.Title, MaxTitleBytes); err != nil {
		return fmt.Errorf("tool %s: %v", t.Name, err)
	}
	if err := checkText("description", t.Description, MaxDescriptionBytes); err != nil {
		return fmt.Errorf("tool %s: %v", t.Name, err)
	}
	if t.Annotations != nil {
		if err := checkText("annotation title", t.Annotations.Title, MaxTitleBytes); err != nil {
			return fmt.Errorf("tool %s: %v", t.Name, err)
		}
	}
	if len(t.InputSchema) == 0 || string(t.InputSchema) == "null" {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	if string(t.OutputSchema) == "null" {
		t.OutputSchema = nil
	}
	if err := objectSchema("input schema", t.InputSchema, true); err != nil {
		return fmt.Errorf("tool %s: %v", t.Name, err)
	}
	if len(t.OutputSchema) > 0 {
		if err := objectSchema("output schema", t.OutputSchema, false); err != nil {
			return fmt.Errorf("tool %s: %v", t.Name, err)
		}
	}
	in, err := resolveInput(t.InputSchema)
	if err != nil {
		return fmt.Errorf("tool %s: %v", t.Name, err)
	}
	t.input = in
	return nil
}

// CheckArguments validates args (a JSON object; empty is {}) against the
// tool's input schema, as its agent declared it. It fails closed: a tool
// that did not pass validation accepts nothing.
func (t *Tool) CheckArguments(args json.RawMessage) error {
	if t.input == nil {
		return errors.New("the tool's input schema was not validated")
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if err := checkDepth(args, MaxPayloadDepth); err != nil {
		return err
	}
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("arguments are not JSON: %v", err)
	}
	if err := t.input.Validate(v); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "validating root: "))
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
// tools past the limit were left out. Each tool is checked on its own, so
// one outrageous tool never costs the agent its others.
func decodeToolList(raw json.RawMessage, limit int) (tools []Tool, skipped []error, truncated bool, err error) {
	var lr struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(raw, &lr); err != nil {
		return nil, nil, false, fmt.Errorf("%w: tools/list result: %v", ErrMalformed, err)
	}
	tools = make([]Tool, 0, min(len(lr.Tools), limit))
	seen := make(map[string]bool, len(tools))
	for i, rt := range lr.Tools {
		t, err := decodeTool(i, rt)
		if err != nil {
			skipped = append(skipped, err)
			continue
		}
		if seen[t.Name] {
			skipped = append(skipped, fmt.Errorf("tool %s: listed twice; the first is kept", t.Name))
			continue
		}
		seen[t.Name] = true
		if len(tools) == limit {
			return tools, skipped, true, nil
		}
		tools = append(tools, t)
	}
	return tools, skipped, false, nil
}

// decodeTool reads and validates the i-th tool of a tools/list result.
// The error names the tool, by its name when that could be read.
func decodeTool(i int, raw json.RawMessage) (Tool, error) {
	var t Tool
	// A tool is an object holding schemas: two levels above theirs.
	if err := checkDepth(raw, MaxSchemaDepth+2); err != nil {
		var n struct {
			Name string `json:"name"`
		}
		name := fmt.Sprintf("#%d", i+1)
		if json.Unmarshal(raw, &n) == nil && validRemoteToolName(n.Name) {
			name = n.Name
		}
		return t, fmt.Errorf("tool %s: nested deeper than %d levels", name, MaxSchemaDepth)
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("tool #%d: not a tool: %v", i+1, err)
	}
	return t, t.validate()
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

// validCorrID is ^[A-Za-z0-9_-]{1,64}$.
func validCorrID(s string) bool { return shape.Run(s, idChars, 1, 64) }

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

// decodeBounded is decodeStrict for a payload that is decoded whole:
// nested at most MaxPayloadDepth levels.
func decodeBounded(b []byte, max int, v any) error {
	if len(b) <= max {
		if err := checkDepth(b, MaxPayloadDepth); err != nil {
			return err
		}
	}
	return decodeStrict(b, max, v)
}

// decodeRequest reads a request payload.
func decodeRequest(b []byte, max int) (*request, error) {
	var r request
	if err := decodeBounded(b, max, &r); err != nil {
		return nil, err
	}
	if !validCorrID(r.ID) {
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
	if !validCorrID(r.ID) {
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
	if err := decodeBounded(b, max, &p); err != nil {
		return nil, err
	}
	if p.Status != "online" && p.Status != "offline" {
		return nil, fmt.Errorf("%w: presence status %.40q", ErrMalformed, p.Status)
	}
	if err := checkText("name", p.Name, MaxTitleBytes); err != nil {
		return nil, fmt.Errorf("%w: presence %v", ErrMalformed, err)
	}
	if err := checkText("revision", p.Revision, MaxTitleBytes); err != nil {
		return nil, fmt.Errorf("%w: presence %v", ErrMalformed, err)
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
	if err := checkDepth(raw, MaxPayloadDepth); err != nil {
		return false, "", fmt.Errorf("tool result: %w", err)
	}
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
