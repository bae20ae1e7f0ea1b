package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
)

// Content is one item of a tool result (the MCP content shapes: "text",
// or "image"/"audio" with base64 Data and a MIMEType).
type Content struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MIMEType string `json:"mimeType,omitempty"`
}

// Result is a tool's answer (the MCP CallToolResult shape).
type Result struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
}

// TextResult is a result holding one text.
func TextResult(text string) *Result {
	return &Result{Content: []Content{{Type: "text", Text: text}}}
}

// ErrorResult is a tool error holding one text.
func ErrorResult(text string) *Result {
	return &Result{Content: []Content{{Type: "text", Text: text}}, IsError: true}
}

// HandlerFunc runs one tool of a ToolSet.
type HandlerFunc func(ctx context.Context, args json.RawMessage, caller Caller) (*Result, error)

// ToolSet is a Provider of tools written in Go. It is safe for concurrent
// use; adding or removing a tool makes a serving agent announce the change.
type ToolSet struct {
	mu       sync.RWMutex
	tools    map[string]toolEntry
	changed  chan struct{}
	initOnce sync.Once
}

type toolEntry struct {
	tool Tool
	run  HandlerFunc
}

func (s *ToolSet) init() {
	s.initOnce.Do(func() {
		s.changed = make(chan struct{}, 1)
		if s.tools == nil {
			s.tools = map[string]toolEntry{}
		}
	})
}

// Add adds or replaces a tool. A nil InputSchema takes any object.
func (s *ToolSet) Add(t Tool, run HandlerFunc) error {
	s.init()
	if err := t.validate(); err != nil {
		return err
	}
	if run == nil {
		return fmt.Errorf("tool %s: nil handler", t.Name)
	}
	s.mu.Lock()
	s.tools[t.Name] = toolEntry{tool: t, run: run}
	s.mu.Unlock()
	s.signal()
	return nil
}

// Remove removes a tool.
func (s *ToolSet) Remove(name string) {
	s.init()
	s.mu.Lock()
	delete(s.tools, name)
	s.mu.Unlock()
	s.signal()
}

func (s *ToolSet) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// Changed implements ChangeNotifier.
func (s *ToolSet) Changed() <-chan struct{} {
	s.init()
	return s.changed
}

// ListTools implements Provider.
func (s *ToolSet) ListTools(context.Context) ([]Tool, error) {
	s.init()
	s.mu.RLock()
	out := make([]Tool, 0, len(s.tools))
	for _, e := range s.tools {
		out = append(out, e.tool)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CallTool implements Provider. An unknown tool is a tool error result.
func (s *ToolSet) CallTool(ctx context.Context, c ToolCall) (json.RawMessage, error) {
	s.init()
	s.mu.RLock()
	e, ok := s.tools[c.Name]
	s.mu.RUnlock()
	if !ok {
		return json.Marshal(ErrorResult(fmt.Sprintf("unknown tool %q", c.Name)))
	}
	args := c.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	r, err := e.run(ctx, args, c.Caller)
	if err != nil {
		r = ErrorResult(err.Error())
	}
	if r == nil {
		r = &Result{Content: []Content{}}
	}
	if r.Content == nil {
		r.Content = []Content{}
	}
	return json.Marshal(r)
}

// Bool returns a pointer to b, for Annotations.
func Bool(b bool) *bool { return &b }
