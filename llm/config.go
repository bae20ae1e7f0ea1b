package llm

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Provider names.
const (
	ProviderOpenAI    = "openai"    // OpenAI chat completions, and any server that speaks them
	ProviderAnthropic = "anthropic" // Anthropic Messages
)

// Official endpoints.
const (
	OpenAIBaseURL    = "https://api.openai.com/v1"
	AnthropicBaseURL = "https://api.anthropic.com"
)

// Defaults of Config.
const (
	DefaultMaxIterations = 8
	DefaultTimeout       = 90 * time.Second
	DefaultMaxRetries    = 2
)

// Provider is one model behind an API: Complete sends one turn and
// returns the model's answer. With onText set the request is streamed and
// onText receives the model's text as it arrives.
type Provider interface {
	Name() string
	Model() string
	Endpoint() string
	Complete(ctx context.Context, req *Request, onText func(string)) (*Response, error)
}

// local servers that speak OpenAI chat completions, by name: their usual
// base URL and a model name that fits them by default.
var localServers = map[string]struct{ baseURL, model string }{
	"lmstudio": {"http://localhost:1234/v1", "qwen2.5-7b-instruct"},
	"ollama":   {"http://localhost:11434/v1", "qwen2.5:7b-instruct"},
	"vllm":     {"http://localhost:8000/v1", ""},
	"llamacpp": {"http://localhost:8080/v1", "local"},
}

// vendor is a provider's official API: its address, default model, and
// the environment variables its SDK reads.
type vendor struct{ baseURL, model, keyEnv, baseEnv string }

var vendors = map[string]vendor{
	ProviderOpenAI:    {OpenAIBaseURL, "gpt-4o-mini", "OPENAI_API_KEY", "OPENAI_BASE_URL"},
	ProviderAnthropic: {AnthropicBaseURL, "claude-haiku-4-5", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"},
}

// Config selects and configures a provider. Env fills it from the
// PARSEMCP_LLM_* environment variables; command-line flags override them.
type Config struct {
	// Provider is "openai" (also any OpenAI-compatible server given by
	// BaseURL), "anthropic", or a local server's name ("lmstudio",
	// "ollama", "vllm", "llamacpp": OpenAI-compatible at its usual
	// address). Empty: "anthropic" for claude-* models, else "openai".
	Provider string
	// Model is the model's name (default gpt-4o-mini for OpenAI,
	// claude-haiku-4-5 for Anthropic; required with a custom BaseURL).
	Model string
	// BaseURL is the API's root, e.g. http://localhost:11434/v1 for
	// Ollama (default: the vendor's, or OPENAI_BASE_URL /
	// ANTHROPIC_BASE_URL).
	BaseURL string
	// APIKey authenticates with the provider (default OPENAI_API_KEY /
	// ANTHROPIC_API_KEY; not needed by local servers). It is never logged.
	APIKey string
	// MaxTokens caps the output of one model turn (Anthropic default
	// 4096; OpenAI: the server's default).
	MaxTokens int64
	// Timeout bounds one model request (default 90s).
	Timeout time.Duration
	// MaxRetries is how often the SDK retries a connection error, 408,
	// 409, 429 or 5xx, honouring Retry-After (default 2; negative: none).
	MaxRetries int
	// HTTPClient, when set, carries the requests (tests, proxies).
	HTTPClient *http.Client
}

// The environment variables Env reads.
const (
	EnvProvider      = "PARSEMCP_LLM_PROVIDER"
	EnvModel         = "PARSEMCP_LLM_MODEL"
	EnvBaseURL       = "PARSEMCP_LLM_BASE_URL"
	EnvAPIKey        = "PARSEMCP_LLM_API_KEY"
	EnvMaxIterations = "PARSEMCP_LLM_MAX_ITERATIONS"
	EnvTimeout       = "PARSEMCP_LLM_TIMEOUT"
	EnvMaxTokens     = "PARSEMCP_LLM_MAX_TOKENS"
	EnvCompactAt     = "PARSEMCP_LLM_COMPACT_AT"
	EnvPrices        = "PARSEMCP_LLM_PRICES"
)

// Env reads a Config from PARSEMCP_LLM_PROVIDER, _MODEL, _BASE_URL,
// _API_KEY, _TIMEOUT (a duration, or seconds) and _MAX_TOKENS.
func Env() (Config, error) {
	c := Config{
		Provider: os.Getenv(EnvProvider),
		Model:    os.Getenv(EnvModel),
		BaseURL:  os.Getenv(EnvBaseURL),
		APIKey:   os.Getenv(EnvAPIKey),
	}
	if v := os.Getenv(EnvTimeout); v != "" {
		d, err := ParseDuration(v)
		if err != nil {
			return c, fmt.Errorf("%s: %w", EnvTimeout, err)
		}
		c.Timeout = d
	}
	if v := os.Getenv(EnvMaxTokens); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return c, fmt.Errorf("%s=%q: want a non-negative integer", EnvMaxTokens, v)
		}
		c.MaxTokens = n
	}
	return c, nil
}

// EnvInt reads a non-negative integer environment variable (def when
// unset).
func EnvInt(name string, def int) (int, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return def, fmt.Errorf("%s=%q: want a non-negative integer", name, v)
	}
	return n, nil
}

// ParseDuration reads a Go duration ("90s", "2m") or a number of seconds.
func ParseDuration(v string) (time.Duration, error) {
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q: want a duration such as 90s, or seconds", v)
	}
	return d, nil
}

// resolved fills in the defaults and checks the configuration.
func (c Config) resolved() (Config, error) {
	c.Provider = strings.ToLower(strings.TrimSpace(c.Provider))
	if c.Provider == "" {
		if strings.HasPrefix(c.Model, "claude") && c.BaseURL == "" {
			c.Provider = ProviderAnthropic
		} else {
			c.Provider = ProviderOpenAI
		}
	}
	local, isLocal := localServers[strings.ReplaceAll(c.Provider, "-", "")]
	switch {
	case isLocal:
		if c.BaseURL == "" {
			c.BaseURL = local.baseURL
		}
		if c.Model == "" {
			c.Model = local.model
		}
		c.Provider = ProviderOpenAI
	case vendors[c.Provider] != vendor{}:
		v := vendors[c.Provider]
		if c.BaseURL == "" {
			c.BaseURL = os.Getenv(v.baseEnv)
		}
		if c.BaseURL == "" {
			c.BaseURL = v.baseURL
		}
		// A model name fits another server only by chance (Anthropic's
		// API has no other servers).
		if c.Model == "" && (c.BaseURL == v.baseURL || c.Provider == ProviderAnthropic) {
			c.Model = v.model
		}
		if c.APIKey == "" {
			c.APIKey = os.Getenv(v.keyEnv)
		}
	default:
		return c, fmt.Errorf("unknown LLM provider %q: use openai (or any OpenAI-compatible server with --base-url), anthropic, lmstudio, ollama, vllm or llamacpp", c.Provider)
	}
	c.BaseURL = strings.TrimRight(c.BaseURL, "/")
	if c.Provider == ProviderAnthropic {
		// The SDK adds /v1 itself; accept the root with or without it.
		c.BaseURL = strings.TrimSuffix(c.BaseURL, "/v1")
	}
	if c.Model == "" {
		return c, fmt.Errorf("no model: pass --model (or %s); a server at %s needs the name of a model it serves", EnvModel, c.BaseURL)
	}
	official := c.BaseURL == OpenAIBaseURL || c.BaseURL == AnthropicBaseURL
	if c.APIKey == "" {
		if official {
			return c, fmt.Errorf("no API key for %s: pass --api-key or set %s (or %s)", c.Provider, EnvAPIKey, vendors[c.Provider].keyEnv)
		}
		c.APIKey = "none" // local servers ignore it; the SDKs want one
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	return c, nil
}

// NewProvider builds the configured provider on its official SDK.
func NewProvider(c Config) (Provider, error) {
	c, err := c.resolved()
	if err != nil {
		return nil, err
	}
	if c.Provider == ProviderAnthropic {
		return newAnthropic(c), nil
	}
	return newOpenAI(c), nil
}

// LogValue logs the configuration without the API key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("provider", c.Provider), slog.String("model", c.Model),
		slog.String("base_url", c.BaseURL), slog.Bool("api_key_set", c.APIKey != ""), slog.Duration("timeout", c.Timeout))
}

// String describes the configuration without the API key.
func (c Config) String() string {
	key := "unset"
	if c.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("provider=%s model=%s base_url=%s api_key=%s timeout=%s", c.Provider, c.Model, c.BaseURL, key, c.Timeout)
}

// GoString keeps %#v from printing the key.
func (c Config) GoString() string { return "llm.Config{" + c.String() + "}" }
