package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/reqlog"
	"github.com/parsemcp/parsemcp/tools"
)

// The call pipeline: what a request passes, in order, from the transport
// to a tool's handler. Over HTTP the handler first makes the transport's
// checks (handler.ServeHTTP):
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
// Then every JSON-RPC request, over any transport, passes the steps of
// pipeline, the first outermost; each step's rule lives in its own file.

// pipeline is the ordered list of steps. Those before route run for every
// request (the SDK's receiving middleware); at route the SDK hands the
// request to its method: a tools/call to the tool's handler
// (toolHandler), where every tool call, local, the application's or a
// remote agent's, passes the steps after route and then the tool.
func (s *Server) pipeline(opts Options) []Step {
	return []Step{
		{"sendEncoded", sendEncoded},               // tool results travel encoded once
		{"traceRequests", s.traceRequests},         // the request's span
		{"requestIDs", s.requestIDs},               // request id and client address in the context
		{"trackCalls", s.trackCalls},               // the call belongs to its session and HTTP request
		{"checkParams", s.checkParams},             // parameters the specification does not allow
		{"resolveAgent", s.resolveAgent},           // the agent (stdio; over HTTP the handler's)
		{"auditUnknownTools", s.auditUnknownTools}, // a call of a tool that does not exist is audited
		{"filterLists", s.filterLists},             // tools/list and resources/list narrowed to the agent
		route,
		{"recover", recoverGuard(s.log)},                               // a panic becomes internal_error
		{"metrics", s.metrics.guard()},                                 // call counts and durations
		{"audit", auditGuard(opts.Audit, opts.CostPerMillionTokens)},   // one event per call, refusals below included
		{"rate", rateGuard(opts.RateLimit, s.log)},                     // the principal's rate limit
		{"mayCall", s.mayCallGuard()},                                  // agent.Agent.MayCall: tier, tool filter, gate, token scope and team
		{"args", argsGuard()},                                          // the arguments against the tool's input schema
		{"cap", capGuard(opts.MaxResponseBytes, opts.ResponseBudgets)}, // the response byte cap
		{"timeout", timeoutGuard(opts.Timeouts, timing{opts.Clock})},   // the tool's time limit, down to the database
	}
}

// Step is one stage of the pipeline: it may refuse, bound, observe or
// shape what passes it.
type Step struct {
	Name string
	Wrap func(next Handler) Handler
}

// Handler handles a request at one point of the pipeline. Before route
// its result is the request's mcp.Result; after it, the tool's data
// (shaped into a result by toolHandler).
type Handler func(ctx context.Context, r *Request) (any, error)

// Request is one JSON-RPC request travelling through the pipeline.
type Request struct {
	Method string
	// Params is the SDK's request: its parameters, session and extra.
	Params mcp.Request
	// Call is the tool call, set at route for tools/call.
	Call *Invocation
}

// Invocation is one tool call.
type Invocation struct {
	Tool  *tools.Tool
	Agent *agent.Agent
	Args  json.RawMessage
	// approve asks the caller's user to approve a destructive call.
	approve tools.ApproveFunc
	// session and conversation: where the call came from (callOrigin).
	session, conversation string
	// copies is how many times the result's JSON travels in the
	// response (Server.copies): the byte cap holds every copy.
	copies int
}

// route marks where the SDK routes a request to its method.
var route = Step{Name: "route"}

// chain wraps h in steps, the first outermost.
func chain(steps []Step, h Handler) Handler {
	for i := len(steps) - 1; i >= 0; i-- {
		h = steps[i].Wrap(h)
	}
	return h
}

// build splits the pipeline at route: the SDK's receiving middleware runs
// the steps before it (receive); the steps after it, ending in the tool,
// are the chain toolHandler runs for every tool call (call).
func (s *Server) build(steps []Step) (receive mcp.Middleware, call Handler) {
	at := slices.IndexFunc(steps, func(st Step) bool { return st.Name == route.Name })
	if at < 0 {
		panic("mcpserver: the pipeline has no route step")
	}
	before := steps[:at]
	receive = func(next mcp.MethodHandler) mcp.MethodHandler {
		h := chain(before, func(ctx context.Context, r *Request) (any, error) { return next(ctx, r.Method, r.Params) })
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := h(ctx, &Request{Method: method, Params: req})
			out, _ := res.(mcp.Result)
			return out, err
		}
	}
	return receive, chain(steps[at+1:], s.runTool)
}

// runTool is the end of the pipeline: the tool's handler, with the
// agent's scope of the store.
func (s *Server) runTool(ctx context.Context, r *Request) (any, error) {
	inv := r.Call
	ctx, span := tracer.Start(ctx, "tool "+inv.Tool.Name)
	defer span.End()
	catalog := func(category string) []*tools.Tool { return s.catalog(inv.Agent, category) }
	return inv.Tool.Handler(ctx, &tools.Call{Scope: agent.NewScope(inv.Agent, s.store), Args: inv.Args, Registry: s.tools, Config: s.config, Approve: inv.approve, Catalog: catalog})
}

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
		ctx, stop := s.startProgress(ctx, req)
		inv := &Invocation{Tool: t, Agent: a, Args: req.Params.Arguments, approve: s.approvals.hook(req, a), copies: s.copies(req.Session, t)}
		inv.session, inv.conversation = callOrigin(req, req.Params)
		ctx, span := startToolSpan(ctx, inv)
		data, err := s.callChain(ctx, &Request{Method: "tools/call", Params: req, Call: inv})
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
		if !s.structured(req.Session) {
			out = nil
		}
		res, err := successResult(ctx, data, out, s.resultContent, &s.outputs)
		if err != nil {
			id := reqlog.CorrelationID(ctx)
			s.log.ErrorContext(ctx, "tool result does not match its output schema", "tool", name, "agent_id", a.ID, "err", err)
			return errorResult(&tools.Error{Code: tools.CodeInternal, Message: "internal error (correlation id " + id + ")"}), nil
		}
		return res, nil
	}
}

func newCorrelationID() string { return reqlog.NewID() }

// lookupTool finds a tool by name: the registry's, else a remote one.
func (s *Server) lookupTool(name string) (t *tools.Tool, remote bool, ok bool) {
	if t, ok := s.tools.Get(name); ok {
		return t, false, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t = s.remoteTools[name]
	return t, t != nil, t != nil
}
