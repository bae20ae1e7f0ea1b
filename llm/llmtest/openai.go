package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// NewOpenAI starts a fake OpenAI chat-completions server
// (POST /v1/chat/completions). Its BaseURL ends in /v1.
func NewOpenAI(t testing.TB, model Model) *Server {
	s := start(t, model, func(s *Server) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/chat/completions", s.openAI)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			openAIError(w, http.StatusNotFound, "invalid_request_error", "Invalid URL ("+r.Method+" "+r.URL.Path+")", nil)
		})
		return mux
	})
	s.BaseURL = s.URL + "/v1"
	return s
}

var functionName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// openAIRequest is the wire form of a chat-completions request.
type openAIRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function struct {
				Name      string `json:"name"`
				Arguments string `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int64 `json:"max_tokens"`
	MaxCompletionTokens int64 `json:"max_completion_tokens"`
}

// contentText reads a message's content: a string, null, or an array of
// text parts.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) == nil {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p.Text)
		}
		return b.String()
	}
	return ""
}

// decode checks an OpenAI request as the API does and turns it into a
// Request.
func decodeOpenAI(body []byte) (*Request, error) {
	var in openAIRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("We could not parse the JSON body of your request. (%v)", err)
	}
	if in.Model == "" {
		return nil, fmt.Errorf("you must provide a model parameter")
	}
	if len(in.Messages) == 0 {
		return nil, fmt.Errorf("'messages' must contain at least one message")
	}
	req := &Request{Model: in.Model, Stream: in.Stream, Schemas: map[string]json.RawMessage{}, Body: body, MaxTokens: max(in.MaxTokens, in.MaxCompletionTokens)}
	if in.StreamOptions != nil {
		if !in.Stream {
			return nil, fmt.Errorf("The 'stream_options' parameter is only allowed when 'stream' is enabled.")
		}
		req.IncludeUsage = in.StreamOptions.IncludeUsage
	}
	for i, t := range in.Tools {
		if t.Type != "function" || !functionName.MatchString(t.Function.Name) {
			return nil, fmt.Errorf("Invalid 'tools[%d].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.", i)
		}
		var schema map[string]any
		if len(t.Function.Parameters) > 0 && (json.Unmarshal(t.Function.Parameters, &schema) != nil || schema["type"] != "object") {
			return nil, fmt.Errorf("Invalid schema for function '%s': schema must be a JSON Schema of 'type: \"object\"'.", t.Function.Name)
		}
		req.Tools = append(req.Tools, t.Function.Name)
		req.Schemas[t.Function.Name] = t.Function.Parameters
	}
	pending := map[string]bool{} // tool calls not answered yet
	for i, m := range in.Messages {
		if m.Role != "tool" && len(pending) > 0 {
			return nil, fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", keys(pending))
		}
		switch m.Role {
		case "system", "developer":
			req.System += contentText(m.Content)
		case "user":
			req.Messages = append(req.Messages, Msg{Role: "user", Text: contentText(m.Content)})
		case "assistant":
			msg := Msg{Role: "assistant", Text: contentText(m.Content)}
			for _, c := range m.ToolCalls {
				if !json.Valid([]byte(c.Function.Arguments)) {
					return nil, fmt.Errorf("Invalid 'messages[%d].tool_calls': arguments must be JSON", i)
				}
				msg.Calls = append(msg.Calls, Call{ID: c.ID, Name: c.Function.Name, Args: c.Function.Arguments})
				pending[c.ID] = true
			}
			req.Messages = append(req.Messages, msg)
		case "tool":
			if !pending[m.ToolCallID] {
				return nil, fmt.Errorf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			delete(pending, m.ToolCallID)
			r := Result{CallID: m.ToolCallID, Content: contentText(m.Content)}
			if n := len(req.Messages); n > 0 && req.Messages[n-1].Role == "user" && len(req.Messages[n-1].Results) > 0 {
				req.Messages[n-1].Results = append(req.Messages[n-1].Results, r)
			} else {
				req.Messages = append(req.Messages, Msg{Role: "user", Results: []Result{r}})
			}
		default:
			return nil, fmt.Errorf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'tool', 'function', and 'developer'.", m.Role)
		}
	}
	if len(pending) > 0 {
		return nil, fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: %s", keys(pending))
	}
	return req, nil
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return strings.Join(out, ", ")
}

func openAIError(w http.ResponseWriter, status int, typ, msg string, header map[string]string) {
	for k, v := range header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	code := any(nil)
	if status == http.StatusTooManyRequests {
		code = "rate_limit_exceeded"
	}
	fmt.Fprintln(w, mustJSON(map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}))
}

func (s *Server) openAI(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		openAIError(w, http.StatusUnauthorized, "invalid_request_error", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).", nil)
		return
	}
	req, reply, n, ok := s.receive(w, r, decodeOpenAI, openAIError)
	if !ok {
		return
	}
	in, out := reply.tokens(req)
	id := fmt.Sprintf("chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG%d", n)
	finish := reply.stop("tool_calls", "stop")
	usage := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out,
		"prompt_tokens_details":     map[string]any{"cached_tokens": 0, "audio_tokens": 0},
		"completion_tokens_details": map[string]any{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}
	if !req.Stream {
		msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
		if reply.Text != "" {
			msg["content"] = reply.Text
		}
		if len(reply.Calls) > 0 {
			var calls []any
			for _, c := range reply.Calls {
				calls = append(calls, map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Args}})
			}
			msg["tool_calls"] = calls
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, mustJSON(map[string]any{
			"id": id, "object": "chat.completion", "created": 1741569952, "model": req.Model,
			"choices":            []any{map[string]any{"index": 0, "message": msg, "logprobs": nil, "finish_reason": finish}},
			"usage":              usage,
			"service_tier":       "default",
			"system_fingerprint": "fp_06737a9306",
		}))
		return
	}
	// Streamed: chunks as the API sends them, then [DONE]. The shapes
	// follow OpenAI's documented examples: the chunk object of the API
	// reference (https://platform.openai.com/docs/api-reference/chat-streaming:
	// a first delta with the role and empty content, content deltas, an
	// empty delta with the finish_reason, with stream_options.include_usage
	// "usage":null on each chunk and a last chunk with empty choices and
	// the usage) and the streamed tool calls of the function-calling guide
	// (https://platform.openai.com/docs/guides/function-calling#streaming:
	// the first delta of a call holds its index, id, type and name with
	// empty arguments, the following ones only its index and a piece of the
	// arguments). As the API sends them, a reply that starts with a tool
	// call carries the role in the same first delta, and a delta leaves out
	// the fields it does not set (the guide prints the SDK's objects, whose
	// unset fields show as None). testdata/openai_tool_call_stream.txt holds
	// the guide's example itself.
	st := newSSE(w)
	chunk := func(delta map[string]any, finish any) {
		c := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1741569952, "model": req.Model,
			"service_tier": "default", "system_fingerprint": "fp_06737a9306",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}}
		if req.IncludeUsage {
			c["usage"] = nil
		}
		st.event("", mustJSON(c))
	}
	callStart := func(i int, c Call) []any {
		return []any{map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}}
	}
	first := map[string]any{"role": "assistant", "content": "", "refusal": nil}
	toolFirst := reply.Text == "" && len(reply.Calls) > 0
	if toolFirst {
		first["content"] = nil
		first["tool_calls"] = callStart(0, reply.Calls[0])
	}
	chunk(first, nil)
	for i, p := range words(reply.Text) {
		chunk(map[string]any{"content": p}, nil)
		if reply.StreamError && i == 0 {
			st.event("", mustJSON(map[string]any{"error": map[string]any{"message": reply.ErrorMessage, "type": reply.ErrorType, "param": nil, "code": nil}}))
			return
		}
	}
	for i, c := range reply.Calls {
		if i > 0 || !toolFirst {
			chunk(map[string]any{"tool_calls": callStart(i, c)}, nil)
		}
		for _, p := range pieces(c.Args, 7) {
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": p}}}}, nil)
		}
	}
	chunk(map[string]any{}, finish)
	if req.IncludeUsage {
		st.event("", mustJSON(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1741569952, "model": req.Model,
			"service_tier": "default", "system_fingerprint": "fp_06737a9306", "choices": []any{}, "usage": usage}))
	}
	st.event("", "[DONE]")
}
