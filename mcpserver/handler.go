package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
)

// Stream caps.
const (
	DefaultMaxStreams   = 1000
	DefaultMaxListeners = 1000
)

// Timeouts.
const (
	// DefaultWriteTimeout is HTTPOptions.WriteTimeout's default.
	DefaultWriteTimeout = 30 * time.Second
	// DefaultReadTimeout is HTTPOptions.ReadTimeout's default.
	DefaultReadTimeout = 30 * time.Second
)

// CodeServerBusy is the JSON-RPC error code of a request refused because a
// stream cap is reached (HTTP 503).
const CodeServerBusy = -32000

// MaxSessionIDLen bounds an Mcp-Session-Id.
const MaxSessionIDLen = 128

// HandlerOptions configures NewHandler.
type HandlerOptions struct {
	HTTPOptions
	// Server serves the requests (required). One Server may back any number
	// of handlers.
	Server *Server
	// Agent, when set, builds the agent of each HTTP request and takes
	// precedence over the Server's AgentFactory. Without it the Server's
	// AgentFactory is called with RequestInfo{Header, Request}. Either way
	// the agent is resolved once per HTTP request, before the SDK sees it,
	// and an error wrapping agent.ErrUnauthorized (or a nil agent) is
	// answered 401 with a JSON-RPC -32001 body.
	Agent func(*http.Request) (*agent.Agent, error)
}

// resolution is the agent resolved for one HTTP request, carried to the
// SDK-side middleware through the request's auth.TokenInfo.
type resolution struct {
	agent *agent.Agent
	err   error
	// conn is the HTTP request's context: it ends when the client closes
	// the connection (or the response is complete).
	conn context.Context
	// ticket is what the request holds of the caps (nil: nothing).
	ticket *ticket
}

// resolutionKey is the auth.TokenInfo.Extra key holding a *resolution.
const resolutionKey = "parsemcp.agent"

// resolvedFrom returns the resolution the HTTP layer attached to a request.
func resolvedFrom(ex *mcp.RequestExtra) (*resolution, bool) {
	if ex == nil || ex.TokenInfo == nil {
		return nil, false
	}
	r, ok := ex.TokenInfo.Extra[resolutionKey].(*resolution)
	return r, ok
}

// principalKey identifies the principal a session is bound to.
func principalKey(a *agent.Agent, err error) string {
	if err != nil || a == nil {
		return "!unauthenticated"
	}
	return a.Key() + "|" + a.Policy.Name
}

// handler is the hardened Streamable HTTP endpoint.
type handler struct {
	opts      HandlerOptions
	srv       *Server
	stateful  http.Handler
	stateless http.Handler
	admission *admission
	clock     clockwork.Clock

	mu       sync.Mutex
	sessions map[string]*session // by Mcp-Session-Id
	owners   map[string]*owned   // by principal
}

// session is what the handler keeps of a session: its owner, its idle
// timer (running while no request of the session is in flight), and its
// POSTs holding calls, which its GET stream outlives at shutdown
// (afterCalls).
type session struct {
	id        string
	principal string
	active    int
	idle      clockwork.Timer
	// idleSince is when the last request ended (the session is idle while
	// active is 0).
	idleSince time.Time
	// listened: the session has opened a listening stream (its idle
	// timeout is SessionTimeout rather than StreamlessSessionTimeout).
	listened bool
	// calling counts the POSTs holding calls in flight; afterCalls run
	// when it drops to 0 (a stream closed at shutdown waits for them).
	calling    int
	afterCalls []func()
}

// NewHandler returns the MCP endpoint as an http.Handler that can be
// mounted at any path of another application. Requests pass, in order:
// the request checks (method, Origin, required header, Host on loopback,
// Content-Type, body size, JSON nesting, envelope), the agent (401),
// the session id (400 malformed or missing, 404 unknown or owned by another
// principal), the caps (the principal's in flight, listening streams and
// sessions: 429; the server's streams and listeners: 503), and then the
// SDK's Streamable HTTP handler. Requests at protocol 2026-07-28 and later
// are served statelessly. Listener caps that CheckListenerShare refuses
// are an error.
func NewHandler(opts HandlerOptions) (http.Handler, error) {
	if opts.Server == nil {
		return nil, errors.New("mcpserver: HandlerOptions.Server is required")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxStreams <= 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.MaxListeners <= 0 {
		opts.MaxListeners = DefaultMaxListeners
	}
	if opts.MaxListenersPerPrincipal <= 0 {
		opts.MaxListenersPerPrincipal = DefaultListenerShare(opts.MaxListeners)
	}
	if err := CheckListenerShare(opts.MaxListenersPerPrincipal, opts.MaxListeners); err != nil {
		return nil, fmt.Errorf("mcpserver: %w", err)
	}
	if opts.MaxSessionsPerPrincipal <= 0 {
		opts.MaxSessionsPerPrincipal = DefaultMaxSessionsPerPrincipal
	}
	if opts.StreamlessSessionTimeout <= 0 {
		opts.StreamlessSessionTimeout = DefaultStreamlessSessionTimeout
	}
	opts.StreamlessSessionTimeout = min(opts.StreamlessSessionTimeout, opts.SessionTimeout)
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.AdmissionWait == 0 {
		opts.AdmissionWait = DefaultAdmissionWait
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	s := opts.Server
	get := func(*http.Request) *mcp.Server { return s.mcp }
	clock := clockwork.NewRealClock()
	h := &handler{opts: opts, srv: s, sessions: map[string]*session{}, owners: map[string]*owned{}, clock: clock, admission: newAdmission(opts.HTTPOptions, clock)}
	// The handler closes idle sessions itself (expire), cancelling what
	// still runs in them; the SDK's own timer would wait for that work.
	h.stateful = carryTokenInfo(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger: s.log, MaxRequestBodyBytes: opts.MaxBodyBytes, JSONResponse: opts.JSONResponse,
	}))
	h.stateless = carryTokenInfo(mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Logger: s.log, Stateless: true, MaxRequestBodyBytes: opts.MaxBodyBytes, JSONResponse: opts.JSONResponse,
	}))
	return h, nil
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !precheck(w, r, h.opts.HTTPOptions) {
		return
	}
	if !hostAllowed(r) {
		rpcError(w, http.StatusForbidden, -32600, "invalid Host header")
		return
	}
	if pv := r.Header.Get("Mcp-Protocol-Version"); pv != "" && pv < statelessVersion && !slices.Contains(mcp.SupportedProtocolVersions(), pv) {
		rpcError(w, http.StatusBadRequest, -32600, "unsupported MCP-Protocol-Version "+pv+" (supported: "+strings.Join(mcp.SupportedProtocolVersions(), ", ")+")")
		return
	}
	var body []byte
	var env envelope  // a POST body's messages, decoded once
	var method string // of a single-message POST body
	rc := http.NewResponseController(w)
	if r.Method == http.MethodPost && r.Body != nil {
		// A slow-loris body is cut off at ReadTimeout.
		_ = rc.SetReadDeadline(time.Now().Add(h.opts.ReadTimeout))
		var err error
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				rpcError(w, http.StatusRequestEntityTooLarge, -32700, "request body too large")
				return
			}
			rpcError(w, http.StatusBadRequest, -32700, "cannot read request body")
			return
		}
		var ok bool
		if env, ok = checkBody(w, body); !ok {
			return
		}
		var lifted []byte
		lifted, method = liftEnvelope(body, env)
		r.Body = io.NopCloser(bytes.NewReader(lifted))
	}
	// The request is read: its response may stream for as long as the
	// protocol needs (the server's ReadTimeout, if any, no longer applies;
	// the connection closing still ends the request).
	_ = rc.SetReadDeadline(time.Time{})
	stateless := r.Header.Get("Mcp-Protocol-Version") >= statelessVersion

	sid := r.Header.Get("Mcp-Session-Id")
	if !stateless {
		switch {
		case sid != "" && !validSessionID(sid):
			rpcErrorID(w, http.StatusBadRequest, env.id(), -32600, "invalid Mcp-Session-Id")
			return
		case sid == "" && r.Method != http.MethodPost:
			rpcError(w, http.StatusBadRequest, -32600, "missing Mcp-Session-Id")
			return
		}
	}

	// The agent, before the SDK sees the request.
	a, err := h.resolve(r)
	if err != nil || a == nil {
		if err == nil || errors.Is(err, agent.ErrUnauthorized) {
			challenge(w, r, h.opts.OAuth)
			rpcErrorID(w, http.StatusUnauthorized, env.id(), CodeUnauthorized, "unauthorized")
			return
		}
		h.srv.log.ErrorContext(r.Context(), "agent factory failed", "err", err)
		rpcErrorID(w, http.StatusInternalServerError, env.id(), -32603, "Internal error")
		return
	}
	principal := principalKey(a, err)
	res := &resolution{agent: a, err: err, conn: r.Context()}
	ti := &auth.TokenInfo{
		UserID: principal, // the SDK's own session/user binding backs ours up
		Extra:  map[string]any{resolutionKey: res},
	}

	if !stateless && sid != "" {
		if !h.enter(sid, principal) {
			// Unknown and foreign sessions get the same answer.
			rpcErrorID(w, http.StatusNotFound, env.id(), -32600, "session not found")
			return
		}
		defer h.leave(sid)
	}

	if !stateless && sid != "" && r.Method == http.MethodPost && env.calls() > 0 {
		h.calling(sid, 1)
		defer h.calling(sid, -1) // once the SDK has sent the answers
	}

	// Caps. A subscriptions/listen POST stays open like a GET listening
	// stream, and counts as one.
	switch {
	case r.Method == http.MethodGet, r.Method == http.MethodPost && method == "subscriptions/listen":
		if res.ticket = h.admission.admitListener(w, env.id(), principal); res.ticket == nil {
			return
		}
		defer res.ticket.release()
		if r.Method == http.MethodGet { // a listen is held where it runs (trackCalls)
			h.listening(sid)
			ctx, end, ok := h.srv.holdListener(r.Context(), func(close func()) { h.afterCalls(sid, close) })
			if !ok {
				rpcError(w, http.StatusServiceUnavailable, CodeShuttingDown, "server shutting down")
				return
			}
			defer end()
			r, res.conn = r.WithContext(ctx), ctx
		}
	case r.Method == http.MethodPost:
		if n := env.calls(); n > 0 {
			if res.ticket = h.admission.admitCalls(w, r, env.id(), principal, n); res.ticket == nil {
				return
			}
			defer res.ticket.release()
		}
	}

	rw := &responseWriter{ResponseWriter: w, timeout: h.opts.WriteTimeout}
	var created string
	if !stateless && sid == "" && r.Method == http.MethodPost {
		// A new session: within the principal's share, bind its id to the
		// principal before the client can learn it; its idle timer starts
		// when this request ends.
		if !h.reserve(principal) {
			refuse(w, http.StatusTooManyRequests, env.id(), CodeRateLimited, "too many sessions for this principal", "rate_limited")
			return
		}
		rw.onHeader = func(status int) {
			if id := w.Header().Get("Mcp-Session-Id"); id != "" && status < 300 {
				created = id
				h.bind(id, principal)
			}
		}
		defer func() {
			if created != "" {
				h.leave(created)
			} else {
				h.unreserve(principal)
			}
		}()
	}
	r = withTokenInfo(r, ti)
	if stateless {
		h.stateless.ServeHTTP(rw, r)
		return
	}
	if r.Method == http.MethodDelete {
		// The SDK closes a session only once its running calls return:
		// stop them first (statements, approvals waiting for a person).
		h.srv.calls.cancelSession(sid)
	}
	h.stateful.ServeHTTP(rw, r)
	if r.Method == http.MethodDelete && rw.status == http.StatusNoContent {
		h.forget(sid)
	}
}

// resolve builds the request's agent.
func (h *handler) resolve(r *http.Request) (*agent.Agent, error) {
	if h.opts.Agent != nil {
		return h.opts.Agent(r)
	}
	return h.srv.agents(r.Context(), RequestInfo{Header: r.Header, Request: r})
}

// validSessionID reports whether id is 1–128 characters of [A-Za-z0-9._-].
func validSessionID(id string) bool {
	if len(id) == 0 || len(id) > MaxSessionIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// hostAllowed is the DNS-rebinding check: a request that arrived on a
// loopback address must name a loopback host.
func hostAllowed(r *http.Request) bool {
	la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || la == nil || !isLoopback(la.String()) {
		return true
	}
	return isLoopback(r.Host)
}

func isLoopback(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// rpcErrorID answers a JSON-RPC error carrying the request's id (null when
// there is none), members in the usual order.
func rpcErrorID(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	rpcErrorData(w, status, id, code, msg, nil)
}

// rpcErrorData is rpcErrorID with the error's data member (omitted when
// nil).
func rpcErrorData(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string, data any) {
	if id == nil {
		id = json.RawMessage("null")
	}
	type rpcErr struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	writeJSON(w, status, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcErr          `json:"error"`
	}{"2.0", id, rpcErr{code, msg, data}})
}
