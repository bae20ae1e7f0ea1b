package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"
)

// NewAnthropic starts a fake Anthropic Messages server (POST
// /v1/messages). Its BaseURL is the root.
func NewAnthropic(t testing.TB, model Model) *Server {
	s := start(t, model, func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/messages", s.anthropic)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			anthropicError(w, http.StatusNotFound, "not_found_error", "Not found", nil)
		})
		return mux
	})
	s.BaseURL = s.URL
	return s
}

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

type anthropicRequest struct {
	Model     string          `json:"model"`
	MaxTokens int64           `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Stream    bool            `json:"stream"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

// blocks reads content: a string or an array of blocks.
func blocks(raw json.RawMessage) ([]anthropicBlock, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anthropicBlock{{Type: "text", Text: &s}}, nil
	}
	var out []anthropicBlock
	err := json.Unmarshal(raw, &out)
	return out, err
}

func decodeAnthropic(body []byte) (*Request, error) {
	var in anthropicRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("invalid JSON body: %v", err)
	}
	if in.Model == "" {
		return nil, fmt.Errorf("model: Field required")
	}
	if in.MaxTokens <= 0 {
		return nil, fmt.Errorf("max_tokens: Field required")
	}
	if len(in.Messages) == 0 {
		return nil, fmt.Errorf("messages: at least one message is required")
	}
	req := &Request{Model: in.Model, Stream: in.Stream, MaxTokens: in.MaxTokens, Schemas: map[string]json.RawMessage{}, Body: body}
	if len(in.System) > 0 {
		sys, err := blocks(in.System)
		if err != nil {
			return nil, fmt.Errorf("system: %v", err)
		}
		for _, b := range sys {
			if b.Text != nil {
				req.System += *b.Text
			}
		}
	}
	for i, t := range in.Tools {
		var schema map[string]any
		if !toolName.MatchString(t.Name) {
			return nil, fmt.Errorf("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
		}
		if json.Unmarshal(t.InputSchema, &schema) != nil || schema["type"] != "object" {
			return nil, fmt.Errorf("tools.%d.custom.input_schema.type: Field required", i)
		}
		req.Tools = append(req.Tools, t.Name)
		req.Schemas[t.Name] = t.InputSchema
	}
	var open map[string]bool // tool_use ids of the last assistant message
	usesTools := false
	for i, m := range in.Messages {
		bs, err := blocks(m.Content)
		if err != nil {
			return nil, fmt.Errorf("messages.%d.content: %v", i, err)
		}
		if len(bs) == 0 && !(m.Role == "assistant" && i == len(in.Messages)-1) {
			return nil, fmt.Errorf("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		if i == 0 && m.Role != "user" {
			return nil, fmt.Errorf("messages: first message must use the \"user\" role")
		}
		if i > 0 && m.Role == in.Messages[i-1].Role {
			return nil, fmt.Errorf("messages: roles must alternate between \"user\" and \"assistant\"")
		}
		msg := Msg{Role: m.Role}
		switch m.Role {
		case "user":
			answered := map[string]bool{}
			for j, b := range bs {
				switch b.Type {
				case "text":
					if err := nonEmpty(b, i, j); err != nil {
						return nil, err
					}
					msg.Text += *b.Text
				case "tool_result":
					usesTools = true
					if !open[b.ToolUseID] {
						return nil, fmt.Errorf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
					}
					answered[b.ToolUseID] = true
					text := ""
					if bs2, err := blocks(b.Content); err == nil {
						for _, c := range bs2 {
							if c.Text != nil {
								text += *c.Text
							}
						}
					}
					msg.Results = append(msg.Results, Result{CallID: b.ToolUseID, Content: text, IsError: b.IsError})
				default:
					return nil, fmt.Errorf("messages.%d.content.%d: unexpected block type %q", i, j, b.Type)
				}
			}
			for id := range open {
				if !answered[id] {
					return nil, fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, id)
				}
			}
			open = nil
		case "assistant":
			open = map[string]bool{}
			for j, b := range bs {
				switch b.Type {
				case "text":
					if err := nonEmpty(b, i, j); err != nil {
						return nil, err
					}
					msg.Text += *b.Text
				case "tool_use":
					usesTools = true
					var input map[string]any
					if json.Unmarshal(b.Input, &input) != nil {
						return nil, fmt.Errorf("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
					}
					open[b.ID] = true
					msg.Calls = append(msg.Calls, Call{ID: b.ID, Name: b.Name, Args: string(b.Input)})
				default:
					return nil, fmt.Errorf("messages.%d.content.%d: unexpected block type %q", i, j, b.Type)
				}
			}
		default:
			return nil, fmt.Errorf("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		req.Messages = append(req.Messages, msg)
	}
	if len(open) > 0 {
		return nil, fmt.Errorf("messages: `tool_use` ids were found without `tool_result` blocks immediately after")
	}
	if usesTools && len(req.Tools) == 0 {
		return nil, fmt.Errorf("Requests which include `tool_use` or `tool_result` blocks must define tools.")
	}
	return req, nil
}

// nonEmpty refuses an empty text block, as the API does.
func nonEmpty(b anthropicBlock, msg, block int) error {
	if b.Text == nil || *b.Text == "" {
		return fmt.Errorf("messages.%d.content.%d: text content blocks must be non-empty", msg, block)
	}
	return nil
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string, header map[string]string) {
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("request-id", "req_011CSHoEeqs5C35K2UUqR7Fy")
	w.WriteHeader(status)
	fmt.Fprintln(w, mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}, "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}))
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Api-Key") == "" && r.Header.Get("Authorization") == "" {
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required", nil)
		return
	}
	if r.Header.Get("Anthropic-Version") == "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required", nil)
		return
	}
	req, reply, n, ok := s.receive(w, r, decodeAnthropic, anthropicError)
	if !ok {
		return
	}
	in, out := reply.tokens(req)
	id := fmt.Sprintf("msg_01XFDUDYJgAACzvnptvVoYE%d", n)
	stop := reply.stop("tool_use", "end_turn")
	toolID := func(c Call) string {
		if c.ID != "" {
			return c.ID
		}
		return "toolu_01A09q90qw90lq917835lq9"
	}
	if !req.Stream {
		content := []any{} // an empty turn's content is [], never null
		if reply.Text != "" {
			content = append(content, map[string]any{"type": "text", "text": reply.Text})
		}
		for _, c := range reply.Calls {
			content = append(content, map[string]any{"type": "tool_use", "id": toolID(c), "name": c.Name, "input": json.RawMessage(c.Args)})
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, mustJSON(map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": content,
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": in, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": out, "service_tier": "standard"},
		}))
		return
	}
	// Streamed: the event flow of Anthropic's documentation
	// (https://docs.anthropic.com/en/api/messages-streaming, now also
	// https://platform.claude.com/docs/build-with-claude/streaming):
	// message_start with empty content, per content block a
	// content_block_start, its deltas (text_delta; input_json_delta for a
	// tool_use block, which starts with "input":{} and an empty
	// partial_json) and a content_block_stop, ping events among them, then
	// message_delta with the stop_reason and the output tokens, and
	// message_stop; an error mid-stream is an "error" event. Its example
	// "streaming request with tool use" is
	// testdata/anthropic_tool_use_stream.txt.
	st := newSSE(w)
	st.event("message_start", mustJSON(map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard"}}}))
	index := 0
	if reply.Text != "" {
		st.event("content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}}))
		st.event("ping", `{"type": "ping"}`)
		for i, p := range words(reply.Text) {
			st.event("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": p}}))
			if reply.StreamError && i == 0 {
				st.event("error", mustJSON(map[string]any{"type": "error", "error": map[string]any{"type": reply.ErrorType, "message": reply.ErrorMessage}}))
				return
			}
		}
		st.event("content_block_stop", mustJSON(map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	for _, c := range reply.Calls {
		st.event("content_block_start", mustJSON(map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "tool_use", "id": toolID(c), "name": c.Name, "input": map[string]any{}}}))
		st.event("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": ""}}))
		for _, p := range pieces(c.Args, 9) {
			st.event("content_block_delta", mustJSON(map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}))
		}
		st.event("content_block_stop", mustJSON(map[string]any{"type": "content_block_stop", "index": index}))
		index++
	}
	st.event("message_delta", mustJSON(map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": out}}))
	st.event("message_stop", `{"type":"message_stop"}`)
}
