package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"runtime/debug"
	"slices"
	"sort"
	"time"

	"golang.org/x/time/rate"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/internal/reqlog"
	"github.com/parsemcp/parsemcp/ratelimit"
	"github.com/parsemcp/parsemcp/tools"
)

// recoverGuard turns a panic into a sanitized internal error: nothing
// panics across a request boundary.
func recoverGuard(log *slog.Logger) func(next Handler) Handler {
	return func(next Handler) Handler {
		return func(ctx context.Context, r *Request) (res any, err error) {
			inv := r.Call
			defer func() {
				if p := recover(); p != nil {
					err = &tools.Error{Code: tools.CodeInternal, Message: "internal error", Internal: fmt.Errorf("panic in tool %s: %v\n%s", inv.Tool.Name, p, debug.Stack())}
				}
			}()
			return next(ctx, r)
		}
	}
}

// mayCallGuard refuses a call the agent may not make: agent.MayCall
// judges it (tier, tool filter, operator gate, token scope and team, in
// that order) on what callInfo says of the tool. Every refusal is
// permission_denied; details.kind says which layer refused.
func (s *Server) mayCallGuard() func(next Handler) Handler {
	return func(next Handler) Handler {
		return func(ctx context.Context, r *Request) (any, error) {
			inv := r.Call
			info, err := s.callInfo(ctx, inv.Agent, inv.Tool)
			if err != nil {
				return nil, err
			}
			if err := inv.Agent.MayCall(info, s.config.Gates); err != nil {
				return nil, err
			}
			return next(ctx, r)
		}
	}
}

// argsGuard checks the arguments against the tool's declared input schema
// once, before the tool runs (tools.CheckArgs): a bad argument is refused
// with invalid_argument naming it.
func argsGuard() func(next Handler) Handler {
	return func(next Handler) Handler {
		return func(ctx context.Context, r *Request) (any, error) {
			inv := r.Call
			if err := tools.CheckArgs(inv.Tool, inv.Args); err != nil {
				return nil, err
			}
			return next(ctx, r)
		}
	}
}

// timeoutGuard bounds the call by the tool's timeout (or the operator's
// override); the deadline reaches the database through the context: SQLite
// interrupts the statement, PostgreSQL cancels it.
// The limit is measured on tm.
func timeoutGuard(overrides map[string]time.Duration, tm timing) func(next Handler) Handler {
	return func(next Handler) Handler {
		return func(ctx context.Context, r *Request) (any, error) {
			inv := r.Call
			limit := inv.Tool.Timeout
			if d, ok := overrides[inv.Tool.Name]; ok && d > 0 {
				limit = d
			}
			var cancels []context.CancelFunc
			rearm := &rearmer{parent: ctx, limit: limit, timing: tm, cancels: &cancels}
			ctx, cancel := tm.withTimeout(ctx, limit)
			defer func() {
				cancel()
				for _, c := range cancels {
					c()
				}
			}()
			return next(context.WithValue(ctx, rearmKey{}, rearm), r)
		}
	}
}

// auditGuard records one sanitized event per call: argument names, never
// values; the result's size, never its rows. It records a call that
// panicked too (as internal), before recoverGuard, outside it, answers.
func auditGuard(sink audit.Sink, usdPerMTok float64) func(next Handler) Handler {
	return func(next Handler) Handler {
		if sink == nil {
			return next
		}
		return func(ctx context.Context, r *Request) (data any, err error) {
			inv := r.Call
			start := time.Now()
			panicked := true
			defer func() {
				if panicked {
					err = &tools.Error{Code: tools.CodeInternal, Message: "internal error"}
				}
				recordCall(ctx, sink, usdPerMTok, inv, start, data, err)
			}()
			data, err = next(ctx, r)
			panicked = false
			return data, err
		}
	}
}

// recordCall records the audit event of one call that ended with data
// and err.
func recordCall(ctx context.Context, sink audit.Sink, usdPerMTok float64, inv *Invocation, start time.Time, data any, err error) {
	e := audit.Event{
		Event: "tool_call", Time: start.UTC(), Tool: inv.Tool.Name, ArgKeys: argKeys(inv.Args),
		AgentID: inv.Agent.ID, Profile: inv.Agent.Policy.Name, TenantID: inv.Agent.Policy.TenantID, AuthType: string(inv.Agent.Identity.Mode), Permission: inv.Agent.Permission.String(),
		CorrelationID: cmp.Or(inv.Agent.CorrelationID, reqlog.CorrelationID(ctx)), RequestID: reqlog.RequestID(ctx), ClientAddr: reqlog.ClientAddr(ctx), TraceID: reqlog.TraceID(ctx), Success: err == nil,
		DurationMS: float64(time.Since(start).Microseconds()) / 1000,
		SessionID:  inv.session, ConversationID: inv.conversation,
	}
	e.AgentDepth, e.ParentAgentID = inv.Agent.Lineage()
	pol := inv.Agent.Policy
	e.ClassesOnly, e.ClassesExcept = sortedList(pol.Classes.Only), sortedList(pol.Classes.Except)
	e.ToolsOnly, e.ToolsExcept = sortedList(pol.Tools.Only), sortedList(pol.Tools.Except)
	e.MethodsOnly, e.MethodsExcept = sortedList(pol.Methods.Only), sortedList(pol.Methods.Except)
	e.Filters = pol.FilterFields()
	if raw, ok := data.(json.RawMessage); ok {
		e.ResultBytes = len(raw)
	}
	if err != nil {
		te := tools.AsError(err)
		e.ErrorCode = te.Code
		if k, ok := te.Details["kind"].(string); ok {
			e.DenialKind = k
		}
		// Why a class was "not found" stays out of the answer but
		// belongs in the audit trail.
		var ce *agent.ClassError
		if errors.As(err, &ce) && ce.Kind != "" && ce.Kind != "unknown" {
			e.DenialKind = ce.Kind
		}
	}
	e.Estimate(usdPerMTok)
	sink.Record(ctx, e)
}

// sortedList is a sorted copy of list (nil for none).
func sortedList(list []string) []string {
	if list == nil {
		return nil
	}
	out := slices.Clone(list)
	slices.Sort(out)
	return out
}

// argKeys lists the top-level argument names, sorted.
func argKeys(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return []string{}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// rateGuard refuses calls over the principal's rate with rate_limited and
// the seconds to wait. A limiter that cannot decide (its Redis down)
// refuses too: it fails closed, as unavailable (details.kind
// "rate_limiter"), which does not blame the caller; the outage is logged
// at WARN at most once a minute.
func rateGuard(l ratelimit.Limiter, log *slog.Logger) func(next Handler) Handler {
	return func(next Handler) Handler {
		if l == nil {
			return next
		}
		warn := &rate.Sometimes{First: 1, Interval: time.Minute}
		return func(ctx context.Context, r *Request) (any, error) {
			inv := r.Call
			ok, retry, err := l.Allow(ctx, inv.Agent.Key())
			secs := max(int(math.Ceil(retry.Seconds())), 1)
			if err != nil {
				warn.Do(func() { log.Warn("rate limiter unavailable: refusing calls until it is back", "err", err) })
				return nil, &tools.Error{Code: tools.CodeUnavailable, Details: map[string]any{"retry_after": secs, "kind": "rate_limiter"},
					Message: fmt.Sprintf("the rate limiter is unavailable, so the call was not run; retry in %d s", secs)}
			}
			if !ok {
				return nil, &tools.Error{Code: tools.CodeRateLimited, Details: map[string]any{"retry_after": secs},
					Message: fmt.Sprintf("too many calls; retry in %d s", secs)}
			}
			return next(ctx, r)
		}
	}
}

// callInfo is what agent.MayCall judges a call of t by agent a: the
// tool's Info (for a remote tool, as mirrored from the catalog, which the
// listings use too). Under a personal access token a remote tool is
// judged as the federation holds it now (its annotations, hence its tier
// and whether it writes, and its agent's team), so that a tool
// re-announced since the catalog was mirrored cannot slip past the
// token's scope; that may fetch the agent's tool list on a cache miss,
// so calls without a token never wait for it.
func (s *Server) callInfo(ctx context.Context, a *agent.Agent, t *tools.Tool) (agent.ToolInfo, error) {
	info := t.Info()
	if !info.Remote || a.Token == nil {
		return info, nil
	}
	ann, e, err := s.fed.Annotations(ctx, t.Name)
	if err != nil {
		if errors.Is(err, federation.ErrUnknownTool) {
			return info, &tools.Error{Code: tools.CodeNotFound, Message: fmt.Sprintf("unknown tool %q", t.Name)}
		}
		return info, &tools.Error{Code: tools.CodeUnavailable, Message: err.Error()}
	}
	info.ReadOnly, info.Permission, info.Team = ann.ReadOnly(), remotePermission(ann.ReadOnly()), e.Team
	return info, nil
}
