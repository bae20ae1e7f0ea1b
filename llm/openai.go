package llm

import (
	"context"
	"encoding/json"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// openAIProvider speaks OpenAI chat completions, through the official
// SDK, to OpenAI or any server that offers the same API.
type openAIProvider struct {
	client  openai.Client
	cfg     Config
	compat  bool // a server other than OpenAI's: max_tokens instead of max_completion_tokens
	options []option.RequestOption
}

func newOpenAI(cfg Config) *openAIProvider {
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(cfg.BaseURL),
		option.WithMaxRetries(cfg.MaxRetries),
		option.WithRequestTimeout(cfg.Timeout),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &openAIProvider{client: openai.NewClient(opts...), cfg: cfg, compat: cfg.BaseURL != OpenAIBaseURL}
}

func (p *openAIProvider) Name() string     { return ProviderOpenAI }
func (p *openAIProvider) Model() string    { return p.cfg.Model }
func (p *openAIProvider) Endpoint() string { return p.cfg.BaseURL }

func (p *openAIProvider) params(req *Request) openai.ChatCompletionNewParams {
	params := openai.ChatCompletionNewParams{Model: p.cfg.Model}
	if req.System != "" {
		params.Messages = append(params.Messages, openai.SystemMessage(req.System))
	}
	for _, m := range req.Messages {
		switch m.Role {
		case RoleUser:
			for _, r := range m.Results {
				params.Messages = append(params.Messages, openai.ToolMessage(r.Content, r.CallID))
			}
			if m.Text != "" {
				params.Messages = append(params.Messages, openai.UserMessage(m.Text))
			}
		case RoleAssistant:
			var a openai.ChatCompletionAssistantMessageParam
			if m.Text != "" {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID:       c.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(c.arguments())},
					},
				})
			}
			params.Messages = append(params.Messages, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		}
	}
	for _, t := range req.Tools {
		var schema map[string]any
		_ = json.Unmarshal(t.InputSchema, &schema) // checked when the tool was listed
		def := openai.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(def))
	}
	if n := p.cfg.MaxTokens; n > 0 {
		if p.compat {
			params.MaxTokens = openai.Int(n)
		} else {
			params.MaxCompletionTokens = openai.Int(n)
		}
	}
	return params
}

func (p *openAIProvider) Complete(ctx context.Context, req *Request, onText func(string)) (*Response, error) {
	params := p.params(req)
	if onText == nil {
		res, err := p.client.Chat.Completions.New(ctx, params, p.options...)
		if err != nil {
			return nil, apiError(p.Name(), p.cfg.APIKey, err)
		}
		return p.response(res, false)
	}
	params.StreamOptions.IncludeUsage = openai.Bool(true)
	stream := p.client.Chat.Completions.NewStreaming(ctx, params, p.options...)
	defer stream.Close()
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		chunk := stream.Current()
		acc.AddChunk(chunk)
		if len(chunk.Choices) > 0 && chunk.Choices[0].Delta.Content != "" {
			onText(chunk.Choices[0].Delta.Content)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, apiError(p.Name(), p.cfg.APIKey, err)
	}
	return p.response(&acc.ChatCompletion, true)
}

// response reads a chat completion: its first choice, whose message may
// be empty when the model said nothing. One without choices, or (as
// received, not accumulated from a stream) whose choice has no message,
// is a FormatError.
func (p *openAIProvider) response(res *openai.ChatCompletion, streamed bool) (*Response, error) {
	problem := ""
	switch {
	case len(res.Choices) == 0:
		problem = "no choices"
	case !streamed && !res.Choices[0].JSON.Message.Valid():
		problem = "its first choice has no message"
	}
	if problem != "" {
		return nil, &FormatError{Provider: p.Name(), BaseURL: p.cfg.BaseURL, Problem: problem}
	}
	ch := res.Choices[0]
	out := &Response{
		Text:   ch.Message.Content,
		Stop:   ch.FinishReason,
		Tokens: Tokens{Input: res.Usage.PromptTokens, Output: res.Usage.CompletionTokens},
	}
	if out.Text == "" && ch.Message.Refusal != "" {
		out.Text = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
	}
	return out, nil
}
