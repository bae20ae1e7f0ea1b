package mcpserver

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/parsemcp/parsemcp/tools"
)

// Metrics are the server's Prometheus metrics. Each Server has its own
// registry, so several servers in one process do not collide.
type Metrics struct {
	registry    *prometheus.Registry
	calls       *prometheus.CounterVec
	errors      *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	rateLimited *prometheus.CounterVec
	// abandoned counts the requests whose client closed their connection
	// while they ran (their work is stopped; the answer is never read).
	abandoned prometheus.Counter
}

// liveCounts are the server's live figures the gauges read when scraped.
type liveCounts struct {
	sessions  func() float64 // open MCP sessions
	running   func() float64 // requests running for an agent (tool calls, reads, prompts, …)
	listening func() float64 // open listening streams (GET streams and subscriptions/listen)
}

func newMetrics(live liveCounts) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parsemcp_tool_calls_total", Help: "Tool calls, by tool and outcome (ok or error)."}, []string{"tool", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parsemcp_tool_errors_total", Help: "Failed tool calls, by tool and error_code."}, []string{"tool", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "parsemcp_tool_duration_seconds", Help: "Tool call latency, by tool.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}}, []string{"tool"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parsemcp_rate_limited_total", Help: "Tool calls refused by the rate limiter, by tool."}, []string{"tool"}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parsemcp_abandoned_requests_total", Help: "Requests whose client closed the connection while they ran (stopped, never answered)."}),
	}
	m.registry.MustRegister(m.calls, m.errors, m.latency, m.rateLimited, m.abandoned,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "parsemcp_active_sessions", Help: "Open MCP sessions."}, live.sessions),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "parsemcp_running_requests", Help: "Requests running for an agent: tool calls, reads, prompts, completions."}, live.running),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "parsemcp_listening_streams", Help: "Open listening streams: GET event streams and subscriptions/listen requests."}, live.listening),
		prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// guard counts every call, its outcome and its latency.
func (m *Metrics) guard() func(next Handler) Handler {
	return func(next Handler) Handler {
		return func(ctx context.Context, r *Request) (any, error) {
			inv := r.Call
			start := time.Now()
			data, err := next(ctx, r)
			name := inv.Tool.Name
			m.latency.WithLabelValues(name).Observe(time.Since(start).Seconds())
			if err != nil {
				code := tools.AsError(err).Code
				m.calls.WithLabelValues(name, "error").Inc()
				m.errors.WithLabelValues(name, code).Inc()
				if code == tools.CodeRateLimited {
					m.rateLimited.WithLabelValues(name).Inc()
				}
			} else {
				m.calls.WithLabelValues(name, "ok").Inc()
			}
			return data, err
		}
	}
}
