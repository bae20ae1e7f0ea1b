package mcpserver

import (
	"net/http"
	"net/url"
	"strings"
)

// originAllowed is the Origin rule of the MCP endpoint. A request without
// Origin (a native client) passes. A browser's Origin passes when it names
// the host the request was sent to (the server's own pages), when it is
// on the allowlist, or, when there is no allowlist, when it is a loopback
// origin (local tools such as the MCP Inspector). Anything else, "null"
// and unparsable origins included, is refused.
//
// Allowlist entries are host names ("app.example.com"), full origins
// ("https://app.example.com:8443"), or, with a leading dot, a domain and
// its subdomains (".example.com").
func originAllowed(origin, host string, allow []string) bool {
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if host != "" && strings.EqualFold(u.Host, host) {
		return true
	}
	if len(allow) > 0 {
		return originListed(origin, allow)
	}
	return isLoopback(u.Host)
}

// originListed reports whether origin is on the allowlist.
func originListed(origin string, allow []string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		switch {
		case a == "":
		case strings.HasPrefix(a, "."):
			if host == a[1:] || strings.HasSuffix(host, a) {
				return true
			}
		case host == a || strings.EqualFold(origin, a):
			return true
		}
	}
	return false
}

// corsHeaders are the request headers a browser client of the endpoint
// sends besides the CORS-safelisted ones.
var corsHeaders = []string{"Content-Type", "Authorization", "Mcp-Session-Id", "Mcp-Protocol-Version", "Last-Event-ID", APIKeyHeader, "X-Parse-Session-Token"}

// allowCORS lets a browser page of an allowlisted origin read the
// response (and the session id and protocol version headers).
func allowCORS(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate")
}

// preflight answers a CORS preflight of an allowlisted origin.
func preflight(w http.ResponseWriter, opts HTTPOptions) {
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "POST, GET, DELETE")
	headers := corsHeaders
	if opts.RequireHeader != "" {
		headers = append(headers[:len(headers):len(headers)], opts.RequireHeader)
	}
	h.Set("Access-Control-Allow-Headers", strings.Join(headers, ", "))
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}
