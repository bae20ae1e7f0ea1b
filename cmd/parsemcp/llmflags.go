//go:build llm

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/parsemcp/parsemcp/internal/flagconfig"
	"github.com/parsemcp/parsemcp/llm"
	"github.com/parsemcp/parsemcp/policy"
)

// EnvServerKey is the bearer key ask and chat send to a --server;
// EnvServer is --server's default.
const (
	EnvServerKey = "PARSEMCP_SERVER_KEY"
	EnvServer    = "PARSEMCP_SERVER"
)

// llmFlags are the flags of ask and chat: the model, the loop, and the
// MCP server the model's tools come from.
type llmFlags struct {
	cfg           llm.Config
	maxIterations int
	compactAt     int64
	prices        []string
	system        string
	stream        bool
	// The server: a running parsemcp over HTTP, a command over stdio, or
	// (neither) the store flags' server in this process.
	server        string
	serverKey     string
	serverCommand string
	serverLog     string // where --server-command's stderr goes
	// defaultServer is set when no server and no store was named: the
	// local `parsemcp serve` (PARSEMCP_ADDR or 127.0.0.1:8787) is used.
	defaultServer bool
	store         storeFlags
	storeNames    map[string]bool // the store flags' names
	// wrap, when set, wraps the transport of the session with a server in
	// this process or over stdio (console: its dispatch).
	wrap func(mcp.Transport) mcp.Transport
}

func (l *llmFlags) register(cmd *cobra.Command, stream bool, compactAt int64) {
	fl := cmd.Flags()
	l.cfg.Timeout = llm.DefaultTimeout
	fl.StringVar(&l.cfg.Provider, "provider", "", "LLM provider: openai (also any OpenAI-compatible server given by --base-url: llama.cpp, Ollama, vLLM, LM Studio), anthropic, or lmstudio/ollama/vllm/llamacpp (OpenAI-compatible at its usual local address); default anthropic for claude-* models, else openai; env "+llm.EnvProvider+" (or LLM_PROVIDER)")
	fl.StringVar(&l.cfg.Model, "model", "", "model name (default gpt-4o-mini for OpenAI, claude-haiku-4-5 for Anthropic); env "+llm.EnvModel+" (or LLM_MODEL)")
	fl.StringVar(&l.cfg.BaseURL, "base-url", "", "the API's base URL, e.g. http://localhost:11434/v1 for Ollama; env "+llm.EnvBaseURL+" (or LLM_BASE_URL)")
	fl.StringVar(&l.cfg.APIKey, "api-key", "", "the provider's API key (not needed by local servers); env "+llm.EnvAPIKey+" (or LLM_API_KEY), else OPENAI_API_KEY / ANTHROPIC_API_KEY; never logged")
	fl.Var(durationValue{&l.cfg.Timeout}, "model-timeout", "time limit of one model request (a duration, or seconds); env "+llm.EnvTimeout)
	fl.Int64Var(&l.cfg.MaxTokens, "max-tokens", 0, "output token limit of one model turn (default: Anthropic 4096, OpenAI the server's); env "+llm.EnvMaxTokens)
	fl.IntVar(&l.cfg.MaxRetries, "max-retries", llm.DefaultMaxRetries, "retries of a failed model request (connection errors, 408, 409, 429, 5xx; Retry-After is honoured); 0: none")
	fl.IntVar(&l.maxIterations, "max-iterations", llm.DefaultMaxIterations, "model turns allowed for one question before it stops with reason max_iterations; env "+llm.EnvMaxIterations)
	fl.Int64Var(&l.compactAt, "compact-at", compactAt, "compact the conversation into a summary before the next question once its context reaches this many tokens; 0: never; env "+llm.EnvCompactAt)
	fl.StringSliceVar(&l.prices, "price", nil, "model price in USD per million input/output tokens, MODEL=IN/OUT (repeatable; adds to or overrides the built-in table); env "+llm.EnvPrices)
	fl.StringVar(&l.system, "system", "", "system prompt (default: parsemcp's, plus the server's instructions)")
	fl.BoolVar(&l.stream, "stream", stream, "stream the model's text as it is written")
	fl.StringVar(&l.server, "server", "", "a running parsemcp server's MCP endpoint, e.g. http://127.0.0.1:8787/mcp; with --store or --demo the store is served in this process instead; with neither, the local `parsemcp serve` (at PARSEMCP_ADDR, default "+DefaultAddr+"); env "+EnvServer)
	fl.StringVar(&l.serverKey, "server-key", "", "bearer key for --server (with a policy, it selects the agent profile); env "+EnvServerKey)
	fl.StringVar(&l.serverCommand, "server-command", "", "start an MCP server and talk to it over stdio, e.g. \"parsemcp stdio --demo\" (split at spaces)")
	fl.StringVar(&l.serverLog, "server-log", "", "append --server-command's stderr (its log) to this file, or \"-\" for this command's stderr (default: kept out of the output, its last lines shown if it fails to start)")
	// The variables of these flags (applyEnv reads no others); the
	// reference guide's LLM_* names are weaker aliases. PARSEMCP_LLM_PRICES
	// adds to --price rather than standing in for it (pricing).
	for _, v := range []struct{ flag, env, guide string }{
		{"provider", llm.EnvProvider, "LLM_PROVIDER"}, {"model", llm.EnvModel, "LLM_MODEL"},
		{"base-url", llm.EnvBaseURL, "LLM_BASE_URL"}, {"api-key", llm.EnvAPIKey, "LLM_API_KEY"},
		{"model-timeout", llm.EnvTimeout, ""}, {"max-tokens", llm.EnvMaxTokens, ""},
		{"max-iterations", llm.EnvMaxIterations, ""}, {"compact-at", llm.EnvCompactAt, ""},
		{"server", EnvServer, ""}, {"server-key", EnvServerKey, ""},
	} {
		flagconfig.Env(fl, v.flag, v.env)
		if v.guide != "" {
			flagconfig.Alias(fl, v.flag, v.guide)
		}
	}
	before := map[string]bool{}
	fl.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	l.store.register(cmd)
	guidePermission(fl)
	l.storeNames = map[string]bool{}
	fl.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			l.storeNames[f.Name] = true
		}
	})
}

// durationValue is a duration flag that also takes a number of seconds
// (llm.ParseDuration).
type durationValue struct{ d *time.Duration }

func (v durationValue) Set(s string) error {
	d, err := llm.ParseDuration(s)
	if err != nil {
		return err
	}
	*v.d = d
	return nil
}
func (v durationValue) String() string { return v.d.String() }
func (v durationValue) Type() string   { return "duration" }

// resolve sets the flags from the environment and checks them.
func (l *llmFlags) resolve(cmd *cobra.Command) error {
	src, err := applyEnv(cmd)
	if err != nil {
		return err
	}
	if l.maxIterations < 1 {
		return fmt.Errorf("--max-iterations must be at least 1")
	}
	if l.cfg.MaxTokens < 0 || l.compactAt < 0 {
		return fmt.Errorf("--max-tokens and --compact-at take a number of tokens, not %d and %d", l.cfg.MaxTokens, l.compactAt)
	}
	if l.cfg.MaxRetries == 0 {
		l.cfg.MaxRetries = -1 // llm.Config: 0 is the default, negative none
	}
	if l.server != "" && l.serverCommand != "" {
		return fmt.Errorf("--server and --server-command: choose one")
	}
	if l.serverLog != "" && l.serverCommand == "" {
		return fmt.Errorf("--server-log is where --server-command's log goes; there is no --server-command")
	}
	// The store flags given on the command line; those the environment
	// sets configure an in-process server only when one is served.
	var local []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if l.storeNames[f.Name] && src[f.Name].Kind == flagconfig.FromFlag {
			local = append(local, "--"+f.Name)
		}
	})
	if l.server == "" && l.serverCommand == "" && len(local) == 0 && l.store.store == "" {
		addr := os.Getenv("PARSEMCP_ADDR")
		if addr == "" {
			addr = DefaultAddr
		}
		l.server = "http://" + addr + "/mcp"
		l.defaultServer = true
	}
	if l.serverKey != "" && l.server == "" {
		return fmt.Errorf("--server-key needs --server")
	}
	if l.server != "" || l.serverCommand != "" {
		if len(local) > 0 {
			return fmt.Errorf("%s configure the server in this process; with --server or --server-command, the server's own configuration applies", strings.Join(local, ", "))
		}
	}
	return nil
}

// pricing is the built-in table with --price and PARSEMCP_LLM_PRICES.
func (l *llmFlags) pricing() (llm.Pricing, error) {
	p := llm.DefaultPricing
	for _, spec := range append([]string{os.Getenv(llm.EnvPrices)}, l.prices...) {
		extra, err := llm.ParsePrices(spec)
		if err != nil {
			return nil, fmt.Errorf("--price: %w", err)
		}
		p = p.With(extra)
	}
	return p, nil
}

// session is the MCP side of ask and chat.
type session struct {
	cs      *mcp.ClientSession
	changes *llm.ToolChanges // the server's notifications/tools/list_changed
	where   string           // for the banner: which server, which agent
	close   func()
}

// connect opens the MCP session the model's tools go through; the model
// is offered the server's current tools at each turn (the session follows
// notifications/tools/list_changed). approve, when not nil, answers the
// server's requests for a person's approval of destructive changes;
// toolsChanged, when not nil, hears that the tools changed.
func (l *llmFlags) connect(ctx context.Context, approve func(context.Context, string) (bool, error), toolsChanged func()) (*session, error) {
	opts := &mcp.ClientOptions{}
	if approve != nil {
		opts.ElicitationHandler = func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			yes, err := approve(ctx, req.Params.Message)
			if err != nil {
				return nil, err
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": yes}}, nil
		}
	}
	if toolsChanged != nil {
		opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged() }
	}
	opts, changes := llm.FollowToolChanges(opts)
	s, err := l.open(ctx, opts)
	if err != nil {
		return nil, err
	}
	s.changes = changes
	return s, nil
}

// open connects to the server the flags name with opts.
func (l *llmFlags) open(ctx context.Context, opts *mcp.ClientOptions) (*session, error) {
	switch {
	case l.server != "":
		cs, err := llm.ConnectHTTP(ctx, l.server, l.serverKey, opts)
		if err != nil && l.defaultServer {
			return nil, fmt.Errorf("%w\nno server named: start one with `parsemcp serve --demo` (it listens at %s), pass --server URL, or serve a store in this process with --store or --demo", err, l.server)
		}
		if err != nil {
			return nil, err
		}
		where := l.server
		if l.serverKey != "" {
			where += " (with a bearer key)"
		}
		return &session{cs: cs, where: where, close: func() { cs.Close() }}, nil
	case l.serverCommand != "":
		return l.startServerCommand(ctx, opts)
	}
	level := slog.LevelWarn
	if l.store.verbose {
		level = slog.LevelDebug
	}
	l.store.inProcess = true
	srv, closeAll, err := l.store.newServer(ctx, logger(level))
	if err != nil {
		return nil, err
	}
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st); err != nil {
		closeAll()
		return nil, err
	}
	cs, err := l.dial(ctx, ct, opts)
	if err != nil {
		closeAll()
		return nil, err
	}
	return &session{cs: cs, where: "in-process, " + l.store.describe(), close: func() { cs.Close(); closeAll() }}, nil
}

// dial opens the client session over t (wrapped by l.wrap, when set).
func (l *llmFlags) dial(ctx context.Context, t mcp.Transport, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	if l.wrap != nil {
		t = l.wrap(t)
	}
	return llm.Connect(ctx, t, opts)
}

// describe names the store and the agent of an in-process server.
func (f *storeFlags) describe() string {
	where := f.store
	if where == "" && f.demo {
		where = "demo data"
	}
	switch {
	case f.pol != nil:
		name := f.agentName
		if name == "" {
			name = f.pol.DefaultAgent
		}
		if p := f.pol.Profile(name); p != nil && p.Identity.Kind == policy.IdentityMaster {
			return fmt.Sprintf("%s, agent %s with the master key (policy %s)", where, name, f.policy)
		}
		return fmt.Sprintf("%s, agent %s (policy %s)", where, name, f.policy)
	case f.anonymous:
		return where + ", anonymous, " + f.permission
	case f.asUser != "":
		return fmt.Sprintf("%s, user %s, %s", where, f.asUser, f.permission)
	case len(f.asRoles) > 0:
		return fmt.Sprintf("%s, roles %s, %s", where, strings.Join(f.asRoles, ","), f.permission)
	}
	return where + ", master key, " + f.permission
}

// newClient builds the loop over the session.
func (l *llmFlags) newClient(s *session, onEvent func(llm.Event)) (*llm.Client, error) {
	p, err := llm.NewProvider(l.cfg)
	if err != nil {
		return nil, err
	}
	pricing, err := l.pricing()
	if err != nil {
		return nil, err
	}
	system := l.system
	if system == "" {
		system = llm.DefaultSystem
		if ir := s.cs.InitializeResult(); ir != nil && ir.Instructions != "" {
			system += "\n\nThe server's instructions: " + ir.Instructions
		}
	}
	return llm.New(llm.Options{Provider: p, Tools: llm.MCPTools{Session: s.cs, Changes: s.changes}, System: system, MaxIterations: l.maxIterations,
		Pricing: pricing, CompactAt: l.compactAt, Stream: l.stream, OnEvent: onEvent})
}

// callLine is the line a tool call shows: its name, arguments, duration
// and error code.
func callLine(c *llm.CallRecord) string {
	args := string(c.Arguments)
	if len(args) > 120 {
		args = args[:117] + "..."
	}
	line := fmt.Sprintf("  -> %s %s (%s)", c.Name, args, c.Duration.Round(100*time.Microsecond))
	if c.ErrorCode != "" {
		line += " error: " + c.ErrorCode
	}
	return line
}

// toolsChangedLine is the line an llm.EventToolsChanged shows.
func toolsChangedLine(e llm.Event) string {
	var names []string
	for _, n := range e.Added {
		names = append(names, "+"+n)
	}
	for _, n := range e.Removed {
		names = append(names, "-"+n)
	}
	return fmt.Sprintf("  (the server's tools changed: %s; %d tools)", preview(strings.Join(names, ", "), 300), e.Tools)
}

// preview shortens s to n bytes on one line.
func preview(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// lineWriter tracks whether the cursor is at the start of a line, so a
// tool-call line never lands in the middle of streamed text.
type lineWriter struct {
	w   io.Writer
	mid bool
}

func (w *lineWriter) text(s string) {
	if s == "" {
		return
	}
	io.WriteString(w.w, s)
	w.mid = !strings.HasSuffix(s, "\n")
}

func (w *lineWriter) line(s string) {
	if w.mid {
		io.WriteString(w.w, "\n")
	}
	io.WriteString(w.w, s+"\n")
	w.mid = false
}

func (w *lineWriter) end() {
	if w.mid {
		io.WriteString(w.w, "\n")
		w.mid = false
	}
}
