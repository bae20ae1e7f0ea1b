package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/reqlog"
	"github.com/parsemcp/parsemcp/tools"
)

// The call pipeline: what a request passes, in order, from the transport
// to a tool's handler. The three stages are declared here; each step's
// rule lives in its own file.
//
// Over HTTP (handler.ServeHTTP, transport concerns only):
//
//	request checks: method, Origin, required header, Content-Type
//	Host on loopback
//	MCP-Protocol-Version
//	body: size, read deadline, JSON nesting, envelope (2026-07-28 requests lifted)
//	Mcp-Session-Id shape
//	the agent (401), resolved once per HTTP request
//	the session's owner (404)
//	caps: listening streams, in-flight calls, streams (429, 503); the session share
//
// Every JSON-RPC request, over any transport (receiving, outermost first):
//
//	sendEncoded        tool results travel encoded once
//	traceRequests      the request's span
//	requestIDs         request id and client address in the context
//	trackCalls         the call belongs to its session and HTTP request
//	checkParams        parameters the specification does not allow
//	resolveAgent       the agent (stdio; over HTTP the handler's)
//	auditUnknownTools  a call of a tool that does not exist is audited
//	filterLists        tools/list and resources/list narrowed to the agent
//
// Every tool call, local, the application's or a remote agent's
// (toolGuards, outermost first), then the tool's handler with an
// agent.Scope:
//
//	recover   a panic becomes internal_error
//	metrics   call counts and durations
//	audit     one event per call, refusals below included
//	rate      the principal's rate limit
//	mayCall   agent.Agent.MayCall: tier, tool filter, gate, token scope and team
//	args      the arguments against the tool's input schema
//	cap       the response byte cap
//	timeout   the tool's time limit, down to the database

// receiving is the receiving middleware of every JSON-RPC request, in
// order (the SDK runs the first outermost).
func (s *Server) receiving() []mcp.Middleware {
	return []mcp.Middleware{sendEncoded, s.traceRequests, s.requestIDs, s.trackCalls, s.checkParams, s.resolveAgent, s.auditUnknownTools, s.filterLists}
}

// toolGuards is the guard chain of every tool call, the first outermost.
// Audit wraps every guard after it, so each refusal below it leaves an
// event.
func (s *Server) toolGuards(opts Options) []Guard {
	return []Guard{recoverGuard(s.log), s.metrics.guard(), auditGuard(opts.Audit, opts.CostPerMillionTokens), rateGuard(opts.RateLimit, s.log), s.mayCallGuard(), argsGuard(), capGuard(opts.MaxResponseBytes, opts.ResponseBudgets), timeoutGuard(opts.Timeouts, timing{opts.Clock})}
}

// Invocation is one tool call travelling through the guard chain.
type Invocation struct {
	Tool  *tools.Tool
	Agent *agent.Agent
	Args  json.RawMessage
}

// ToolFunc runs an invocation.
type ToolFunc func(ctx context.Context, inv *Invocation) (any, error)

// Guard wraps a ToolFunc: it may refuse, bound, observe or shape the call.
// Guards run in order, the first outermost.
type Guard func(next ToolFunc) ToolFunc

// toolHandler is the SDK handler of a registered tool: it runs the guard
// chain around the tool and shapes the result.
func (s *Server) toolHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t, remote, ok := s.lookupTool(name)
		a := agentFrom(ctx)
		if !ok || a == nil {
			return errorResult(&tools.Error{Code: tools.CodeNotFound, Message: fmt.Sprintf("unknown tool %q", name)}), nil
		}
		if req.Session != nil {
			ctx = context.WithValue(ctx, callSessionKey{}, req.Session.ID())
		}
		ctx = reqlog.WithCorrelationID(ctx, newCorrelationID())
		approve := s.approvals.hook(req, a)
		run := ToolFunc(func(ctx context.Context, inv *Invocation) (any, error) {
			ctx, span := tracer.Start(ctx, "tool "+inv.Tool.Name)
			defer span.End()
			catalog := func(category string) []*tools.Tool { return s.catalog(inv.Agent, category) }
			return inv.Tool.Handler(ctx, &tools.Call{Scope: agent.NewScope(inv.Agent, s.store), Args: inv.Args, Registry: s.tools, Config: s.config, Approve: approve, Catalog: catalog})
		})
		for i := len(s.guards) - 1; i >= 0; i-- {
			run = s.guards[i](run)
		}
		ctx, stop := s.startProgress(ctx, req)
		inv := &Invocation{Tool: t, Agent: a, Args: req.Params.Arguments}
		ctx, span := startToolSpan(ctx, inv)
		data, err := run(ctx, inv)
		code := ""
		if err != nil {
			code = tools.AsError(err).Code
		}
		endToolSpan(span, data, code)
		stop()
		var ir *inputRequired
		var rf *remoteFailure
		switch {
		case errors.As(err, &rf):
			return remoteResult(rf.result)
		case err == nil && remote:
			raw, _ := data.(json.RawMessage)
			return remoteResult(raw)
		}
		if errors.As(err, &ir) {
			return &mcp.CallToolResult{InputRequests: ir.requests, RequestState: ir.state}, nil
		}
		if err != nil {
			te := tools.AsError(err)
			if te.Code == tools.CodeInternal {
				id := reqlog.CorrelationID(ctx)
				s.log.ErrorContext(ctx, "tool failed", "tool", name, "agent_id", a.ID, "err", te.Internal)
				te = &tools.Error{Code: tools.CodeInternal, Message: "internal error (correlation id " + id + ")"}
			}
			return errorResult(te), nil
		}
		out := t.Output
		if legacySession(req.Session) {
			out = nil
		}
		res, err := successResult(ctx, data, out, &s.outputs)
		if err != nil {
			id := reqlog.CorrelationID(ctx)
			s.log.ErrorContext(ctx, "tool result does not match its output schema", "tool", name, "agent_id", a.ID, "err", err)
			return errorResult(&tools.Error{Code: tools.CodeInternal, Message: "internal error (correlation id " + id + ")"}), nil
		}
		return res, nil
	}
}

func newCorrelationID() string { return reqlog.NewID() }
