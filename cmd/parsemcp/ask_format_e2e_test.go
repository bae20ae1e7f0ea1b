package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/llm/llmtest"
)

// A server that answers a provider's request in another provider's
// format (a base URL pointing at the wrong kind of server) fails the
// question: exit 1 and a message naming the provider and the base URL,
// streamed or not. A server of the right kind that answers with no text
// at all is an empty answer, not an error.
func TestAskWrongProviderFormat(t *testing.T) {
	env := llmEnv(t)
	recorded := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "..", "llm", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, c := range []struct {
		provider, file, rawType string
		stream                  bool
		want                    string
	}{
		{"anthropic", "openai_tool_call.json", "application/json", false, "no content blocks"},
		{"anthropic", "openai_tool_call_stream.txt", "text/event-stream", true, "no message_start event"},
		{"openai", "anthropic_tool_use.json", "application/json", false, "no choices"},
		{"openai", "anthropic_tool_use_stream.txt", "text/event-stream", true, "no choices"},
		// The legacy completions API's answer: choices, but text instead of a message.
		{"openai", `{"id":"cmpl-1","object":"text_completion","model":"m","choices":[{"text":"Hi","index":0,"finish_reason":"stop"}]}`, "application/json", false, "its first choice has no message"},
	} {
		t.Run(fmt.Sprintf("%s %s stream %v", c.provider, c.want, c.stream), func(t *testing.T) {
			// The fake of the provider asked accepts the request and
			// answers with the other provider's recorded response.
			raw := []byte(c.file)
			if !strings.HasPrefix(c.file, "{") {
				raw = recorded(c.file)
			}
			reply := func(*llmtest.Request) llmtest.Reply { return llmtest.Reply{Raw: raw, RawType: c.rawType} }
			fake := llmtest.NewOpenAI(t, reply)
			if c.provider == "anthropic" {
				fake = llmtest.NewAnthropic(t, reply)
			}
			args := []string{"ask", "--demo", "--demo-rows", "600", "--provider", c.provider, "--model", "m", "--base-url", fake.BaseURL, "--api-key", "k", "--max-retries", "0"}
			if c.stream {
				args = append(args, "--stream")
			}
			stdout, stderr, code := run(t, env, append(args, "How many tickets?")...)
			want := c.provider + " at " + fake.BaseURL + " answered in an unexpected format: " + c.want
			if code != 1 || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, stdout %q, stderr %s\nwant %q", code, stdout, stderr, want)
			}
			stdout, stderr, code = run(t, env, append(args, "-o", "json", "How many tickets?")...)
			if out := decodeAsk(t, stdout, stderr); code != 1 || !strings.Contains(out.Error, want) || out.Stop == "answered" {
				t.Errorf("-o json: exit %d, %+v", code, out)
			}
		})
	}
	for _, provider := range []string{"anthropic", "openai"} {
		for _, stream := range []bool{false, true} {
			empty := llmtest.Script(llmtest.Reply{Text: ""})
			fake := llmtest.NewOpenAI(t, empty)
			if provider == "anthropic" {
				fake = llmtest.NewAnthropic(t, empty)
			}
			args := []string{"ask", "--demo", "--demo-rows", "600", "--provider", provider, "--model", "m", "--base-url", fake.BaseURL, "--api-key", "k", "-o", "json"}
			if stream {
				args = append(args, "--stream")
			}
			stdout, stderr, code := run(t, env, append(args, "Say nothing.")...)
			if out := decodeAsk(t, stdout, stderr); code != 0 || out.Stop != "answered" || out.Answer != "" || out.Error != "" {
				t.Errorf("%s (stream %v) answering nothing: exit %d, %+v\n%s", provider, stream, code, out, stderr)
			}
		}
	}
}
