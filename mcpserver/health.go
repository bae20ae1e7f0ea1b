package mcpserver

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/parsemcp/parsemcp/store"
)

// HealthProbeTimeout bounds each dependency's probe in /health, so a
// frozen database makes the answer "unavailable", not a hung request.
const HealthProbeTimeout = 2 * time.Second

// pinger is what /health asks of a dependency: one round trip.
type pinger interface {
	Ping(ctx context.Context) error
}

// healthLog logs one WARN line a minute per failing dependency: a load
// balancer probes every few seconds.
type healthLog struct {
	mu   sync.Mutex
	warn map[string]*rate.Sometimes
}

func (h *healthLog) once(dep string) *rate.Sometimes {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.warn == nil {
		h.warn = map[string]*rate.Sometimes{}
	}
	if h.warn[dep] == nil {
		h.warn[dep] = &rate.Sometimes{First: 1, Interval: time.Minute}
	}
	return h.warn[dep]
}

// health answers a load balancer, asking each dependency once:
//
//   - "database" (the store: PostgreSQL, SQLite or Parse Server) and
//     "rate_limiter" (the shared limiter's Redis, which fails closed):
//     without either no call can run, so 503 {"status":"unavailable"}
//     with Retry-After;
//   - "notifier" (the live notifications' Redis) and "federation" (the
//     broker): the server's own calls work, so 200 {"status":"degraded"};
//   - else 200 {"status":"ok"}.
//
// Each failing dependency is a key whose value says why in words that
// name no address, version or secret; the log has the detail.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	down := map[string]string{}
	fatal := false
	probe := func(dep string, critical bool, p func(context.Context) error, say func(error) string) {
		ctx, cancel := context.WithTimeout(r.Context(), HealthProbeTimeout)
		defer cancel()
		if err := p(ctx); err != nil {
			down[dep] = say(err)
			fatal = fatal || critical
			s.healthLog.once(dep).Do(func() {
				s.log.WarnContext(r.Context(), "health: a dependency does not answer", "dependency", dep, "err", err)
			})
		}
	}
	unavailable := func(error) string { return "unavailable" }
	if p, ok := s.store.(pinger); ok {
		probe("database", true, p.Ping, func(err error) string {
			var o *store.Outage
			if errors.As(err, &o) {
				return "unavailable: " + o.Backend + " does not answer"
			}
			return "unavailable"
		})
	} else {
		probe("database", true, func(ctx context.Context) error { _, err := s.store.Schemas(ctx); return err }, unavailable)
	}
	if p, ok := s.limiter.(pinger); ok {
		probe("rate_limiter", true, p.Ping, func(error) string { return "unavailable: its Redis does not answer (every call is refused)" })
	}
	if p, ok := s.live.notifier.(pinger); ok {
		probe("notifier", false, p.Ping, func(error) string {
			return "unavailable: its Redis does not answer (other instances' changes are not notified)"
		})
	}
	if s.fed != nil {
		probe("federation", false, func(context.Context) error { return s.fed.Health() }, func(err error) string { return err.Error() })
	}
	out := map[string]any{"status": "ok"}
	for dep, why := range down {
		out[dep] = why
	}
	switch {
	case fatal:
		out["status"] = "unavailable"
		w.Header().Set("Retry-After", "5")
		writeJSON(w, http.StatusServiceUnavailable, out)
		return
	case len(down) > 0:
		out["status"] = "degraded"
	}
	writeJSON(w, http.StatusOK, out)
}
