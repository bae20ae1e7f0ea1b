// Package mcpserver wires parsemcp into the MCP Go SDK: one shared
// *mcp.Server whose requests resolve an agent per request, pass the guard
// chain, and reach tools, resources and prompts through the agent's governed
// scope. SDK types stay inside this package.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/internal/reqlog"
	"github.com/parsemcp/parsemcp/prompts"
	"github.com/parsemcp/parsemcp/ratelimit"
	"github.com/parsemcp/parsemcp/resources"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

// Version is the server version reported to clients (set at build time).
var Version = "0.1.0-dev"

// CodeUnauthorized is the JSON-RPC error code of a request whose agent
// cannot be authenticated.
const CodeUnauthorized = -32001

// RequestInfo is what an agent factory sees of a request.
type RequestInfo struct {
	// Header holds the HTTP request headers; nil over stdio.
	Header http.Header
	// Request is the HTTP request (its context, URL, TLS state, remote
	// address); nil over stdio. The HTTP handler resolves the agent once
	// per HTTP request, before the SDK sees it.
	Request *http.Request
}

// AgentFactory builds the agent of one request. Returning an error wrapping
// agent.ErrUnauthorized refuses the request as unauthorized.
type AgentFactory func(ctx context.Context, r RequestInfo) (*agent.Agent, error)

// Options configures a Server.
type Options struct {
	Store  store.Store
	Agents AgentFactory
	// Tools and Prompts default to registries holding the built-ins.
	Tools   *tools.Registry
	Prompts *prompts.Registry
	Logger  *slog.Logger
	// ToolConfig tunes the built-in tools (default tools.DefaultConfig).
	ToolConfig *tools.Config
	// MaxResponseBytes is the response budget: the largest serialized
	// tool result, in bytes (default DefaultMaxResponseBytes, about 4,000
	// tokens). Paged results are cut to fit; others over it are refused.
	MaxResponseBytes int
	// ResponseBudgets overrides MaxResponseBytes per tool name (bytes).
	ResponseBudgets map[string]int
	// ResultContent says how results of tools with an output schema
	// travel to sessions at 2025-06-18 and later: ResultBoth (the zero
	// value: text block and structuredContent, the budget holding both
	// copies), ResultText or ResultStructured. New refuses any other
	// value.
	ResultContent ResultContent
	// Timeouts overrides tools' time limits by tool name.
	Timeouts map[string]time.Duration
	// RateLimit bounds tool calls per principal (agent.Agent.Key); nil: none.
	RateLimit ratelimit.Limiter
	// Audit receives one event per tool call (nil: none).
	Audit audit.Sink
	// CostPerMillionTokens prices est_input_tokens in audit events (USD).
	CostPerMillionTokens float64
	// HeartbeatInterval is how often a tool call carrying a progress token
	// is reported alive until the tool reports its own progress (default
	// 2 s).
	HeartbeatInterval time.Duration
	// ApprovalTimeout bounds the wait for a person to approve a
	// destructive change (default 300 s).
	ApprovalTimeout time.Duration
	// Clock measures the tools' time limits, the approval timeout, the
	// age of a signed approval state and the age of a live notification's
	// send (LiveOptions.SendTimeout) (nil: the real clock; tests pass a
	// fake one and advance it).
	Clock clockwork.Clock
	// DisableApproval runs destructive changes (delete_object,
	// delete_class, destructive methods) without asking a person. Meant
	// for unattended pipelines whose operator approved them in advance.
	DisableApproval bool
	// ApprovalSecret signs the state of approvals asked of 2026-07-28
	// clients, which answer in a new request that may reach another
	// instance: instances behind one load balancer share it (at least 16
	// bytes; default: random per process).
	ApprovalSecret []byte
	// Live configures resource subscriptions fed by the store's change
	// feed (nil: defaults, this process only).
	Live *LiveOptions
	// Federation, when set, merges remote agents' tools into tools/list
	// and proxies their calls (docs/FEDERATION.md).
	Federation *federation.Platform
}

// Server is a parsemcp MCP server. One Server serves any number of
// sessions over any transports.
type Server struct {
	mcp     *mcp.Server
	store   store.Store
	agents  AgentFactory
	tools   *tools.Registry
	prompts *prompts.Registry
	log     *slog.Logger
	// callChain runs a tool call through the pipeline's steps after route.
	callChain Handler
	// operators are the sessions of CallTool (*mcp.ServerSession): the
	// operator at the shell, whose agent may call the operator-only tools.
	operators sync.Map
	config    *tools.Config
	metrics   *Metrics

	approvals *approvals
	heartbeat time.Duration
	live      *live
	limiter   ratelimit.Limiter // opts.RateLimit, for /health
	audit     audit.Sink        // opts.Audit, for calls of unknown tools
	auditCost float64
	healthLog healthLog

	fed         *federation.Platform
	remoteTools map[string]*tools.Tool // guarded by mu
	remoteSigs  map[string]string

	// calls are the requests running, by session.
	calls *calls
	// outputs checks results against their tools' output schemas.
	outputs outputChecks
	// resultContent is Options.ResultContent, "" read as ResultBoth.
	resultContent ResultContent

	closeOnce sync.Once
	closeErr  error
	// draining ends when Shutdown starts: listening streams end with it
	// (shutdown.go).
	draining     context.Context
	stopDraining context.CancelFunc
	listening    atomic.Int64

	mu          sync.Mutex
	registered  map[string]bool // tool names added to the SDK server
	regPrompts  map[string]bool
	unsubscribe []func()
}

// New builds a Server.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("mcpserver: Options.Store is required")
	}
	if opts.Agents == nil {
		return nil, errors.New("mcpserver: Options.Agents is required")
	}
	if opts.Tools == nil {
		opts.Tools = tools.NewRegistry()
	}
	if opts.Prompts == nil {
		opts.Prompts = prompts.NewRegistry()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.ToolConfig == nil {
		cfg := tools.DefaultConfig
		opts.ToolConfig = &cfg
	}
	s := &Server{
		store: opts.Store, agents: opts.Agents, tools: opts.Tools, prompts: opts.Prompts, log: opts.Logger,
		registered: map[string]bool{}, regPrompts: map[string]bool{}, config: opts.ToolConfig,
		calls: newCalls(), fed: opts.Federation, limiter: opts.RateLimit, audit: opts.Audit, auditCost: opts.CostPerMillionTokens,
	}
	s.draining, s.stopDraining = context.WithCancel(context.Background())
	var err error
	if s.approvals, err = newApprovals(opts); err != nil {
		return nil, err
	}
	s.heartbeat = opts.HeartbeatInterval
	if s.heartbeat <= 0 {
		s.heartbeat = DefaultHeartbeatInterval
	}
	if opts.MaxResponseBytes <= 0 {
		opts.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if s.resultContent, err = ParseResultContent(string(opts.ResultContent)); err != nil {
		return nil, fmt.Errorf("mcpserver: Options.ResultContent: %w", err)
	}
	s.metrics = newMetrics(liveCounts{
		sessions: func() float64 {
			n := 0
			for range s.mcp.Sessions() {
				n++
			}
			return float64(n)
		},
		running:   func() float64 { return float64(s.calls.count()) },
		listening: func() float64 { return float64(s.listening.Load()) },
	})
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "parsemcp", Title: "Parse data over MCP", Version: Version}, &mcp.ServerOptions{
		Instructions: "This server exposes a Parse application's data. Start with get_all_schemas (or the parse_conventions prompt), size classes with count_objects, then query_class with a where-constraint. Results respect the caller's access rights.",
		Logger:       sdkLogger(opts.Logger),
		Capabilities: &mcp.ServerCapabilities{
			Logging:     &mcp.LoggingCapabilities{},
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{Subscribe: true},
			Completions: &mcp.CompletionCapabilities{},
		},
		CompletionHandler: s.complete,
		SetCacheable:      setCacheable,
		SubscribeHandler: func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return s.live.subscribe(ctx, req)
		},
		UnsubscribeHandler: func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return s.live.unsubscribe(ctx, req)
		},
	})
	s.live = newLive(s, opts.Live, timing{opts.Clock})
	receive, call := s.build(s.pipeline(opts))
	s.callChain = call
	s.mcp.AddReceivingMiddleware(receive)
	s.mcp.AddSendingMiddleware(s.notifyCarrier)
	s.syncTools()
	s.syncPrompts()
	for _, d := range resources.Docs() {
		s.mcp.AddResource(&mcp.Resource{URI: d.URI, Name: d.Name, Description: d.Description, MIMEType: d.MIMEType}, s.readResource)
	}
	for _, t := range resources.Templates() {
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name, Description: t.Description, MIMEType: resources.MIMEType}, s.readResource)
	}
	s.unsubscribe = append(s.unsubscribe, s.tools.OnChange(s.syncTools), s.prompts.OnChange(s.syncPrompts))
	if s.fed != nil {
		s.syncRemote()
		s.unsubscribe = append(s.unsubscribe, s.fed.OnChange(s.syncRemote))
	}
	return s, nil
}

// Metrics returns the server's Prometheus metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// MCP returns the SDK server (for transports).
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Tools returns the tool registry.
func (s *Server) Tools() *tools.Registry { return s.tools }

// syncTools mirrors the registry into the SDK server; the SDK sends
// notifications/tools/list_changed to every session when it changes.
func (s *Server) syncTools() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tools.List() {
		ann := &mcp.ToolAnnotations{ReadOnlyHint: t.ReadOnly, OpenWorldHint: new(bool)}
		if !t.ReadOnly {
			destructive := t.Destructive
			ann.DestructiveHint = &destructive
			ann.IdempotentHint = t.Idempotent
		}
		mt := &mcp.Tool{
			Name:        t.Name,
			Title:       t.Title,
			Description: t.Description,
			InputSchema: encodedSchema(t.Input),
			Meta:        mcp.Meta{"category": t.Category},
			Annotations: ann,
		}
		if t.Output != nil {
			mt.OutputSchema = encodedSchema(t.Output)
		}
		s.mcp.AddTool(mt, s.toolHandler(t.Name))
		s.registered[t.Name] = true
	}
}

// encodedSchema is a tool's input schema encoded once, when the tool is
// registered. The SDK encodes the schema for every tools/list and, at
// protocol 2026-07-28, re-reads it on every tools/call (its x-mcp-header
// check); as JSON text that is a copy, not a walk of the schema's structs.
func encodedSchema(sch *jsonschema.Schema) any {
	b, err := json.Marshal(sch)
	if err != nil {
		return sch // the SDK reports it as it would have
	}
	return json.RawMessage(b)
}

func (s *Server) syncPrompts() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.prompts.List() {
		args := make([]*mcp.PromptArgument, 0, len(p.Args))
		for _, a := range p.Args {
			args = append(args, &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
		}
		s.mcp.AddPrompt(&mcp.Prompt{Name: p.Name, Description: p.Description, Arguments: args}, s.promptHandler(p.Name))
		s.regPrompts[p.Name] = true
	}
}

type agentKey struct{}

// agentFrom returns the agent resolved for the request.
func agentFrom(ctx context.Context) *agent.Agent {
	a, _ := ctx.Value(agentKey{}).(*agent.Agent)
	return a
}

// needsAgent lists the methods that act for an agent.
func needsAgent(method string) bool {
	switch method {
	case "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list",
		"prompts/list", "prompts/get", "completion/complete", "resources/subscribe", "resources/unsubscribe",
		"subscriptions/listen":
		return true
	}
	return false
}

// resolveAgent builds the request's agent through the factory.
func (s *Server) resolveAgent(next Handler) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		if !needsAgent(r.Method) {
			return next(ctx, r)
		}
		var a *agent.Agent
		var err error
		if res, ok := resolvedFrom(r.Params.GetExtra()); ok { // resolved by the HTTP handler
			a, err = res.agent, res.err
		} else {
			var info RequestInfo
			if ex := r.Params.GetExtra(); ex != nil {
				info.Header = ex.Header
			}
			a, err = s.agents(ctx, info)
		}
		if err != nil {
			if errors.Is(err, agent.ErrUnauthorized) {
				return nil, &jsonrpc.Error{Code: CodeUnauthorized, Message: "Unauthorized"}
			}
			s.log.ErrorContext(ctx, "agent factory failed", "method", r.Method, "err", err)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error"}
		}
		if a == nil {
			return nil, &jsonrpc.Error{Code: CodeUnauthorized, Message: "Unauthorized"}
		}
		if sess := r.Params.GetSession(); sess != nil {
			if _, op := s.operators.Load(sess); op {
				a = a.WithIntrospection()
			}
		}
		return next(context.WithValue(ctx, agentKey{}, a), r)
	}
}

// auditUnknownTools records the call of a tool that does not exist (the
// SDK refuses it before any tool handler, so the guard chain, and its
// audit guard, never see it): probing for tools leaves a trail like every
// other refusal.
func (s *Server) auditUnknownTools(next Handler) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		p, ok := r.Params.GetParams().(*mcp.CallToolParamsRaw)
		if r.Method != "tools/call" || s.audit == nil || !ok || p == nil {
			return next(ctx, r)
		}
		if _, _, known := s.lookupTool(p.Name); known {
			return next(ctx, r)
		}
		start := time.Now()
		res, err := next(ctx, r)
		inv := &Invocation{Tool: &tools.Tool{Name: p.Name}, Agent: agentFrom(ctx), Args: p.Arguments}
		inv.session, inv.conversation = callOrigin(r.Params, p)
		recordCall(reqlog.WithCorrelationID(ctx, newCorrelationID()), s.audit, s.auditCost, inv, start, nil,
			&tools.Error{Code: tools.CodeNotFound, Message: fmt.Sprintf("unknown tool %q", p.Name)})
		return res, err
	}
}

// filterLists narrows tools/list to what the agent may call
// (agent.Agent.MayCall decides; and to the optional category) and builds
// resources/list from the classes it may see.
func (s *Server) filterLists(next Handler) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		switch r.Method {
		case "tools/list":
			res, err := next(ctx, r)
			if err != nil {
				return res, err
			}
			lr, ok := res.(*mcp.ListToolsResult)
			if !ok {
				return res, nil
			}
			category := ""
			if p, ok := r.Params.GetParams().(*mcp.ListToolsParams); ok && p != nil {
				category, _ = p.Meta["category"].(string)
			}
			allowed := s.listable(agentFrom(ctx), category)
			structured := s.structured(r.Params.GetSession())
			kept := make([]*mcp.Tool, 0, len(lr.Tools))
			for _, t := range lr.Tools {
				if !allowed[t.Name] {
					continue
				}
				if !structured && t.OutputSchema != nil { // its results carry no structuredContent
					c := *t
					c.OutputSchema = nil
					t = &c
				}
				kept = append(kept, t)
			}
			out := *lr
			out.Tools = kept
			if m := s.listMeta(); m != nil {
				out.Meta = m
			}
			return &out, nil
		case "resources/list":
			list, err := resources.List(ctx, s.scope(ctx))
			if err != nil {
				return nil, s.internal(ctx, "resources/list", err)
			}
			res := &mcp.ListResourcesResult{Resources: make([]*mcp.Resource, 0, len(list))}
			setCacheable(ctx, r.Params, &res.Cacheable) // built here, not by the SDK
			for _, r := range list {
				res.Resources = append(res.Resources, &mcp.Resource{URI: r.URI, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType})
			}
			return res, nil
		}
		return next(ctx, r)
	}
}

func (s *Server) scope(ctx context.Context) *agent.Scope {
	return agent.NewScope(agentFrom(ctx), s.store)
}

// internal logs err with a correlation id and returns a sanitized error.
func (s *Server) internal(ctx context.Context, what string, err error) error {
	id := newCorrelationID()
	s.log.ErrorContext(ctx, "internal error", "where", what, "correlation_id", id, "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error (correlation id " + id + ")"}
}

func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

func (s *Server) readResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	text, err := resources.Read(ctx, s.scope(ctx), req.Params.URI)
	if err != nil {
		var ce *agent.ClassError
		switch {
		case errors.Is(err, resources.ErrBadURI):
			return nil, invalidParams("%v", err)
		case errors.As(err, &ce):
			return nil, invalidParams("%v", err)
		}
		if te := tools.AsError(err); te.Code != tools.CodeInternal {
			return nil, invalidParams("%s", te.Message)
		}
		return nil, s.internal(ctx, "resources/read", err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: resources.MIMETypeOf(req.Params.URI), Text: text}}}, nil
}

func (s *Server) promptHandler(name string) mcp.PromptHandler {
	return func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		p, ok := s.prompts.Get(name)
		if !ok {
			return nil, invalidParams("unknown prompt %q", name)
		}
		args := req.Params.Arguments
		if args == nil {
			args = map[string]string{}
		}
		r, err := p.Render(ctx, s.scope(ctx), args)
		if err != nil {
			var ae *prompts.ArgError
			if errors.As(err, &ae) {
				return nil, invalidParams("%v", err)
			}
			return nil, s.internal(ctx, "prompts/get", err)
		}
		return &mcp.GetPromptResult{
			Description: r.Description,
			Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: r.Text}}},
		}, nil
	}
}

// classArgs are the prompt arguments that name a class.
var classArgs = map[string]bool{"class_name": true, "parent_class": true, "child_class": true, "className": true}

func (s *Server) complete(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	empty := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	p := req.Params
	if p == nil || p.Ref == nil || !classArgs[p.Argument.Name] {
		return empty, nil
	}
	if p.Ref.Type == "ref/resource" && !resources.IsTemplate(p.Ref.URI) {
		return empty, nil
	}
	names, err := resources.Complete(ctx, s.scope(ctx), p.Argument.Value)
	if err != nil {
		return nil, s.internal(ctx, "completion/complete", err)
	}
	const maxValues = 100
	total := len(names)
	if len(names) > maxValues {
		names = names[:maxValues]
	}
	if names == nil {
		names = []string{}
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: names, Total: total, HasMore: total > len(names)}}, nil
}

// setCacheable marks the results whose content depends on the agent
// (tools/list narrowed to its tier and filters, resources/list of the
// classes it sees, resources/read of counts and rows under its ACL and
// tenant) private: a shared cache must not hand one agent's answer to
// another. Templates, prompts and server/discover are the same for every
// agent and stay public.
func setCacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch req.(type) {
	case *mcp.ListToolsRequest, *mcp.ListResourcesRequest, *mcp.ReadResourceRequest:
		c.CacheScope = "private"
	}
}
