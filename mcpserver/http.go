package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
)

// HTTP defaults.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultSessionTimeout = 30 * time.Minute
)

// statelessVersion is the first protocol version served without sessions.
const statelessVersion = "2026-07-28"

// HTTPOptions configures the Streamable HTTP endpoint.
type HTTPOptions struct {
	// MaxBodyBytes caps a request body (default 1 MiB).
	MaxBodyBytes int64
	// SessionTimeout closes idle sessions (default 30 minutes).
	SessionTimeout time.Duration
	// AllowedOrigins, when set, refuses (403) requests whose Origin header
	// is not listed: host names, or ".example.com" for a domain and its
	// subdomains. A request without Origin (a native client) passes.
	AllowedOrigins []string
	// RequireHeader, when set, refuses (403) requests without this header
	// (any non-empty value): browsers cannot send it cross-site without a
	// CORS preflight.
	RequireHeader string
}

// Handler returns the MCP endpoint as an http.Handler that can be mounted at
// any path. Requests at protocol 2026-07-28 and later are served statelessly
// (server/discover, no session); older protocols get sessions through the
// initialize handshake. Both share this Server.
func (s *Server) Handler(opts HTTPOptions) http.Handler {
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	get := func(*http.Request) *mcp.Server { return s.mcp }
	stateful := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger: s.log, SessionTimeout: opts.SessionTimeout, MaxRequestBodyBytes: opts.MaxBodyBytes,
	})
	stateless := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger: s.log, Stateless: true, MaxRequestBodyBytes: opts.MaxBodyBytes,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !precheck(w, r, opts) {
			return
		}
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, opts.MaxBodyBytes))
			if err != nil {
				var mbe *http.MaxBytesError
				if errors.As(err, &mbe) {
					rpcError(w, http.StatusRequestEntityTooLarge, -32700, "request body too large")
					return
				}
				rpcError(w, http.StatusBadRequest, -32700, "cannot read request body")
				return
			}
			if !checkBody(w, body) {
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(liftCategoryBody(body)))
		}
		if pv := r.Header.Get("Mcp-Protocol-Version"); pv >= statelessVersion {
			stateless.ServeHTTP(w, r)
			return
		}
		stateful.ServeHTTP(w, r)
	})
}

// liftCategoryBody applies liftCategory to a tools/list request body.
func liftCategoryBody(body []byte) []byte {
	if !bytes.Contains(body, []byte(`"tools/list"`)) || !bytes.Contains(body, []byte(`"category"`)) {
		return body
	}
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		return body
	}
	var method string
	if json.Unmarshal(msg["method"], &method) != nil || method != "tools/list" {
		return body
	}
	p, changed := liftCategory(msg["params"])
	if !changed {
		return body
	}
	msg["params"] = p
	out, err := json.Marshal(msg)
	if err != nil {
		return body
	}
	return out
}

// Mux returns the standalone server's routes: the MCP endpoint at /mcp,
// /health, /tools (the calling agent's tool catalog as JSON) and /metrics
// (Prometheus).
func (s *Server) Mux(opts HTTPOptions) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/mcp", s.Handler(opts))
	mux.HandleFunc("GET /health", s.health)
	mux.HandleFunc("GET /tools", s.toolCatalog)
	mux.Handle("GET /metrics", s.metrics.Handler())
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if _, err := s.store.Schemas(r.Context()); err != nil {
		s.log.Error("health: store unavailable", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "version": Version})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "version": Version})
}

func (s *Server) toolCatalog(w http.ResponseWriter, r *http.Request) {
	a, err := s.agents(r.Context(), RequestInfo{Header: r.Header})
	if err != nil || a == nil {
		if err == nil || errors.Is(err, agent.ErrUnauthorized) {
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
			return
		}
		s.log.Error("agent factory failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "internal error"})
		return
	}
	list := []any{}
	for _, t := range s.tools.Allowed(a, s.config.Gates, r.URL.Query().Get("category")) {
		list = append(list, map[string]any{"name": t.Name, "category": t.Category, "description": t.Description, "inputSchema": t.Input})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": list})
}
