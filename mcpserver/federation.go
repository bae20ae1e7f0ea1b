package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/tools"
)

// CategoryRemote is the category of remote agents' tools.
const CategoryRemote = tools.CategoryRemote

// remoteFailure is a remote tool's own error: the client gets the agent's
// result as it is; the guard chain (audit) sees err.
type remoteFailure struct {
	result json.RawMessage
	err    *tools.Error
}

func (f *remoteFailure) Error() string { return f.err.Error() }
func (f *remoteFailure) Unwrap() error { return f.err }

// callSessionKey carries the MCP session id of a tool call to the remote
// caller.
type callSessionKey struct{}

func sessionFrom(ctx context.Context) string {
	if id, _ := ctx.Value(callSessionKey{}).(string); id != "" {
		return id
	}
	return "default"
}

// syncRemote mirrors the federation's remote catalog into the SDK server
// (whose changes send notifications/tools/list_changed to every session):
// new and changed tools are added, departed ones removed.
func (s *Server) syncRemote() {
	cat := s.fed.Tools()
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]*tools.Tool, len(cat))
	sigs := make(map[string]string, len(cat))
	for _, rt := range cat {
		if _, local := s.tools.Get(rt.Name); local {
			continue // cannot happen (remote names hold a hyphen); never shadow
		}
		sig, _ := json.Marshal(rt)
		sigs[rt.Name] = string(sig)
		if s.remoteSigs[rt.Name] == string(sig) {
			if t := s.remoteTools[rt.Name]; t != nil {
				next[rt.Name] = t
			}
			continue // unchanged: kept, or still refused by the SDK
		}
		mt := sdkTool(rt.Name, rt.Tool)
		mt.Meta = mcp.Meta{"category": CategoryRemote, "federation": map[string]any{"agent": rt.Entity.String(), "team": rt.Entity.Team, "tool": rt.Tool.Name}}
		if err := addTool(s.mcp, mt, s.toolHandler(rt.Name)); err != nil {
			s.log.Warn("federation: remote tool left out: the MCP SDK refused it", "tool", rt.Name, "agent", rt.Entity.String(), "err", err)
			continue
		}
		next[rt.Name] = s.remoteTool(rt)
	}
	var gone []string
	for name := range s.remoteTools {
		if next[name] == nil {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.mcp.RemoveTools(gone...)
	}
	s.remoteTools, s.remoteSigs = next, sigs
}

// sdkTool is the SDK's form of remote tool t, listed as name.
func sdkTool(name string, t federation.Tool) *mcp.Tool {
	mt := &mcp.Tool{Name: name, Title: t.Title, Description: t.Description, InputSchema: t.InputSchema, Annotations: remoteAnnotations(t.Annotations)}
	if len(t.OutputSchema) > 0 {
		mt.OutputSchema = t.OutputSchema
	}
	return mt
}

// addTool adds mt to srv, turning the SDK's refusal (AddTool panics on a
// schema it cannot take) into an error: nothing a remote agent lists can
// stop the server.
func addTool(srv *mcp.Server, mt *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the MCP SDK refused it: %v", p)
		}
	}()
	srv.AddTool(mt, h)
	return nil
}

// CheckRemoteTool reports whether the MCP SDK takes remote tool t under
// name (its AddTool, on a scratch server), for federation.Options.CheckTool:
// a tool the SDK would refuse is left out by the federation, with the
// reason among the tools/list warnings, before it reaches any session.
func CheckRemoteTool(name string, t federation.Tool) error {
	scratch := mcp.NewServer(&mcp.Implementation{Name: "check", Version: "0"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	return addTool(scratch, sdkTool(name, t), func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return nil, nil })
}

func remoteAnnotations(a *federation.Annotations) *mcp.ToolAnnotations {
	if a == nil {
		return nil
	}
	return &mcp.ToolAnnotations{Title: a.Title, ReadOnlyHint: a.ReadOnly(), DestructiveHint: a.DestructiveHint, IdempotentHint: a.IdempotentHint != nil && *a.IdempotentHint, OpenWorldHint: a.OpenWorldHint}
}

// remotePermission is the tier a remote tool needs: readers the readonly
// tier, anything else (an unannotated tool included) the write tier.
func remotePermission(readOnly bool) agent.Permission {
	if readOnly {
		return agent.Readonly
	}
	return agent.Write
}

// remoteTool is the call pipeline's view of a remote tool: the tier its
// annotations ask for (remotePermission), its agent's team, and no
// operator gate (the agent's own writes are its business).
func (s *Server) remoteTool(rt federation.RemoteTool) *tools.Tool {
	ro := rt.Tool.Annotations.ReadOnly()
	name := rt.Name
	var input *jsonschema.Schema
	if err := json.Unmarshal(rt.Tool.InputSchema, &input); err != nil {
		input = nil // listed without one in GET /tools; tools/list passes the agent's own
	}
	return &tools.Tool{Name: name, Description: rt.Tool.Description, Category: CategoryRemote, Permission: remotePermission(ro), Timeout: s.fed.CallTimeout(),
		ReadOnly: ro, Remote: true, Team: rt.Entity.Team, Destructive: rt.Tool.Annotations.Destructive(), Gate: agent.GateNone, Input: input, CheckInput: rt.Tool.CheckArguments,
		Handler: func(ctx context.Context, c *tools.Call) (any, error) {
			return s.callRemote(ctx, c.Scope.Agent(), name, c.Args)
		}}
}

// callerOf is who a remote call acts for: the user, or the token, or the
// principal.
func callerOf(ctx context.Context, a *agent.Agent) federation.Caller {
	c := federation.Caller{Session: sessionFrom(ctx)}
	switch {
	case a.Identity.Mode == agent.AuthUser && a.Identity.UserID != "":
		c.User = a.Identity.UserID
	case a.Token != nil:
		c.User = "token-" + a.Token.ID
	default:
		c.User = a.Key()
	}
	if a.Token != nil {
		c.Team, c.ReadOnly = a.Token.Team, !a.Token.Write
	}
	return c
}

// callRemote proxies one call and maps the federation's failures to tool
// errors.
func (s *Server) callRemote(ctx context.Context, a *agent.Agent, name string, args json.RawMessage) (any, error) {
	raw, err := s.fed.Call(ctx, callerOf(ctx, a), name, args)
	if err == nil {
		return raw, nil
	}
	var te *federation.ToolError
	switch {
	case errors.As(err, &te):
		return nil, &remoteFailure{result: te.Result, err: &tools.Error{Code: tools.CodeRemoteError, Message: te.Text, Details: map[string]any{"agent": te.Entity.String()}}}
	case errors.Is(err, federation.ErrTimeout):
		return nil, &tools.Error{Code: tools.CodeTimeout, Message: strings.TrimPrefix(err.Error(), federation.ErrTimeout.Error()+": ") + ": the agent did not answer within the tool's time limit", Internal: err}
	case errors.Is(err, federation.ErrUnavailable):
		return nil, &tools.Error{Code: tools.CodeUnavailable, Message: err.Error()}
	case errors.Is(err, federation.ErrPayloadTooLarge):
		return nil, &tools.Error{Code: tools.CodeTooLarge, Message: err.Error()}
	case errors.Is(err, federation.ErrBadAnswer):
		return nil, &tools.Error{Code: tools.CodeRemoteError, Message: err.Error()}
	case errors.Is(err, federation.ErrUnknownTool):
		return nil, &tools.Error{Code: tools.CodeNotFound, Message: fmt.Sprintf("unknown tool %q (its agent no longer offers it)", name)}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return nil, err
	}
	return nil, &tools.Error{Code: tools.CodeRemoteError, Message: err.Error()}
}

// remoteResult turns a remote tool's JSON result into the SDK's.
func remoteResult(raw []byte) (*mcp.CallToolResult, error) {
	var r mcp.CallToolResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return errorResult(&tools.Error{Code: tools.CodeRemoteError, Message: "the agent's result is not a valid MCP tool result"}), nil
	}
	if r.Content == nil {
		r.Content = []mcp.Content{}
	}
	return &r, nil
}

// catalog returns the tools agent a may call (agent.MayCall), as every
// listing shows them (tools/list, the list_tools tool, GET /tools): the
// registry's and the remote agents' (these judged from the mirrored
// catalog: listing never waits for an agent), optionally only those of a
// category. Calls are judged by the same rule (mayCallGuard), so a tool
// missing here cannot be called.
func (s *Server) catalog(a *agent.Agent, category string) []*tools.Tool {
	out := s.tools.Allowed(a, s.config.Gates, category)
	if s.fed == nil || (category != "" && !strings.EqualFold(category, CategoryRemote)) {
		return out
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rt := range s.fed.Tools() {
		if t := s.remoteTools[rt.Name]; t != nil && a.MayCall(t.Info(), s.config.Gates) == nil {
			out = append(out, t)
		}
	}
	return out
}

// listable returns the names of catalog(a, category).
func (s *Server) listable(a *agent.Agent, category string) map[string]bool {
	allowed := map[string]bool{}
	for _, t := range s.catalog(a, category) {
		allowed[t.Name] = true
	}
	return allowed
}

// listMeta is the _meta of a tools/list result: the federation's
// warnings (agents whose tools are absent), when there are any.
func (s *Server) listMeta() mcp.Meta {
	if s.fed == nil {
		return nil
	}
	w := s.fed.Warnings()
	if len(w) == 0 {
		return nil
	}
	return mcp.Meta{"federation": map[string]any{"warnings": w}}
}
