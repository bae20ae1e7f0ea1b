package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/internal/telemetry"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/ratelimit"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/subscribe"
	"github.com/parsemcp/parsemcp/tools"
	"github.com/redis/go-redis/v9"
)

// newServer opens the store and builds the MCP server. closeAll stops the
// server, flushes the audit sink and closes the store, in that order.
func (f *storeFlags) newServer(ctx context.Context, log *slog.Logger) (srv *mcpserver.Server, closeAll func(), err error) {
	storeLog := log
	if f.inProcess && !f.verbose {
		// ask and chat: the store's notices about its change feed concern
		// a server's subscribers, not a client in this process.
		storeLog = logger(slog.LevelError)
	}
	st, err := f.openStore(ctx, storeLog)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil { // release what was opened
			for _, c := range f.closers {
				c()
			}
			f.closers = nil
			st.Close()
		}
	}()
	traced, flush, err := telemetry.Setup(ctx, mcpserver.Version)
	if err != nil {
		return nil, nil, err
	}
	if traced {
		log.Info("tracing on: spans go out over OTLP/HTTP as the OTEL_* variables say")
		f.closers = append(f.closers, func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = flush(ctx)
		})
	}
	f.poolSize = poolSize(st)
	pol, err := f.loadPolicy(ctx, log, st)
	if err != nil {
		return nil, nil, err
	}
	f.pol = pol
	if fs, ok := st.(store.FeedScoped); ok && !f.inProcess {
		switch reach, err := fs.FeedReach(ctx); {
		case reach == store.FeedNone && err != nil && errors.Is(err, store.ErrFeedNotInstalled):
			log.Warn("resource subscriptions are refused: "+err.Error(), "store", "postgres")
		case reach == store.FeedOwnWrites:
			log.Warn("the PostgreSQL change feed is not installed: resource subscriptions see only the writes made through this process; run `parsemcp migrate --store …` once")
		}
	}
	var factory mcpserver.AgentFactory
	if pol != nil {
		factory = f.policyFactory(pol, st)
	} else if factory, err = f.agentFactory(ctx, log, st); err != nil {
		return nil, nil, err
	}
	if f.oauth.enabled() {
		var stop func()
		if factory, stop, err = f.oauth.factory(ctx, log, pol, st, factory); err != nil {
			return nil, nil, err
		}
		f.closers = append(f.closers, stop)
	}
	if f.fed.tokens != "" {
		ts, err := openTokens(ctx, f.fed.tokens, st)
		if err != nil {
			return nil, nil, fmt.Errorf("--tokens: %w", err)
		}
		factory = f.tokenFactory(ts, factory, st, log)
		log.Info("personal access tokens required over HTTP", "tokens", f.fed.tokens)
	}
	if g := f.tools.Gates; g != (agent.Gates{}) {
		log.Warn("write gates open", agent.EnvAllowWriteTools, g.WriteTools, agent.EnvAllowSchemaOps, g.SchemaOps, agent.EnvAllowRawCRUD, g.RawCRUD, agent.EnvAllowRawSchema, g.RawSchema)
	}
	timeouts := map[string]time.Duration{}
	for name, v := range f.timeouts {
		d, err := time.ParseDuration(v)
		_, known := tools.NewRegistry().Get(name)
		known = known || (f.fed.mode != "" && strings.Contains(name, "-")) // a remote tool
		if err != nil || d <= 0 || !known {
			return nil, nil, fmt.Errorf("--timeout %s=%s: want a known tool and a positive duration such as 30s", name, v)
		}
		timeouts[name] = d
	}
	budget := f.maxBytes
	if budget <= 0 {
		if f.budget <= 0 {
			return nil, nil, fmt.Errorf("--response-budget %d: want a positive number of tokens", f.budget)
		}
		budget = f.budget * tools.BytesPerToken
	}
	budgets := map[string]int{}
	for name, n := range f.budgets {
		if _, known := tools.NewRegistry().Get(name); !known || n <= 0 {
			return nil, nil, fmt.Errorf("--tool-response-budget %s=%d: want a known tool and a positive number of tokens", name, n)
		}
		budgets[name] = n * tools.BytesPerToken
	}
	opts := mcpserver.Options{Store: st, Agents: factory, Logger: log, ToolConfig: &f.tools, MaxResponseBytes: budget, ResponseBudgets: budgets, Timeouts: timeouts, CostPerMillionTokens: f.costPerMT,
		ApprovalTimeout: f.approvalTimeout, DisableApproval: f.noApproval, HeartbeatInterval: f.heartbeat, ResultContent: f.resultContent}
	if secret := os.Getenv("PARSEMCP_APPROVAL_SECRET"); secret != "" {
		opts.ApprovalSecret = []byte(secret)
	}
	if f.noApproval {
		log.Warn("destructive changes run without a person's approval (--no-approval)")
	}
	// One Redis client serves the shared rate limit and the live change
	// stream.
	var rc *redis.Client
	if f.redisURL != "" {
		ropt, err := redis.ParseURL(f.redisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("--redis: %w", err)
		}
		rc = redis.NewClient(ropt)
		f.closers = append(f.closers, func() { rc.Close() })
	}
	limiter, err := f.limiter(rc)
	if err != nil {
		return nil, nil, err
	}
	opts.RateLimit = limiter
	opts.Live = &mcpserver.LiveOptions{Debounce: f.liveDebounce}
	if rc != nil {
		n := subscribe.NewRedis(rc, f.redisPfx+":live", log)
		opts.Live.Notifier = n
		// Closers run in order: the notifier stops before its client.
		f.closers = append([]func(){func() { n.Close() }}, f.closers...)
	}
	switch f.audit {
	case "", "off":
	case "stderr":
		opts.Audit = audit.NewJSONSink(os.Stderr)
	case "store":
		sink, err := audit.NewStoreSink(ctx, st, log)
		if err != nil {
			return nil, nil, fmt.Errorf("--audit store: %w", err)
		}
		opts.Audit = sink
		f.closers = append(f.closers, sink.Close)
	default:
		file, err := os.OpenFile(f.audit, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--audit: %w", err)
		}
		opts.Audit = audit.NewJSONSink(file)
		f.closers = append(f.closers, func() { file.Close() })
	}
	if err := f.fed.start(ctx, log, &opts, &f.closers); err != nil {
		return nil, nil, err
	}
	if srv, err = mcpserver.New(opts); err != nil {
		return nil, nil, err
	}
	return srv, func() {
		srv.Close()
		for _, c := range f.closers {
			c()
		}
		st.Close()
	}, nil
}

// parseRate reads "N/s" or "N/m" (also a bare N, per minute).
func parseRate(spec string) (n int, window time.Duration, err error) {
	num, unit, _ := strings.Cut(strings.TrimSpace(spec), "/")
	n, err = strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, 0, fmt.Errorf("rate %q: want N/s or N/m", spec)
	}
	switch unit {
	case "s", "sec", "second":
		window = time.Second
	case "", "m", "min", "minute":
		window = time.Minute
	default:
		return 0, 0, fmt.Errorf("rate %q: want N/s or N/m", spec)
	}
	return n, window, nil
}

// limiter builds the per-principal limiter: local token buckets, or a
// Redis-shared window on rc (the --redis client) when there is one.
func (f *storeFlags) limiter(rc *redis.Client) (ratelimit.Limiter, error) {
	n, window, err := parseRate(f.rateLimit)
	if err != nil || n == 0 {
		return nil, err
	}
	if rc != nil {
		return ratelimit.NewRedis(rc, f.redisPfx+":rl", n, window)
	}
	return ratelimit.NewLocal(n, window)
}
