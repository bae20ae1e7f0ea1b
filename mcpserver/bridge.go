package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/federation"
)

// Bridged is an MCP server reached over stdio whose tools a federation
// agent serves on the broker (parsemcp agent … -- COMMAND ARGS). It is a
// federation.Provider and ChangeNotifier: the bridged server's
// notifications/tools/list_changed make the agent announce its new tools.
type Bridged struct {
	session *mcp.ClientSession
	changed chan struct{}
}

// Bridge starts cmd, connects to it as an MCP client over its stdin and
// stdout, and returns it as a provider of its tools. Close stops it.
func Bridge(ctx context.Context, cmd *exec.Cmd) (*Bridged, error) {
	b := &Bridged{changed: make(chan struct{}, 1)}
	client := mcp.NewClient(&mcp.Implementation{Name: "parsemcp-agent", Version: Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case b.changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("bridge %s: %w", cmd.Path, err)
	}
	if caps := cs.InitializeResult().Capabilities; caps == nil || caps.Tools == nil {
		cs.Close()
		return nil, fmt.Errorf("bridge %s: the server offers no tools", cmd.Path)
	}
	b.session = cs
	return b, nil
}

// Changed implements federation.ChangeNotifier.
func (b *Bridged) Changed() <-chan struct{} { return b.changed }

// ListTools implements federation.Provider: every page of the bridged
// server's tools/list, in the federation's shape.
func (b *Bridged) ListTools(ctx context.Context) ([]federation.Tool, error) {
	var out []federation.Tool
	for t, err := range b.session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		raw, err := json.Marshal(t)
		if err != nil {
			return nil, err
		}
		var ft federation.Tool
		if err := json.Unmarshal(raw, &ft); err != nil {
			return nil, err
		}
		out = append(out, ft)
	}
	return out, nil
}

// CallTool implements federation.Provider: the bridged server's result,
// as it sent it.
func (b *Bridged) CallTool(ctx context.Context, c federation.ToolCall) (json.RawMessage, error) {
	var args any
	if len(c.Arguments) > 0 {
		args = c.Arguments
	}
	res, err := b.session.CallTool(ctx, &mcp.CallToolParams{Name: c.Name, Arguments: args})
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}

// Close ends the session and stops the bridged server.
func (b *Bridged) Close() error { return b.session.Close() }

// Wait returns when the bridged server's session ends.
func (b *Bridged) Wait() error { return b.session.Wait() }
