package llm

import "encoding/json"

// Role is who speaks in a Message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Message is one turn of a conversation in a provider-neutral form. A user
// turn carries either the person's text or the results of the tool calls
// the previous assistant turn asked for; an assistant turn carries the
// model's text and the tool calls it asks for.
type Message struct {
	Role      Role         `json:"role"`
	Text      string       `json:"text,omitempty"`
	ToolCalls []ToolCall   `json:"tool_calls,omitempty"`
	Results   []ToolResult `json:"tool_results,omitempty"`
}

// ToolCall is the model asking for one tool to run.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
}

// Tool is a function offered to the model: its name, what it does, and
// the JSON Schema of its arguments (an object schema).
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Request is one model turn: the system prompt, the conversation so far
// and the tools on offer.
type Request struct {
	System   string
	Messages []Message
	Tools    []Tool
}

// Response is the model's turn: its text, the tool calls it asks for, the
// tokens the turn used and the provider's stop reason.
type Response struct {
	Text      string
	ToolCalls []ToolCall
	Tokens    Tokens
	Stop      string
}

// Tokens counts the tokens of one or more model turns.
type Tokens struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
}

// Total is input plus output.
func (t Tokens) Total() int64 { return t.Input + t.Output }

// Add returns the sum of two counts.
func (t Tokens) Add(u Tokens) Tokens {
	return Tokens{Input: t.Input + u.Input, Output: t.Output + u.Output}
}

// arguments returns a call's arguments as a JSON object ("{}" when the
// model sent none).
func (c ToolCall) arguments() json.RawMessage {
	if len(c.Arguments) == 0 || string(c.Arguments) == "null" {
		return json.RawMessage("{}")
	}
	return c.Arguments
}
