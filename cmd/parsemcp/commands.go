package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/flagconfig"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/ratelimit"
	"github.com/parsemcp/parsemcp/tools"
)

// DefaultAddr is where serve listens by default: loopback only.
const DefaultAddr = "127.0.0.1:8787"

func newServe() *cobra.Command {
	var f storeFlags
	var addr string
	var httpOpts mcpserver.HTTPOptions
	var serverOpts mcpserver.ServerOptions
	var apiKey, preAuth string
	var trusted []string
	var grace time.Duration
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over Streamable HTTP (endpoint /mcp, plus /health and /tools)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.policy != "" && apiKey != "" {
				return fmt.Errorf("--api-key and --policy: with a policy, the agent profiles' keys authenticate requests")
			}
			if f.fed.tokens != "" && apiKey != "" {
				return fmt.Errorf("--api-key and --tokens: with tokens, personal access tokens authenticate requests")
			}
			if err := mcpserver.CheckBind(addr, apiKey); err != nil && f.policy == "" && f.fed.tokens == "" {
				return fmt.Errorf("%s: %w", addr, err)
			}
			proxies, err := mcpserver.ParseTrustedProxies(trusted)
			if err != nil {
				return fmt.Errorf("--trusted-proxies: %w", err)
			}
			log, err := f.logger()
			if err != nil {
				return err
			}
			srv, closeAll, err := f.newServer(cmd.Context(), log)
			if err != nil {
				return err
			}
			defer closeAll()
			if err := mcpserver.CheckPoolShare(httpOpts.MaxInFlight, f.poolSize); err != nil {
				return fmt.Errorf("--max-inflight: %w", err)
			}
			if err := mcpserver.CheckListenerShare(httpOpts.MaxListenersPerPrincipal, httpOpts.MaxListeners); err != nil {
				return fmt.Errorf("--max-listeners-per-principal: %w", err)
			}
			if err := mcpserver.CheckBind(addr, ""); err != nil && f.unauthenticated() && f.fed.tokens == "" {
				return fmt.Errorf("%s: the policy serves requests without a bearer token (default_agent or --agent); listen on loopback only", addr)
			}
			if f.oauth.enabled() {
				httpOpts.OAuth = &f.oauth.cfg
			}
			var h http.Handler = srv.Mux(httpOpts)
			if apiKey != "" {
				h = mcpserver.RequireAPIKey(apiKey, h)
			}
			if n, window, err := parseRate(preAuth); err != nil {
				return fmt.Errorf("--preauth-limit: %w", err)
			} else if n > 0 {
				l, err := ratelimit.NewLocal(n, window)
				if err != nil {
					return fmt.Errorf("--preauth-limit: %w", err)
				}
				h = mcpserver.PreAuthLimit(l, h)
			}
			h = proxies.Handler(h) // first: the client address the rest uses
			return listenAndServe(cmd.Context(), log, addr, mcpserver.NewHTTPServer(h, serverOpts), srv, grace)
		},
	}
	f.register(cmd)
	f.registerHeartbeat(cmd.Flags())
	f.registerResultContent(cmd.Flags())
	f.fed.registerTokens(cmd.Flags())
	f.oauth = &oauthFlags{}
	f.oauth.register(cmd.Flags())
	cmd.Flags().StringVar(&addr, "addr", DefaultAddr, "listen address HOST:PORT (port 0 picks a free port); env PARSEMCP_ADDR")
	cmd.Flags().StringVar(&apiKey, "api-key", "", "require this key (X-MCP-API-Key header or bearer token) on /mcp and /tools; required to listen beyond loopback; env PARSEMCP_API_KEY (or MCP_API_KEY)")
	flagconfig.Alias(cmd.Flags(), "api-key", "MCP_API_KEY")
	cmd.Flags().StringVar(&preAuth, "preauth-limit", "600/m", "HTTP requests per client address, checked before authentication (429 with Retry-After); 0 disables")
	cmd.Flags().StringSliceVar(&trusted, "trusted-proxies", nil, "load balancers (CIDRs or addresses, comma-separated) whose Forwarded or X-Forwarded-For header names the client: the address --preauth-limit, audit events and logs use; default none (the connection's peer)")
	cmd.Flags().StringSliceVar(&httpOpts.AllowedOrigins, "allowed-origin", nil, "accept browser requests only from these Origin hosts (\".example.com\" for a domain and its subdomains); requests without Origin pass")
	cmd.Flags().StringVar(&httpOpts.RequireHeader, "require-header", "", "refuse requests without this header (e.g. X-MCP-Client): a CSRF guard")
	cmd.Flags().Int64Var(&httpOpts.MaxBodyBytes, "max-body-bytes", mcpserver.DefaultMaxBodyBytes, "largest accepted request body")
	cmd.Flags().DurationVar(&httpOpts.SessionTimeout, "session-timeout", mcpserver.DefaultSessionTimeout, "close sessions idle for this long (no request in flight, no listening stream); calls still running in them are cancelled")
	cmd.Flags().DurationVar(&httpOpts.StreamlessSessionTimeout, "streamless-session-timeout", mcpserver.DefaultStreamlessSessionTimeout, "--session-timeout for sessions that never opened a listening stream (at most --session-timeout)")
	cmd.Flags().IntVar(&httpOpts.MaxSessionsPerPrincipal, "max-sessions-per-principal", mcpserver.DefaultMaxSessionsPerPrincipal, "sessions one principal may hold; a new one past it closes the principal's longest-idle session (no request in flight, no listening stream), or gets 429 (rate_limited) with Retry-After when none is idle")
	cmd.Flags().IntVar(&httpOpts.MaxInFlight, "max-inflight", mcpserver.DefaultMaxInFlight, "requests one principal may have in flight; past it a request waits up to --admission-wait, then gets 429 (rate_limited) with Retry-After")
	cmd.Flags().IntVar(&httpOpts.MaxStreams, "max-streams", mcpserver.DefaultMaxStreams, "requests answered at once, in all; past it a request waits up to --admission-wait, then gets 503 with Retry-After (calls waiting for a person's approval do not count)")
	cmd.Flags().IntVar(&httpOpts.MaxListeners, "max-listeners", mcpserver.DefaultMaxListeners, "open listening streams (GET, subscriptions/listen); past it 503 with Retry-After")
	cmd.Flags().IntVar(&httpOpts.MaxListenersPerPrincipal, "max-listeners-per-principal", 0, "open listening streams of one principal; past it 429 (rate_limited) with Retry-After; must stay below --max-listeners (default: a tenth of it)")
	cmd.Flags().DurationVar(&httpOpts.AdmissionWait, "admission-wait", mcpserver.DefaultAdmissionWait, "how long a request over --max-inflight or --max-streams waits for a slot")
	cmd.Flags().DurationVar(&httpOpts.ReadTimeout, "read-timeout", mcpserver.DefaultReadTimeout, "time to read a whole request, body included (slow clients are cut off); responses may stream longer")
	cmd.Flags().DurationVar(&httpOpts.WriteTimeout, "write-timeout", mcpserver.DefaultWriteTimeout, "time for each write to a client: a client that stops reading loses its stream")
	cmd.Flags().DurationVar(&grace, "shutdown-grace", mcpserver.DefaultShutdownGrace, "on SIGTERM, how long calls in flight may finish before they are cancelled (listening streams are closed at once)")
	cmd.Flags().DurationVar(&serverOpts.IdleTimeout, "idle-timeout", mcpserver.DefaultIdleTimeout, "close keep-alive connections idle this long")
	cmd.Flags().DurationVar(&serverOpts.HeaderTimeout, "header-timeout", mcpserver.DefaultHeaderTimeout, "time to read a request's headers")
	return cmd
}

// listenAndServe serves until ctx ends, then shuts down within grace: the
// HTTP server stops accepting connections while the MCP server ends every
// listening stream at once (its clients reconnect, to another instance
// behind a load balancer), refuses new requests and lets running calls
// finish; calls still running when grace ends are cancelled, and any
// connection still open is closed. Both have stopped when it returns.
func listenAndServe(ctx context.Context, log interface {
	Info(string, ...any)
}, addr string, srv *http.Server, mcpSrv *mcpserver.Server, grace time.Duration) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	// The line tests and scripts wait for; it names the resolved port.
	log.Info("listening", "url", "http://"+ln.Addr().String()+"/mcp")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		if grace <= 0 {
			grace = mcpserver.DefaultShutdownGrace
		}
		gctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		drained := make(chan struct{})
		go func() {
			_ = mcpSrv.Shutdown(gctx) // logs its start and its end
			close(drained)
		}()
		err := srv.Shutdown(gctx)
		if err != nil {
			err = srv.Close()
		}
		<-drained
		return err
	}
}

func newStdio() *cobra.Command {
	var f storeFlags
	cmd := &cobra.Command{
		Use:   "stdio",
		Short: "Serve one MCP session over stdin/stdout (for Claude Desktop and other local clients)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := f.logger()
			if err != nil {
				return err
			}
			srv, closeAll, err := f.newServer(cmd.Context(), log)
			if err != nil {
				return err
			}
			defer closeAll()
			err = srv.RunStdio(cmd.Context(), os.Stdin, os.Stdout)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	f.register(cmd)
	f.registerHeartbeat(cmd.Flags())
	f.registerResultContent(cmd.Flags())
	guidePermission(cmd.Flags())
	return cmd
}

func newDemo() *cobra.Command {
	var rows int
	var seed int64
	var out string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Write the deterministic demo dataset into a new SQLite file, an empty PostgreSQL database or a Parse Server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if path, err := sqlitePath(out); err == nil {
				if _, err := os.Stat(path); err == nil {
					return fmt.Errorf("%s already exists; choose a new --out path", path)
				}
			}
			st, where, err := openSpec(cmd.Context(), out, nil, 0, true)
			if err != nil {
				return err
			}
			if schemas, err := st.Schemas(cmd.Context()); err == nil {
				for _, s := range schemas {
					if s.ClassName == demo.Classes()[0] {
						st.Close()
						return fmt.Errorf("%s already holds the demo classes; use an empty database", where)
					}
				}
			}
			defer st.Close()
			var bar *progressbar.ProgressBar
			opt := demo.Options{Rows: rows, Seed: seed}
			if !quiet {
				opt.Progress = func(done, total int) {
					if bar == nil {
						bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr),
							progressbar.OptionSetDescription("objects"), progressbar.OptionShowCount(),
							progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
					}
					_ = bar.Set(done)
				}
			}
			start := time.Now()
			stats, err := demo.Generate(cmd.Context(), st, opt)
			if bar != nil {
				_ = bar.Finish()
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "wrote %d objects to %s in %s\n", stats.Objects, where, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	cmd.Flags().IntVar(&rows, "rows", 10000, "approximate number of objects")
	cmd.Flags().Int64Var(&seed, "seed", 1, "random seed (the same seed gives the same data)")
	cmd.Flags().StringVar(&out, "out", "", "output: sqlite:PATH (a new file), postgres://USER@HOST:PORT/DB (an empty database) or parse+http(s)://APP_ID@HOST/parse (a Parse Server with allowCustomObjectId, written through its REST API with the master key)")
	registerParseKeys(cmd.Flags())
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress bar")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}

func newCall() *cobra.Command {
	var f storeFlags
	var args string
	var yes bool
	cmd := &cobra.Command{
		Use:   "call TOOL",
		Short: "Run one tool against a store and print its JSON result (exit 1 when the tool fails)",
		Long: `Run one tool against a store, as the agent the flags describe, and print
its JSON result on stdout.

Exit status: 0 the tool succeeded; 1 the tool answered with an error (its
result, with error_code, is printed on stdout) or the call could not be
made (an unknown tool or flag, bad --args, no store: a message on stderr).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, pos []string) error {
			log, err := f.logger()
			if err != nil {
				return err
			}
			srv, closeAll, err := f.newServer(cmd.Context(), log)
			if err != nil {
				return err
			}
			defer closeAll()
			if !json.Valid([]byte(args)) {
				return fmt.Errorf("--args is not valid JSON")
			}
			res, isErr, err := srv.CallToolWithApproval(cmd.Context(), pos[0], json.RawMessage(args), terminalApproval(yes))
			if err != nil {
				return err
			}
			enc := json.NewEncoder(os.Stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				return err
			}
			if isErr {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	f.register(cmd)
	guidePermission(cmd.Flags())
	cmd.Flags().StringVar(&args, "args", "{}", "tool arguments as a JSON object")
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "approve a destructive change without asking (otherwise asked on the terminal; refused when there is none)")
	return cmd
}

// terminalApproval asks the person at the terminal to approve a
// destructive change; --yes approves in advance. Without a terminal on
// stdin (and without --yes) it returns nil: the change is refused.
func terminalApproval(yes bool) func(context.Context, string) (bool, error) {
	if yes {
		return func(context.Context, string) (bool, error) { return true, nil }
	}
	if !term.IsTerminal(int(os.Stdin.Fd())) {
		return nil
	}
	return func(_ context.Context, message string) (bool, error) {
		fmt.Fprintf(os.Stderr, "%s [y/N] ", message)
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && line == "" {
			return false, nil
		}
		answer := strings.ToLower(strings.TrimSpace(line))
		return answer == "y" || answer == "yes", nil
	}
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			sdk := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				for _, d := range bi.Deps {
					if d.Path == "github.com/modelcontextprotocol/go-sdk" {
						sdk = d.Version
					}
				}
			}
			// What tools/list shows a read-only agent under the current
			// gates, and how many tools are built in at all.
			shown := len(tools.NewRegistry().Allowed(agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), gatesFromEnv(), ""))
			fmt.Fprintf(cmd.OutOrStdout(), "parsemcp %s (%s, MCP Go SDK %s, %d tools in tools/list for a read-only agent, %d built in)\n", mcpserver.Version, runtime.Version(), sdk, shown, len(tools.Builtin()))
		},
	}
}
