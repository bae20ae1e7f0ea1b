// Package llmtest runs fake language-model servers for tests: an OpenAI
// chat-completions server and an Anthropic Messages server, each speaking
// its provider's wire format (JSON and server-sent events, tool calls,
// usage, error bodies, Retry-After) as the providers document it. A test
// scripts the model with a function from the request it received to the
// reply it sends; the server checks each request the way the real API
// does (tool results must answer the tool calls of the turn before, and so
// on) and refuses a malformed one with the provider's own 400 error.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// Model is the scripted model: it sees each request and returns the turn
// to send back.
type Model func(req *Request) Reply

// Request is a request the fake received, decoded into a
// provider-neutral form.
type Request struct {
	Header   http.Header
	Model    string
	System   string
	Stream   bool
	Messages []Msg
	// Tools are the names of the tools offered; Schemas their input
	// schemas.
	Tools   []string
	Schemas map[string]json.RawMessage
	// MaxTokens is max_tokens (or max_completion_tokens).
	MaxTokens int64
	// IncludeUsage is stream_options.include_usage (OpenAI).
	IncludeUsage bool
	Body         []byte
}

// Msg is one message of a request.
type Msg struct {
	Role    string // user, assistant (OpenAI tool messages become a user Msg with Results)
	Text    string
	Calls   []Call
	Results []Result
}

// Call is a tool call, in a reply or in a request's history.
type Call struct {
	ID   string
	Name string
	Args string // JSON
}

// Result is a tool result in a request.
type Result struct {
	CallID  string
	Content string
	IsError bool
}

// Reply is the scripted model's turn, or a failure.
type Reply struct {
	Text  string
	Calls []Call
	// Tokens reported; by default input is a quarter of the request's
	// bytes and output a quarter of the reply's.
	InputTokens, OutputTokens int64
	// Stop overrides the stop reason (e.g. "length" / "max_tokens").
	Stop string
	// Status, when not 0 or 200, makes the reply an error response with
	// the provider's error body (ErrorType, ErrorMessage) and Header.
	Status       int
	ErrorType    string
	ErrorMessage string
	Header       map[string]string
	// StreamError, on a streamed request, sends the turn's first text
	// and then the provider's mid-stream error event.
	StreamError bool
	// Hang holds the response until the client gives up on it.
	Hang bool
	// Raw, when set, is sent as the body verbatim (a recorded response),
	// with content type RawType.
	Raw     []byte
	RawType string
}

// LastResults returns the tool results of the request's last message.
func (r *Request) LastResults() []Result {
	if len(r.Messages) == 0 {
		return nil
	}
	return r.Messages[len(r.Messages)-1].Results
}

// LastUserText returns the text of the last user message that has text.
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == "user" && m.Text != "" {
			return m.Text
		}
	}
	return ""
}

// AssistantTurns counts the assistant messages in the request: 0 on the
// first turn of a question asked on a fresh conversation.
func (r *Request) AssistantTurns() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// Server is a running fake provider.
type Server struct {
	*httptest.Server
	// BaseURL is what a client configures: .../v1 for OpenAI, the root
	// for Anthropic.
	BaseURL string
	model   Model

	mu       sync.Mutex
	requests []*Request
	next     int
}

// Requests returns the requests received so far (the refused ones too).
func (s *Server) Requests() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.requests...)
}

func (s *Server) record(r *Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
	s.next++
	return s.next
}

func start(t testing.TB, model Model, h func(s *Server) http.Handler) *Server {
	s := &Server{model: model}
	s.Server = httptest.NewServer(h(s))
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// Script is a Model that plays replies in order, one a request, and
// fails the request with a 500 once they run out.
func Script(replies ...Reply) Model {
	var mu sync.Mutex
	i := 0
	return func(*Request) Reply {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(replies) {
			return Reply{Status: 500, ErrorType: "api_error", ErrorMessage: "llmtest: the script has no more replies"}
		}
		i++
		return replies[i-1]
	}
}

func (r *Reply) tokens(req *Request) (int64, int64) {
	in, out := r.InputTokens, r.OutputTokens
	if in == 0 {
		in = int64(len(req.Body)/4) + 1
	}
	if out == 0 {
		n := len(r.Text)
		for _, c := range r.Calls {
			n += len(c.Name) + len(c.Args)
		}
		out = int64(n/4) + 1
	}
	return in, out
}

// pieces splits s into the small pieces a streaming model sends.
func pieces(s string, size int) []string {
	var out []string
	for len(s) > size {
		cut := size
		for cut < len(s) && s[cut]&0xC0 == 0x80 { // not inside a UTF-8 sequence
			cut++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}

// words splits text into word pieces, each with its trailing space.
func words(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("llmtest: %v", err))
	}
	return string(b)
}

// errorWriter writes a provider's error response.
type errorWriter func(w http.ResponseWriter, status int, typ, msg string, header map[string]string)

// receive checks, decodes and records a request and asks the model for
// its reply. It writes the response itself, and returns ok false, when
// the request is refused or the reply is an error, a hang or a recording;
// otherwise it returns the request, the reply and the request's number.
func (s *Server) receive(w http.ResponseWriter, r *http.Request, decode func([]byte) (*Request, error), fail errorWriter) (*Request, Reply, int, bool) {
	body, _ := io.ReadAll(r.Body)
	req, err := decode(body)
	if err != nil {
		s.record(&Request{Header: r.Header.Clone(), Body: body})
		fail(w, http.StatusBadRequest, "invalid_request_error", err.Error(), nil)
		return nil, Reply{}, 0, false
	}
	req.Header = r.Header.Clone()
	n := s.record(req)
	reply := s.model(req)
	switch {
	case reply.Hang:
		<-r.Context().Done()
	case reply.Raw != nil:
		w.Header().Set("Content-Type", reply.RawType)
		w.Write(reply.Raw)
	case reply.Status != 0 && reply.Status != http.StatusOK:
		fail(w, reply.Status, reply.ErrorType, reply.ErrorMessage, reply.Header)
	default:
		return req, reply, n, true
	}
	return nil, Reply{}, 0, false
}

// stop is the reply's stop reason: Stop when set, else the provider's
// reason for a turn with tool calls or for one without.
func (r *Reply) stop(calls, done string) string {
	switch {
	case r.Stop != "":
		return r.Stop
	case len(r.Calls) > 0:
		return calls
	}
	return done
}

// sse writes server-sent events and flushes after each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (s *sse) event(name, data string) {
	if name != "" {
		fmt.Fprintf(s.w, "event: %s\n", name)
	}
	fmt.Fprintf(s.w, "data: %s\n\n", data)
	if s.f != nil {
		s.f.Flush()
	}
}

var countRe = regexp.MustCompile(`"count":\s*(\d+)`)

// Counter is a model that answers a question by counting class: its first
// turn says "Let me count them." and calls count_objects on class; once it
// has the result it answers "There are N <class> objects.", or, when the
// tool failed, "I cannot see that: <the tool's text>".
func Counter(class string) Model {
	return func(req *Request) Reply {
		if res := req.LastResults(); len(res) > 0 {
			m := countRe.FindStringSubmatch(res[0].Content)
			if res[0].IsError || m == nil {
				return Reply{Text: "I cannot see that: " + res[0].Content}
			}
			return Reply{Text: fmt.Sprintf("There are %s %s objects.", m[1], class)}
		}
		return Reply{Text: "Let me count them.", Calls: []Call{{ID: "call_count_1", Name: "count_objects", Args: `{"class_name":"` + class + `"}`}}}
	}
}
