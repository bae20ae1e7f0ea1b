package llm

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
)

// APIError is a provider refusing or failing a model request, after the
// SDK's own retries: the HTTP status, the provider's error type and
// message, and how long the provider asked the client to wait (429, 529,
// 503), when it said.
type APIError struct {
	Provider   string
	StatusCode int
	Type       string
	Message    string
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d %s", e.Provider, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Type != "" {
		b.WriteString(" (" + e.Type + ")")
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, "; the provider asks to retry after %s", e.RetryAfter)
	}
	switch {
	case e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden:
		b.WriteString("; check the API key (--api-key, PARSEMCP_LLM_API_KEY)")
	case e.StatusCode == http.StatusNotFound:
		b.WriteString("; check the model name and the base URL")
	}
	return b.String()
}

// FormatError is a server answering a model request successfully but not
// in its provider's format: the base URL points at another kind of
// server (an OpenAI-compatible one given as anthropic, or the reverse), or
// at something that is no model API at all.
type FormatError struct {
	Provider string
	BaseURL  string
	// Problem says what the answer lacks, e.g. "no content blocks".
	Problem string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%s at %s answered in an unexpected format: %s; is it an %s API? check --provider and --base-url", e.Provider, e.BaseURL, e.Problem, e.Provider)
}

// RateLimited reports whether the provider refused for rate or capacity
// reasons (429, 529 overloaded).
func (e *APIError) RateLimited() bool {
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode == 529
}

// apiError turns an SDK error into an *APIError, with any copy of the API
// key removed from the provider's message. Other errors pass through with
// the key removed.
func apiError(provider, key string, err error) error {
	if err == nil {
		return nil
	}
	var oe *openai.Error
	var ae *anthropic.Error
	var out *APIError
	switch {
	case errors.As(err, &oe):
		out = &APIError{Provider: provider, StatusCode: oe.StatusCode, Type: oe.Type, Message: oe.Message, RetryAfter: retryAfter(oe.Response)}
		if out.Type == "" {
			out.Type = oe.Code
		}
	case errors.As(err, &ae):
		out = &APIError{Provider: provider, StatusCode: ae.StatusCode, Type: string(ae.Type()), Message: ae.Message, RetryAfter: retryAfter(ae.Response)}
	default:
		if key != "" && strings.Contains(err.Error(), key) {
			return errors.New(redactKey(err.Error(), key))
		}
		return err
	}
	out.Message = redactKey(out.Message, key)
	return out
}

func redactKey(s, key string) string {
	if key == "" || len(key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// retryAfter reads Retry-After-Ms or Retry-After (seconds or an HTTP
// date) from a response.
func retryAfter(res *http.Response) time.Duration {
	if res == nil {
		return 0
	}
	if v := res.Header.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := res.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Round(time.Second)
		}
	}
	return 0
}
