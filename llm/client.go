package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// DefaultSystem is the system prompt of a Client whose Options.System is
// empty.
const DefaultSystem = `You answer questions about an application's data, stored in the Parse data model, by calling the tools of a parsemcp server.
Use the tools instead of guessing: find classes and fields with get_all_schemas and get_schema, count with count_objects, read rows with query_class, summarise with aggregate.
The tools act with the access rights of the agent you are. When a tool reports permission_denied, or a class is unknown, say that the data is not available to you; do not try to work around it.
Answer concisely and give numbers exactly as the tools return them.`

// DefaultMaxResultBytes is how much of one tool result the model sees
// when Options.MaxResultBytes is unset.
const DefaultMaxResultBytes = 64 << 10

// Options configure a Client.
type Options struct {
	Provider Provider   // required
	Tools    ToolSource // required
	// System is the system prompt (default DefaultSystem).
	System string
	// MaxIterations caps the model turns of one question (default 8).
	// A question still asking for tools after that many turns stops with
	// Result.Stop "max_iterations".
	MaxIterations int
	// Pricing prices the tokens (default DefaultPricing).
	Pricing Pricing
	// CompactAt is the context budget in tokens: when the last turn's
	// context reached it, the next question first compacts the history
	// into a summary. 0 never compacts by itself.
	CompactAt int64
	// Stream asks for the model's text as it is written (OnEvent gets
	// EventText pieces).
	Stream bool
	// MaxResultBytes is how much of one tool result the model sees
	// (default 64 KiB); the rest is cut with a note.
	MaxResultBytes int
	// OnEvent, when set, hears the loop's progress (text pieces, tool
	// calls starting and ending, compaction). It runs on the asking
	// goroutine.
	OnEvent func(Event)
}

// EventKind says what an Event reports.
type EventKind int

const (
	EventText         EventKind = iota // a piece of the model's text (streaming)
	EventToolStart                     // a tool call starts: Call
	EventToolEnd                       // a tool call ended: Call, with Duration and ErrorCode
	EventTurn                          // a model turn ended: Usage
	EventCompacted                     // the history was compacted: Text is the summary, Usage its cost
	EventToolsChanged                  // the tools were listed again after a change: Added, Removed, Tools
)

// Event is one step of the loop, for live display.
type Event struct {
	Kind  EventKind
	Text  string
	Call  *CallRecord
	Usage Usage
	// Added and Removed are the tools (the server's names) an
	// EventToolsChanged found new and gone; Tools how many there are now.
	Added, Removed []string
	Tools          int
}

// CallRecord is one tool call the model made.
type CallRecord struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Iteration int             `json:"iteration"`
	// Duration is how long the tool took (DurationMS in JSON).
	Duration   time.Duration `json:"-"`
	DurationMS float64       `json:"duration_ms"`
	// ErrorCode is the tool's stable error code when it failed
	// (permission_denied, invalid_argument, …), empty when it succeeded.
	ErrorCode string `json:"error_code,omitempty"`
	// Error is the tool's error message when it failed.
	Error string `json:"error,omitempty"`
	// ResultBytes is the size of the tool's result.
	ResultBytes int `json:"result_bytes"`
	// Result is the text the model was shown.
	Result string `json:"-"`
}

// Stop reasons of a Result.
const (
	StopAnswered      = "answered"       // the model answered without asking for more tools
	StopMaxIterations = "max_iterations" // the question used every allowed model turn
	StopMaxTokens     = "max_tokens"     // the answer was cut at the output token limit
)

// Result is the outcome of one question.
type Result struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
	// Stop says why the loop ended (StopAnswered, StopMaxIterations,
	// StopMaxTokens); Reason explains any stop but StopAnswered.
	Stop       string       `json:"stop"`
	Reason     string       `json:"reason,omitempty"`
	Iterations int          `json:"iterations"`
	ToolCalls  []CallRecord `json:"tool_calls"`
	// Turns is the usage of each model turn; Usage their sum.
	Turns []Usage `json:"turns"`
	Usage Usage   `json:"usage"`
	// Compacted reports that the history was compacted before the
	// question (Options.CompactAt); its cost is in the session's usage.
	Compacted bool   `json:"compacted,omitempty"`
	Provider  string `json:"provider"`
	Model     string `json:"model"`
}

// Client runs questions through a model and an MCP server's tools, and
// keeps the conversation between them. It is not safe for concurrent use.
type Client struct {
	opts    Options
	tools   []Tool            // as offered to the model
	names   map[string]string // model-facing name → the server's
	stale   bool              // the source said its tools changed since they were listed
	history []Message
	summary string
	context int64 // tokens of the last turn's context
	total   Usage
	last    Usage
}

// New builds a Client.
func New(opts Options) (*Client, error) {
	if opts.Provider == nil || opts.Tools == nil {
		return nil, errors.New("llm: Options.Provider and Options.Tools are required")
	}
	if opts.MaxIterations <= 0 {
		opts.MaxIterations = DefaultMaxIterations
	}
	if opts.Pricing == nil {
		opts.Pricing = DefaultPricing
	}
	if opts.System == "" {
		opts.System = DefaultSystem
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	return &Client{opts: opts}, nil
}

// Provider returns the client's provider.
func (c *Client) Provider() Provider { return c.opts.Provider }

// Priced reports whether the model has a price in the pricing table.
func (c *Client) Priced() bool {
	_, ok := c.opts.Pricing.Lookup(c.opts.Provider.Model())
	return ok
}

// Tools lists the tools offered to the model (loading them from the
// server on first use), sorted by name.
func (c *Client) Tools(ctx context.Context) ([]Tool, error) {
	if err := c.loadTools(ctx); err != nil {
		return nil, err
	}
	out := append([]Tool(nil), c.tools...)
	for i := range out {
		out[i].Name = c.names[out[i].Name]
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

var unsafeName = regexp.MustCompile(`[^a-zA-Z0-9_-]`)

// loadTools lists the tools on first use, and again after the source
// signalled a change (ChangingToolSource), reporting what changed; a
// failed listing is tried again on the next call.
func (c *Client) loadTools(ctx context.Context) error {
	if cs, ok := c.opts.Tools.(ChangingToolSource); ok {
		select {
		case <-cs.Changed():
			c.stale = true
		default:
		}
	}
	if c.names != nil && !c.stale {
		return nil
	}
	list, err := c.opts.Tools.Tools(ctx)
	if err != nil {
		return err
	}
	old := c.names
	c.names = map[string]string{}
	c.tools = nil
	c.stale = false
	for _, t := range list {
		// Providers accept ^[a-zA-Z0-9_-]{1,64}$; other names (a
		// federated agent's "agent.tool") are offered under a safe alias.
		name := unsafeName.ReplaceAllString(t.Name, "_")
		if len(name) > 64 {
			name = name[:64]
		}
		for i := 2; c.names[name] != ""; i++ {
			suffix := fmt.Sprintf("_%d", i)
			name = name[:min(len(name), 64-len(suffix))] + suffix
		}
		if !json.Valid(t.InputSchema) {
			t.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		c.names[name] = t.Name
		t.Name = name
		c.tools = append(c.tools, t)
	}
	if old != nil {
		added, removed := nameDiff(c.names, old), nameDiff(old, c.names)
		if len(added)+len(removed) > 0 {
			c.emit(Event{Kind: EventToolsChanged, Added: added, Removed: removed, Tools: len(c.tools)})
		}
	}
	return nil
}

// nameDiff lists the server names in a but not in b, sorted.
func nameDiff(a, b map[string]string) []string {
	in := map[string]bool{}
	for _, n := range b {
		in[n] = true
	}
	var out []string
	for _, n := range a {
		if !in[n] {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (c *Client) emit(e Event) {
	if c.opts.OnEvent != nil {
		c.opts.OnEvent(e)
	}
}

func (c *Client) system() string {
	if c.summary == "" {
		return c.opts.System
	}
	return c.opts.System + "\n\nSummary of the conversation so far (its earlier turns were compacted):\n" + c.summary
}

// turn sends the conversation to the model once.
func (c *Client) turn(ctx context.Context, extra ...Message) (*Response, error) {
	req := &Request{System: c.system(), Messages: append(append([]Message(nil), c.history...), extra...), Tools: c.tools}
	var onText func(string)
	if c.opts.Stream {
		onText = func(s string) { c.emit(Event{Kind: EventText, Text: s}) }
	}
	return c.opts.Provider.Complete(ctx, req, onText)
}

// Ask puts a question to the model, continuing the conversation, and runs
// the tool calls it asks for until it answers or Options.MaxIterations
// model turns have passed. On an error the question and its turns are
// dropped from the history (the conversation stays valid), and the
// partial Result tells what ran.
func (c *Client) Ask(ctx context.Context, question string) (*Result, error) {
	p := c.opts.Provider
	res := &Result{Question: question, Provider: p.Name(), Model: p.Model(), ToolCalls: []CallRecord{}, Turns: []Usage{}}
	if err := c.loadTools(ctx); err != nil {
		return res, err
	}
	if c.opts.CompactAt > 0 && c.context >= c.opts.CompactAt && len(c.history) > 0 {
		if _, _, err := c.Compact(ctx); err != nil {
			return res, fmt.Errorf("automatic compaction: %w", err)
		}
		res.Compacted = true
	}
	start := len(c.history)
	c.history = append(c.history, Message{Role: RoleUser, Text: question})
	defer func() {
		c.last = res.Usage
		c.total = c.total.Add(res.Usage)
	}()
	for iter := 1; ; iter++ {
		res.Iterations = iter
		if err := c.loadTools(ctx); err != nil { // each turn is offered the current tools
			c.history = c.history[:start]
			return res, err
		}
		resp, err := c.turn(ctx)
		if err != nil {
			c.history = c.history[:start]
			return res, err
		}
		u := usageOf(c.opts.Pricing, p.Model(), resp.Tokens)
		res.Turns = append(res.Turns, u)
		res.Usage = res.Usage.Add(u)
		c.context = resp.Tokens.Total()
		c.emit(Event{Kind: EventTurn, Usage: u})
		calls := resp.ToolCalls
		for i := range calls {
			if calls[i].ID == "" {
				calls[i].ID = fmt.Sprintf("call_%d_%d", iter, i)
			}
			if len(calls[i].Arguments) > 0 && !json.Valid(calls[i].Arguments) {
				calls[i].Arguments, _ = json.Marshal(string(calls[i].Arguments))
			}
		}
		c.history = append(c.history, Message{Role: RoleAssistant, Text: resp.Text, ToolCalls: calls})
		if len(calls) == 0 {
			res.Answer = resp.Text
			res.Stop = StopAnswered
			if resp.Stop == "length" || resp.Stop == "max_tokens" {
				res.Stop = StopMaxTokens
				res.Reason = "the model's answer was cut at its output token limit (--max-tokens)"
			}
			return res, nil
		}
		results := make([]ToolResult, len(calls))
		if iter >= c.opts.MaxIterations {
			var names []string
			for i, call := range calls {
				names = append(names, c.serverName(call.Name))
				results[i] = ToolResult{CallID: call.ID, Content: "not run: this question reached its limit of model turns", IsError: true}
			}
			c.history = append(c.history, Message{Role: RoleUser, Results: results})
			res.Answer = resp.Text
			res.Stop = StopMaxIterations
			res.Reason = fmt.Sprintf("stopped after %d model turns (max_iterations %d) with the model still asking for %s; raise --max-iterations or ask a narrower question",
				iter, c.opts.MaxIterations, strings.Join(names, ", "))
			return res, nil
		}
		for i, call := range calls {
			rec, result, err := c.call(ctx, iter, call)
			if err != nil {
				c.history = c.history[:start]
				return res, err
			}
			res.ToolCalls = append(res.ToolCalls, rec)
			results[i] = result
		}
		c.history = append(c.history, Message{Role: RoleUser, Results: results})
	}
}

func (c *Client) serverName(modelName string) string {
	if n, ok := c.names[modelName]; ok {
		return n
	}
	return modelName
}

// call runs one tool call and returns its record and the result the
// model sees.
func (c *Client) call(ctx context.Context, iter int, call ToolCall) (CallRecord, ToolResult, error) {
	name, known := c.names[call.Name]
	rec := CallRecord{ID: call.ID, Name: name, Arguments: call.arguments(), Iteration: iter}
	if !known {
		rec.Name = call.Name
	}
	c.emit(Event{Kind: EventToolStart, Call: &rec})
	var out Output
	start := time.Now()
	switch args := call.arguments(); {
	case !known:
		var have []string
		for _, t := range c.tools {
			have = append(have, t.Name)
		}
		sort.Strings(have)
		out = Output{IsError: true, ErrorCode: "unknown_tool", Content: fmt.Sprintf("there is no tool %q; the tools are: %s", call.Name, strings.Join(have, ", "))}
	case args[0] != '{':
		out = Output{IsError: true, ErrorCode: "invalid_argument", Content: "the arguments must be a JSON object; got " + string(args)}
	default:
		var err error
		if out, err = c.opts.Tools.Call(ctx, name, args); err != nil {
			return rec, ToolResult{}, err
		}
	}
	rec.Duration = time.Since(start)
	rec.DurationMS = float64(rec.Duration.Microseconds()) / 1000
	rec.ResultBytes = len(out.Content)
	if out.IsError {
		rec.ErrorCode = out.ErrorCode
		rec.Error = errorMessage(out.Content)
	}
	content := out.Content
	if len(content) > c.opts.MaxResultBytes {
		cut := c.opts.MaxResultBytes
		for cut > 0 && !utf8.RuneStart(content[cut]) {
			cut--
		}
		content = content[:cut] + fmt.Sprintf("\n[result cut: %d more bytes not shown; narrow the call with a where constraint, a lower limit or keys]", len(out.Content)-cut)
	}
	rec.Result = content
	c.emit(Event{Kind: EventToolEnd, Call: &rec})
	return rec, ToolResult{CallID: call.ID, Content: content, IsError: out.IsError}, nil
}

// errorMessage takes the message out of parsemcp's {"error": …} text.
func errorMessage(text string) string {
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(text), &e) == nil && e.Error != "" {
		return e.Error
	}
	return text
}

// Usage is the session's total (every question and compaction).
func (c *Client) Usage() Usage { return c.total }

// LastUsage is the usage of the last question.
func (c *Client) LastUsage() Usage { return c.last }

// ContextTokens is the size of the conversation at the last model turn,
// in tokens, as the provider counted it.
func (c *Client) ContextTokens() int64 { return c.context }

// RoleSummary marks the summary entry History returns after compaction.
const RoleSummary Role = "summary"

// History returns a copy of the conversation: after a compaction, its
// first entry is the summary (RoleSummary).
func (c *Client) History() []Message {
	var out []Message
	if c.summary != "" {
		out = append(out, Message{Role: RoleSummary, Text: c.summary})
	}
	return append(out, c.history...)
}

// Reset forgets the conversation (usage totals stay).
func (c *Client) Reset() {
	c.history = nil
	c.summary = ""
	c.context = 0
}
