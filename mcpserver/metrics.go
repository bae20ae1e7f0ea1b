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
	sessions    prometheus.GaugeFunc
}

func newMetrics(activeSessions func() float64) *Metrics {
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
		sessions: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "parsemcp_active_sessions", Help: "Open MCP sessions."}, activeSessions),
	}
	m.registry.MustRegister(m.calls, m.errors, m.latency, m.rateLimited, m.sessions,
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
