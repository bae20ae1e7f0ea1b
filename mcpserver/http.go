package mcpserver

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/auth"
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
	// OAuth, when set, makes the server an OAuth 2.1 protected resource:
	// its metadata (RFC 9728) is served, and 401 answers point to it.
	// Token validation is the agent factory's (see auth and policy).
	OAuth *auth.Config
	// MaxBodyBytes caps a request body (default 1 MiB).
	MaxBodyBytes int64
	// WriteTimeout bounds each write of a response or event to a client
	// (default 30 s): a client that stops reading its stream fails the
	// write instead of holding the sender for ever. It does not bound how
	// long a stream stays open.
	WriteTimeout time.Duration
	// SessionTimeout closes sessions idle (no request in flight, no
	// listening stream) for this long (default 30 minutes), once they
	// have opened a listening stream.
	SessionTimeout time.Duration
	// StreamlessSessionTimeout is SessionTimeout for the sessions that
	// never opened a listening stream (default 5 minutes, and never more
	// than SessionTimeout): a client that will not hear notifications
	// gains nothing from its session being kept.
	StreamlessSessionTimeout time.Duration
	// MaxSessionsPerPrincipal caps the sessions one principal holds
	// (default 100). A new session past it closes the principal's
	// longest-idle session (no request in flight, no listening stream);
	// when every one of them is busy, it is refused with 429, Retry-After
	// and a JSON-RPC -32029 error ("rate_limited").
	MaxSessionsPerPrincipal int
	// MaxListenersPerPrincipal caps the listening streams (GET streams and
	// subscriptions/listen requests) one principal holds open (default: a
	// tenth of MaxListeners); past it: 429 at once. It must stay below
	// MaxListeners (CheckListenerShare), so that one principal alone
	// cannot take every listening stream.
	MaxListenersPerPrincipal int
	// AllowedOrigins lists the browser origins allowed besides the
	// server's own host: host names, full origins, or ".example.com" for
	// a domain and its subdomains. Their requests get CORS headers (and
	// preflights are answered), so a web page there can be an MCP client.
	// Without a list, only the server's own host and loopback origins
	// pass. Other origins are refused (403); a request without Origin (a
	// native client) passes.
	AllowedOrigins []string
	// RequireHeader, when set, refuses (403) requests without this header
	// (any non-empty value): browsers cannot send it cross-site without a
	// CORS preflight.
	RequireHeader string
	// JSONResponse answers each POST with one application/json response
	// instead of a text/event-stream (the SDK's plain JSON request/response
	// mode; no progress notifications on the POST).
	JSONResponse bool
	// ReadTimeout bounds the reading of a request body (default 30 s): a
	// slow-loris client is cut off. Once a request is read, its response
	// may stream as long as the protocol needs.
	ReadTimeout time.Duration
	// MaxInFlight caps the requests one principal (Agent.Key plus the
	// policy profile) has in flight, each POST's requests counted
	// (default 8). One over it waits up to AdmissionWait for one of them
	// to end, then gets 429 with Retry-After and a JSON-RPC -32029 error
	// whose data holds retry_after and error_code "rate_limited".
	MaxInFlight int
	// MaxStreams caps the POSTs being answered at once, in all (default
	// 1000); one over it waits up to AdmissionWait, then gets 503 with
	// Retry-After and a JSON-RPC -32000 "server busy". A call waiting for a
	// person's approval gives its slot back while it waits. MaxListeners
	// caps the open listening streams (GET streams, and the
	// subscriptions/listen requests of 2026-07-28 clients) (default 1000);
	// over it: 503 at once.
	MaxStreams, MaxListeners int
	// AdmissionWait is how long a request over MaxInFlight or MaxStreams
	// waits for a slot (default 5 s; negative: not at all).
	AdmissionWait time.Duration
}

// Handler returns the MCP endpoint as an http.Handler that can be mounted at
// any path: NewHandler over this Server, whose AgentFactory resolves each
// request's agent (one it refuses is answered 401 before the SDK sees the
// request). Requests at protocol 2026-07-28 and later are served
// statelessly (server/discover, no session); older protocols get sessions
// through the initialize handshake. It panics on options NewHandler
// refuses (listener caps that CheckListenerShare refuses).
func (s *Server) Handler(opts HTTPOptions) http.Handler {
	h, err := NewHandler(HandlerOptions{HTTPOptions: opts, Server: s})
	if err != nil { // s is not nil: only the options can be refused
		panic(err)
	}
	return h
}

// Mux returns the standalone server's routes: the MCP endpoint at /mcp,
// /health, /tools (the calling agent's tool catalog as JSON) and /metrics
// (Prometheus).
func (s *Server) Mux(opts HTTPOptions) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/mcp", withRequestID(s.Handler(opts)))
	mux.Handle("GET /health", withRequestID(http.HandlerFunc(s.health)))
	mux.Handle("GET /tools", withRequestID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.toolCatalog(w, r, opts.OAuth) })))
	mux.Handle("GET /metrics", s.metrics.Handler())
	if opts.OAuth != nil {
		md := opts.OAuth.MetadataHandler()
		mux.Handle("GET "+auth.MetadataPath, md)
		if u, err := url.Parse(opts.OAuth.Resource); err == nil && u.Path != "" && u.Path != "/" {
			mux.Handle("GET "+auth.MetadataPath+u.Path, md)
		}
	}
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) toolCatalog(w http.ResponseWriter, r *http.Request, oauth *auth.Config) {
	a, err := s.agents(r.Context(), RequestInfo{Header: r.Header, Request: r})
	if err != nil || a == nil {
		if err == nil || errors.Is(err, agent.ErrUnauthorized) {
			challenge(w, r, oauth)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": "unauthorized"})
			return
		}
		s.log.ErrorContext(r.Context(), "agent factory failed", "err", err)
		writeJSON(w, http.StatusInternalServerError, map[string]any{"error": "internal error"})
		return
	}
	list := []any{}
	for _, t := range s.catalog(a, r.URL.Query().Get("category")) {
		list = append(list, map[string]any{"name": t.Name, "category": t.Category, "description": t.Description, "inputSchema": t.Input})
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": list})
}

// challenge sets a 401's WWW-Authenticate: with OAuth, it points to the
// protected-resource metadata (invalid_token when a token was refused).
func challenge(w http.ResponseWriter, r *http.Request, oauth *auth.Config) {
	if oauth == nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="parsemcp"`)
		return
	}
	w.Header().Set("WWW-Authenticate", oauth.Challenge(r.Header.Get("Authorization") != ""))
}
