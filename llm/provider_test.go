package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/llm"
	"github.com/parsemcp/parsemcp/llm/llmtest"
)

// fake is one provider's fake server with the Config that reaches it.
type fake struct {
	name string
	new  func(testing.TB, llmtest.Model) *llmtest.Server
}

var fakes = []fake{
	{llm.ProviderOpenAI, llmtest.NewOpenAI},
	{llm.ProviderAnthropic, llmtest.NewAnthropic},
}

func (f fake) start(t testing.TB, model llmtest.Model) (*llmtest.Server, llm.Config) {
	s := f.new(t, model)
	return s, llm.Config{Provider: f.name, Model: "test-model", BaseURL: s.BaseURL, APIKey: "sk-test-0123456789abcdef", MaxRetries: -1}
}

func provider(t testing.TB, cfg llm.Config) llm.Provider {
	t.Helper()
	p, err := llm.NewProvider(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The providers decode the responses the vendors document for a tool
// call, non-streamed and streamed (testdata holds them as documented).
func TestDocumentedResponses(t *testing.T) {
	cases := []struct {
		provider, file, rawType string
		stream                  bool
		text                    string
		call                    llm.ToolCall
		tokens                  llm.Tokens
	}{
		{llm.ProviderOpenAI, "openai_tool_call.json", "application/json", false, "",
			llm.ToolCall{ID: "call_abc123", Name: "get_current_weather", Arguments: json.RawMessage("{\n\"location\": \"Boston, MA\"\n}")}, llm.Tokens{Input: 82, Output: 17}},
		{llm.ProviderOpenAI, "openai_tool_call_stream.txt", "text/event-stream", true, "",
			llm.ToolCall{ID: "call_DdmO9pD3xa9XTPNJ32zg2hcA", Name: "get_weather", Arguments: json.RawMessage(`{"location":"Paris, France"}`)}, llm.Tokens{Input: 68, Output: 16}},
		{llm.ProviderAnthropic, "anthropic_tool_use.json", "application/json", false, "I'll check the current weather in San Francisco for you.",
			llm.ToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: json.RawMessage(`{"location": "San Francisco, CA", "unit": "celsius"}`)}, llm.Tokens{Input: 384, Output: 78}},
		{llm.ProviderAnthropic, "anthropic_tool_use_stream.txt", "text/event-stream", true, "Okay, let's check the weather for San Francisco, CA:",
			llm.ToolCall{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: json.RawMessage(`{"location": "San Francisco, CA", "unit": "fahrenheit"}`)}, llm.Tokens{Input: 472, Output: 89}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			f := fakes[0]
			if c.provider == llm.ProviderAnthropic {
				f = fakes[1]
			}
			_, cfg := f.start(t, llmtest.Script(llmtest.Reply{Raw: raw, RawType: c.rawType}))
			var streamed strings.Builder
			var onText func(string)
			if c.stream {
				onText = func(s string) { streamed.WriteString(s) }
			}
			resp, err := provider(t, cfg).Complete(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "What's the weather?"}}}, onText)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != c.text || (c.stream && streamed.String() != c.text) {
				t.Errorf("text %q (streamed %q), want %q", resp.Text, streamed.String(), c.text)
			}
			if len(resp.ToolCalls) != 1 {
				t.Fatalf("tool calls %+v", resp.ToolCalls)
			}
			got := resp.ToolCalls[0]
			if got.ID != c.call.ID || got.Name != c.call.Name || !sameJSON(got.Arguments, c.call.Arguments) {
				t.Errorf("tool call %s %s %s, want %s %s %s", got.ID, got.Name, got.Arguments, c.call.ID, c.call.Name, c.call.Arguments)
			}
			if resp.Tokens != c.tokens {
				t.Errorf("tokens %+v, want %+v", resp.Tokens, c.tokens)
			}
		})
	}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// A 429 with Retry-After is retried after the time the provider asked
// for; one that persists past the retries is an APIError that says how
// long to wait.
func TestRateLimitRetryAfter(t *testing.T) {
	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			limited := llmtest.Reply{Status: 429, ErrorType: "rate_limit_error", ErrorMessage: "Rate limit reached for requests", Header: map[string]string{"Retry-After": "1"}}
			if f.name == llm.ProviderOpenAI {
				limited.ErrorType = "requests"
			}
			s, cfg := f.start(t, llmtest.Script(limited, llmtest.Reply{Text: "ok after waiting"}))
			cfg.MaxRetries = 2
			start := time.Now()
			resp, err := provider(t, cfg).Complete(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "ok after waiting" || len(s.Requests()) != 2 {
				t.Fatalf("answer %q after %d requests", resp.Text, len(s.Requests()))
			}
			if waited := time.Since(start); waited < time.Second {
				t.Errorf("retried after %s; the provider asked for 1s", waited)
			}

			limited.Header = map[string]string{"Retry-After": "20"}
			_, cfg = f.start(t, llmtest.Script(limited))
			_, err = provider(t, cfg).Complete(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 429 || !ae.RateLimited() || ae.RetryAfter != 20*time.Second {
				t.Fatalf("error %v (%#v)", err, ae)
			}
			if !strings.Contains(err.Error(), "retry after 20s") || !strings.Contains(err.Error(), "Rate limit reached") {
				t.Errorf("message %q", err)
			}
		})
	}
}

// Provider errors are APIErrors with the provider's type and message; a
// key the provider echoes is cut out; a stream that ends in an error event
// is an error, not a short answer.
func TestProviderErrors(t *testing.T) {
	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			key := "sk-test-0123456789abcdef"
			_, cfg := f.start(t, llmtest.Script(llmtest.Reply{Status: 401, ErrorType: "authentication_error", ErrorMessage: "Incorrect API key provided: " + key}))
			_, err := provider(t, cfg).Complete(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, nil)
			var ae *llm.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Type != "authentication_error" {
				t.Fatalf("error %v", err)
			}
			if strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "check the API key") {
				t.Errorf("message %q", err)
			}

			_, cfg = f.start(t, llmtest.Script(llmtest.Reply{Text: "Partial answer", StreamError: true, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}))
			var got strings.Builder
			_, err = provider(t, cfg).Complete(context.Background(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Text: "hi"}}}, func(s string) { got.WriteString(s) })
			if err == nil || !strings.Contains(err.Error(), "Overloaded") {
				t.Fatalf("mid-stream error: %v (text %q)", err, got.String())
			}

			// The fake refuses what the real API refuses: here, a tool
			// result that answers no tool call.
			_, cfg = f.start(t, llmtest.Script(llmtest.Reply{Text: "never sent"}))
			_, err = provider(t, cfg).Complete(context.Background(), &llm.Request{Messages: []llm.Message{
				{Role: llm.RoleUser, Text: "hi"},
				{Role: llm.RoleAssistant, Text: "calling"},
				{Role: llm.RoleUser, Results: []llm.ToolResult{{CallID: "call_nowhere", Content: "{}"}}},
			}}, nil)
			if !errors.As(err, &ae) || ae.StatusCode != 400 {
				t.Fatalf("orphan tool result: %v", err)
			}
		})
	}
}
