package mcpserver

import (
	"crypto/subtle"
	"errors"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/parsemcp/parsemcp/ratelimit"
)

// APIKeyHeader carries the standalone server's API key (a bearer token is
// accepted too).
const APIKeyHeader = "X-MCP-API-Key"

// RequireAPIKey admits only requests carrying key, compared in constant
// time, in X-MCP-API-Key or as a bearer token. Others get 401 with a
// JSON-RPC -32001 body. /health stays open for load balancers.
func RequireAPIKey(key string, next http.Handler) http.Handler {
	want := []byte(key)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		got := r.Header.Get(APIKeyHeader)
		if got == "" {
			if b, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
				got = strings.TrimSpace(b)
			}
		}
		if subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="parsemcp"`)
			writeJSON(w, http.StatusUnauthorized, map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": CodeUnauthorized, "message": "Unauthorized"}})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ErrPublicWithoutKey refuses to serve a non-loopback address with no API key.
var ErrPublicWithoutKey = errors.New("refusing to listen on a non-loopback address without an API key (set --api-key or PARSEMCP_API_KEY)")

// CheckBind returns ErrPublicWithoutKey when addr is not loopback-only and
// there is no API key. An empty host ("":8787) listens on every interface.
func CheckBind(addr, apiKey string) error {
	if apiKey != "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return ErrPublicWithoutKey
}

// PreAuthLimit limits requests per client address before any agent is
// built or body parsed, answering 429 with Retry-After. /health is exempt.
// The address is the one TrustedProxies.Handler recorded in front of it
// (behind a load balancer, each client its own bucket), else the peer's.
func PreAuthLimit(l ratelimit.Limiter, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			next.ServeHTTP(w, r)
			return
		}
		ok, retry, _ := l.Allow(r.Context(), "ip:"+clientAddrOf(r))
		if !ok {
			secs := int(math.Ceil(retry.Seconds()))
			w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"jsonrpc": "2.0", "id": nil,
				"error": map[string]any{"code": -32000, "message": "rate limited", "data": map[string]any{"retry_after": max(secs, 1)}}})
			return
		}
		next.ServeHTTP(w, r)
	})
}
