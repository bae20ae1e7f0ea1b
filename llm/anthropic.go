package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicProvider speaks the Anthropic Messages API through the official
// SDK.
type anthropicProvider struct {
	client anthropic.Client
	cfg    Config
}

// DefaultAnthropicMaxTokens is the output budget of one Anthropic turn
// when Config.MaxTokens is unset (the Messages API requires one).
const DefaultAnthropicMaxTokens = 4096

func newAnthropic(cfg Config) *anthropicProvider {
	opts := []option.RequestOption{
		option.WithAPIKey(cfg.APIKey),
		option.WithBaseURL(cfg.BaseURL),
		option.WithMaxRetries(cfg.MaxRetries),
		option.WithRequestTimeout(cfg.Timeout),
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &anthropicProvider{client: anthropic.NewClient(opts...), cfg: cfg}
}

func (p *anthropicProvider) Name() string     { return ProviderAnthropic }
func (p *anthropicProvider) Model() string    { return p.cfg.Model }
func (p *anthropicProvider) Endpoint() string { return p.cfg.BaseURL }

func (p *anthropicProvider) params(req *Request) anthropic.MessageNewParams {
	params := anthropic.MessageNewParams{Model: anthropic.Model(p.cfg.Model), MaxTokens: p.cfg.MaxTokens}
	if params.MaxTokens <= 0 {
		params.MaxTokens = DefaultAnthropicMaxTokens
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, m := range req.Messages {
		var blocks []anthropic.ContentBlockParamUnion
		switch m.Role {
		case RoleUser:
			for _, r := range m.Results {
				blocks = append(blocks, anthropic.NewToolResultBlock(r.CallID, r.Content, r.IsError))
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			// Tool results and the next question are one user turn.
			if n := len(params.Messages); n > 0 && params.Messages[n-1].OfUser != nil {
				params.Messages[n-1].OfUser.Content = append(params.Messages[n-1].OfUser.Content, blocks...)
				continue
			}
			params.Messages = append(params.Messages, anthropic.NewUserMessage(blocks...))
		case RoleAssistant:
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				args := c.arguments()
				if !json.Valid(args) || args[0] != '{' {
					args = json.RawMessage("{}") // tool_use input must be an object
				}
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, args, c.Name))
			}
			if len(blocks) == 0 { // an assistant turn may not be empty
				blocks = append(blocks, anthropic.NewTextBlock("(no answer)"))
			}
			params.Messages = append(params.Messages, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for _, t := range req.Tools {
		var schema map[string]any
		_ = json.Unmarshal(t.InputSchema, &schema) // checked when the tool was listed
		in := anthropic.ToolInputSchemaParam{ExtraFields: map[string]any{}}
		for k, v := range schema {
			switch k {
			case "type", "$schema":
			case "properties":
				in.Properties = v
			case "required":
				if list, ok := v.([]any); ok {
					for _, r := range list {
						if s, ok := r.(string); ok {
							in.Required = append(in.Required, s)
						}
					}
				}
			default:
				in.ExtraFields[k] = v
			}
		}
		tool := anthropic.ToolParam{Name: t.Name, InputSchema: in}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	return params
}

func (p *anthropicProvider) Complete(ctx context.Context, req *Request, onText func(string)) (*Response, error) {
	params := p.params(req)
	if onText == nil {
		msg, err := p.client.Messages.New(ctx, params)
		if err != nil {
			return nil, apiError(p.Name(), p.cfg.APIKey, err)
		}
		return p.response(msg, "no content blocks")
	}
	stream := p.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var msg anthropic.Message
	for stream.Next() {
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return nil, apiError(p.Name(), p.cfg.APIKey, err)
		}
		if ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			onText(ev.Delta.Text)
		}
	}
	if err := stream.Err(); err != nil {
		return nil, apiError(p.Name(), p.cfg.APIKey, err)
	}
	return p.response(&msg, "no message_start event")
}

// response reads a Messages API message: an object of type "message"
// with a content array (empty when the model said nothing). Anything else
// is a FormatError; missing is what to call a body without the message
// (a streamed one comes in its message_start event).
func (p *anthropicProvider) response(msg *anthropic.Message, missing string) (*Response, error) {
	var problems []string
	if !msg.JSON.Content.Valid() {
		problems = append(problems, missing)
	}
	if msg.JSON.Type.Raw() != "" && msg.Type != "message" {
		problems = append(problems, fmt.Sprintf("type %q instead of \"message\"", msg.Type))
	}
	if problems != nil {
		return nil, &FormatError{Provider: p.Name(), BaseURL: p.cfg.BaseURL, Problem: strings.Join(problems, ", ")}
	}
	u := msg.Usage
	out := &Response{
		Stop:   string(msg.StopReason),
		Tokens: Tokens{Input: u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens, Output: u.OutputTokens},
	}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			out.Text += b.Text
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: append(json.RawMessage(nil), b.Input...)})
		}
	}
	return out, nil
}
