package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolSource is where the loop's tools come from and where their calls
// go: an MCP server, through MCPTools.
type ToolSource interface {
	// Tools lists the tools the connected agent may call.
	Tools(ctx context.Context) ([]Tool, error)
	// Call runs one tool. A tool failure is an Output with IsError set;
	// an error means the server could not be reached.
	Call(ctx context.Context, name string, args json.RawMessage) (Output, error)
}

// Output is what a tool call returned: its text, whether it is a tool
// error, and the error's stable code (parsemcp's error_code) when it is.
type Output struct {
	Content   string
	IsError   bool
	ErrorCode string
}

// ChangingToolSource is a ToolSource that says when its tools changed: a
// signal on Changed makes the Client list them again before its next
// model turn (and its next Tools call); without one it lists them once.
type ChangingToolSource interface {
	ToolSource
	Changed() <-chan struct{}
}

// MCPTools is a ToolSource over an MCP client session of the official Go
// SDK: the agent the server resolved for the session is the agent the
// model acts as. With Changes (FollowToolChanges) it is a
// ChangingToolSource that follows the server's
// notifications/tools/list_changed.
type MCPTools struct {
	Session *mcp.ClientSession
	Changes *ToolChanges
}

// Changed implements ChangingToolSource (a nil channel, which never
// fires, without Changes).
func (m MCPTools) Changed() <-chan struct{} {
	if m.Changes == nil {
		return nil
	}
	return m.Changes.ch
}

// ToolChanges carries an MCP server's notifications/tools/list_changed to
// a Client; notifications that arrive before the Client looks count once.
type ToolChanges struct{ ch chan struct{} }

// FollowToolChanges returns a copy of opts (nil: no options) whose
// ToolListChangedHandler signals the returned ToolChanges, then runs
// opts' own (which thus knows the next model turn will see the change).
// Connect with the copy, and give the ToolChanges to MCPTools.
func FollowToolChanges(opts *mcp.ClientOptions) (*mcp.ClientOptions, *ToolChanges) {
	tc := &ToolChanges{ch: make(chan struct{}, 1)}
	out := &mcp.ClientOptions{}
	if opts != nil {
		*out = *opts
	}
	inner := out.ToolListChangedHandler
	out.ToolListChangedHandler = func(ctx context.Context, req *mcp.ToolListChangedRequest) {
		select {
		case tc.ch <- struct{}{}:
		default: // a change is already pending
		}
		if inner != nil {
			inner(ctx, req)
		}
	}
	return out, tc
}

// Tools lists the session's tools (all pages).
func (m MCPTools) Tools(ctx context.Context) ([]Tool, error) {
	var out []Tool
	for t, err := range m.Session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("MCP tools/list: %w", err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil || t.InputSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		desc := t.Description
		if desc == "" && t.Annotations != nil {
			desc = t.Annotations.Title
		}
		out = append(out, Tool{Name: t.Name, Description: desc, InputSchema: schema})
	}
	return out, nil
}

// Call runs a tool through the session. A JSON-RPC error (the server
// refused the call itself: unknown tool, bad arguments, unauthorized) is
// an Output with IsError, so the model can read it and recover; a broken
// connection is an error.
func (m MCPTools) Call(ctx context.Context, name string, args json.RawMessage) (Output, error) {
	res, err := m.Session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return Output{Content: we.Message, IsError: true, ErrorCode: rpcCode(we.Code)}, nil
		}
		return Output{}, fmt.Errorf("MCP tools/call %s: %w", name, err)
	}
	out := Output{IsError: res.IsError}
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				parts = append(parts, c.Resource.Text)
			} else {
				parts = append(parts, "[binary resource omitted]")
			}
		case *mcp.ResourceLink:
			parts = append(parts, "resource: "+c.URI)
		default:
			parts = append(parts, "[non-text content omitted]")
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	out.Content = strings.Join(parts, "\n")
	if out.IsError {
		out.ErrorCode = errorCode(out.Content)
	}
	return out, nil
}

// errorCode reads parsemcp's {"error_code": …} from a tool error's text
// ("tool_error" when the text carries none).
func errorCode(text string) string {
	var e struct {
		Code string `json:"error_code"`
	}
	if json.Unmarshal([]byte(text), &e) == nil && e.Code != "" {
		return e.Code
	}
	return "tool_error"
}

func rpcCode(code int64) string {
	switch code {
	case -32001:
		return "unauthorized"
	case jsonrpc.CodeInvalidParams:
		return "invalid_argument"
	case jsonrpc.CodeMethodNotFound:
		return "not_found"
	}
	return "protocol_error"
}

// ClientName is how the loop introduces itself to MCP servers.
var clientInfo = &mcp.Implementation{Name: "parsemcp-llm", Version: "1"}

// Connect opens an MCP client session over t with the official Go SDK
// client. opts may be nil (an ElicitationHandler there answers a server's
// approval requests).
func Connect(ctx context.Context, t mcp.Transport, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	return mcp.NewClient(clientInfo, opts).Connect(ctx, t, nil)
}

// ConnectHTTP opens a session with a Streamable HTTP MCP server at
// endpoint (e.g. http://127.0.0.1:8787/mcp), sending bearer (when set) as
// Authorization: Bearer on every request.
func ConnectHTTP(ctx context.Context, endpoint, bearer string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t := &mcp.StreamableClientTransport{Endpoint: endpoint}
	if bearer != "" {
		t.HTTPClient = &http.Client{Transport: bearerTransport{token: bearer, next: http.DefaultTransport}}
	}
	cs, err := Connect(ctx, t, opts)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", endpoint, err)
	}
	return cs, nil
}

// ConnectCommand starts an MCP server as a child process and talks to it
// over its stdin/stdout (e.g. `parsemcp stdio --demo`).
func ConnectCommand(ctx context.Context, cmd *exec.Cmd, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	cs, err := Connect(ctx, &mcp.CommandTransport{Command: cmd}, opts)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	return cs, nil
}

type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}
