package llm_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/llm"
)

func TestProviderSelection(t *testing.T) {
	for _, env := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"} {
		t.Setenv(env, "")
	}
	cases := []struct {
		cfg                   llm.Config
		name, model, endpoint string
		err                   string
	}{
		{llm.Config{APIKey: "k"}, "openai", "gpt-4o-mini", llm.OpenAIBaseURL, ""},
		{llm.Config{Model: "claude-haiku-4-5", APIKey: "k"}, "anthropic", "claude-haiku-4-5", llm.AnthropicBaseURL, ""},
		{llm.Config{Provider: "anthropic", BaseURL: "http://127.0.0.1:9/v1/", APIKey: "k"}, "anthropic", "claude-haiku-4-5", "http://127.0.0.1:9", ""},
		// Any OpenAI-compatible server by base URL; no key needed there.
		{llm.Config{Model: "qwen2.5", BaseURL: "http://127.0.0.1:11434/v1"}, "openai", "qwen2.5", "http://127.0.0.1:11434/v1", ""},
		{llm.Config{Provider: "ollama"}, "openai", "qwen2.5:7b-instruct", "http://localhost:11434/v1", ""},
		{llm.Config{Provider: "lmstudio", Model: "m"}, "openai", "m", "http://localhost:1234/v1", ""},
		{llm.Config{BaseURL: "http://127.0.0.1:8080/v1"}, "", "", "", "no model"},
		{llm.Config{}, "", "", "", "no API key for openai"},
		{llm.Config{Provider: "anthropic"}, "", "", "", "ANTHROPIC_API_KEY"},
		{llm.Config{Provider: "gemini", APIKey: "k"}, "", "", "", `unknown LLM provider "gemini"`},
	}
	for _, c := range cases {
		p, err := llm.NewProvider(c.cfg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%+v: error %v, want %q", c.cfg, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%+v: %v", c.cfg, err)
			continue
		}
		if p.Name() != c.name || p.Model() != c.model || p.Endpoint() != c.endpoint {
			t.Errorf("%+v: %s %s %s", c.cfg, p.Name(), p.Model(), p.Endpoint())
		}
	}
}

func TestEnv(t *testing.T) {
	t.Setenv(llm.EnvProvider, "anthropic")
	t.Setenv(llm.EnvModel, "claude-sonnet-4-5")
	t.Setenv(llm.EnvBaseURL, "http://127.0.0.1:1")
	t.Setenv(llm.EnvAPIKey, "secret-key-value")
	t.Setenv(llm.EnvTimeout, "45")
	t.Setenv(llm.EnvMaxTokens, "1000")
	c, err := llm.Env()
	if err != nil {
		t.Fatal(err)
	}
	if c.Provider != "anthropic" || c.Model != "claude-sonnet-4-5" || c.BaseURL != "http://127.0.0.1:1" || c.APIKey != "secret-key-value" || c.Timeout != 45*time.Second || c.MaxTokens != 1000 {
		t.Errorf("%+v", c)
	}
	t.Setenv(llm.EnvTimeout, "soon")
	if _, err := llm.Env(); err == nil || !strings.Contains(err.Error(), llm.EnvTimeout) {
		t.Errorf("bad timeout: %v", err)
	}
}

// The key never shows in the configuration's printed or logged forms.
func TestConfigHidesKey(t *testing.T) {
	c := llm.Config{Provider: "openai", Model: "m", APIKey: "sk-very-secret-1234"}
	var log bytes.Buffer
	slog.New(slog.NewJSONHandler(&log, nil)).Info("llm", "config", c)
	for _, s := range []string{c.String(), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), log.String()} {
		if strings.Contains(s, "sk-very-secret") {
			t.Errorf("key shown: %s", s)
		}
	}
}

func TestPricing(t *testing.T) {
	p := llm.DefaultPricing
	if pr, ok := p.Lookup("gpt-4o-mini-2024-07-18"); !ok || pr.Input != 0.15 {
		t.Errorf("dated model: %+v %v", pr, ok)
	}
	if pr, _ := p.Lookup("gpt-4o-2024-08-06"); pr.Input != 2.5 {
		t.Errorf("longest prefix: %+v", pr)
	}
	if _, ok := p.Lookup("my-local-model"); ok {
		t.Error("unknown model priced")
	}
	extra, err := llm.ParsePrices("my-local-model=0.5/1, gpt-4o-mini=1/2")
	if err != nil {
		t.Fatal(err)
	}
	q := p.With(extra)
	if got := q.Cost("my-local-model", llm.Tokens{Input: 2_000_000, Output: 1_000_000}); got != 2 {
		t.Errorf("cost %v", got)
	}
	if pr, _ := q.Lookup("gpt-4o-mini"); pr.Output != 2 || p["gpt-4o-mini"].Output != 0.6 {
		t.Errorf("override %+v; the default table must not change", pr)
	}
	for _, bad := range []string{"x", "x=1", "x=a/b", "=1/2", "x=-1/2"} {
		if _, err := llm.ParsePrices(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	u := llm.Usage{Tokens: llm.Tokens{Input: 84, Output: 120}, TotalTokens: 204, CostUSD: 0.000101, Priced: true, Turns: 1}
	if u.String() != "84 in + 120 out = 204 tokens $0.000101" {
		t.Errorf("%s", u)
	}
	if b, err := json.Marshal(u); err != nil || !strings.Contains(string(b), `"cost_usd":0.000101`) {
		t.Errorf("priced usage as JSON: %s %v", b, err)
	}
	// A model without a price has no cost: not $0, nothing.
	u.CostUSD, u.Priced = 0, false
	if u.String() != "84 in + 120 out = 204 tokens" {
		t.Errorf("unpriced: %s", u)
	}
	if b, err := json.Marshal(u); err != nil || strings.Contains(string(b), "cost") || !strings.Contains(string(b), `"total_tokens":204`) || !strings.Contains(string(b), `"turns":1`) {
		t.Errorf("unpriced usage as JSON: %s %v", b, err)
	}
	if got := u.Add(llm.Usage{CostUSD: 0.5, Priced: true}); !got.Priced || got.CostUSD != 0.5 {
		t.Errorf("sum %+v", got)
	}
}
