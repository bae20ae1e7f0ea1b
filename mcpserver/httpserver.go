package mcpserver

import (
	"net/http"
	"time"
)

// Connection timeouts of the standalone server.
const (
	// DefaultHeaderTimeout bounds the reading of a request's headers.
	DefaultHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection left idle this long.
	DefaultIdleTimeout = 60 * time.Second
)

// ServerOptions are the connection timeouts of NewHTTPServer (zero values
// take the defaults).
type ServerOptions struct {
	// HeaderTimeout bounds the reading of a request's headers (default
	// 10 s).
	HeaderTimeout time.Duration
	// ReadTimeout bounds the reading of a whole request, body included
	// (default DefaultReadTimeout). The MCP endpoint lifts it once a
	// request is read, so long-lived streams stay open.
	ReadTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long (default
	// 60 s).
	IdleTimeout time.Duration
}

// NewHTTPServer returns the http.Server `parsemcp serve` runs h with:
// slow-loris clients (headers or a body trickling in) and idle keep-alive
// connections are cut off. It sets no WriteTimeout, which would end every
// event stream: HTTPOptions.WriteTimeout bounds each write instead.
func NewHTTPServer(h http.Handler, o ServerOptions) *http.Server {
	if o.HeaderTimeout <= 0 {
		o.HeaderTimeout = DefaultHeaderTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	return &http.Server{Handler: h, ReadHeaderTimeout: o.HeaderTimeout, ReadTimeout: o.ReadTimeout, IdleTimeout: o.IdleTimeout}
}
