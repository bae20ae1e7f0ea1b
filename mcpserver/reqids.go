package mcpserver

import (
	"context"
	"net/http"

	"github.com/parsemcp/parsemcp/internal/reqlog"
)

// RequestIDHeader names an HTTP request's id: taken from the client when
// well-formed (a load balancer's id), else made up; echoed in the response.
const RequestIDHeader = "X-Request-Id"

// withRequestID gives every HTTP request an id in its context, its
// headers (which the SDK hands to the method handlers) and its response.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(RequestIDHeader)
		if !reqlog.ValidRequestID(id) {
			id = reqlog.NewID()
			r.Header.Set(RequestIDHeader, id)
		}
		w.Header().Set(RequestIDHeader, id)
		next.ServeHTTP(w, r.WithContext(reqlog.WithRequestID(r.Context(), id)))
	})
}

// requestIDs puts the request id into each MCP request's context: the
// HTTP request's, or a new one per message over stdio; and the HTTP
// client's address (TrustedProxies.Handler), for logs and audit.
func (s *Server) requestIDs(next Handler) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		id := ""
		if ex := r.Params.GetExtra(); ex != nil && ex.Header != nil {
			id = ex.Header.Get(RequestIDHeader)
		}
		if !reqlog.ValidRequestID(id) {
			id = reqlog.NewID()
		}
		if res, ok := resolvedFrom(r.Params.GetExtra()); ok && res.conn != nil {
			ctx = reqlog.WithClientAddr(ctx, reqlog.ClientAddr(res.conn))
		}
		return next(reqlog.WithRequestID(ctx, id), r)
	}
}
