package mcpserver

import (
	"encoding/json"
	"mime"
	"net/http"
	"strings"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
)

// MaxJSONNesting bounds how deeply a request body may nest.
const MaxJSONNesting = 20

// smuggleable are the headers whose underscore spellings are dropped: a
// proxy that folds "_" into "-" would let such a header overwrite a
// trusted one.
var smuggleable = []string{"authorization", "x-mcp-api-key", "x-parse-session-token", "mcp-session-id",
	"mcp-protocol-version", "origin", "host", "x-forwarded-for", "x-real-ip", "cookie"}

// stripSmuggled removes underscore spellings of sensitive headers.
func stripSmuggled(h http.Header) {
	for name := range h {
		if !strings.Contains(name, "_") {
			continue
		}
		folded := strings.ToLower(strings.ReplaceAll(name, "_", "-"))
		for _, s := range smuggleable {
			if folded == s {
				delete(h, name)
				break
			}
		}
	}
}

func rpcError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": msg}})
}

// precheck runs the checks that need no body; false means it answered.
func precheck(w http.ResponseWriter, r *http.Request, opts HTTPOptions) bool {
	stripSmuggled(r.Header)
	origin := r.Header.Get("Origin")
	if !originAllowed(origin, r.Host, opts.AllowedOrigins) {
		rpcError(w, http.StatusForbidden, -32600, "origin not allowed")
		return false
	}
	cors := origin != "" && originListed(origin, opts.AllowedOrigins)
	if cors {
		allowCORS(w, origin)
	}
	switch r.Method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
	case http.MethodOptions:
		if cors && r.Header.Get("Access-Control-Request-Method") != "" {
			preflight(w, opts)
			return false
		}
		fallthrough
	default:
		w.Header().Set("Allow", "POST, GET, DELETE")
		rpcError(w, http.StatusMethodNotAllowed, -32600, "method not allowed: use POST (GET for the notification stream, DELETE to end a session)")
		return false
	}
	if opts.RequireHeader != "" && strings.TrimSpace(r.Header.Get(opts.RequireHeader)) == "" {
		rpcError(w, http.StatusForbidden, -32600, "missing required header "+opts.RequireHeader)
		return false
	}
	if r.Method == http.MethodPost {
		ct, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || ct != "application/json" {
			rpcError(w, http.StatusUnsupportedMediaType, -32700, "Content-Type must be application/json")
			return false
		}
	}
	return true
}

// checkBody validates a POST body and returns its messages, decoded once
// (envelope); false means it answered.
func checkBody(w http.ResponseWriter, body []byte) (envelope, bool) {
	if jsonenc.NestingDepth(body, MaxJSONNesting) > MaxJSONNesting {
		rpcError(w, http.StatusBadRequest, -32700, "JSON nested too deeply")
		return envelope{}, false
	}
	env, ok := parseEnvelope(body)
	if !ok && !json.Valid(body) {
		rpcError(w, http.StatusBadRequest, -32700, "Parse error: the body is not valid JSON")
		return envelope{}, false
	}
	if !ok || !env.wellFormed() {
		rpcError(w, http.StatusBadRequest, -32600, "Invalid Request: expected a JSON-RPC 2.0 message")
		return envelope{}, false
	}
	return env, true
}
