// Package reqlog carries a request's ids in its context and puts them on
// every log line written with that context: request_id (one HTTP request
// or stdio message), client_addr (the HTTP client's address, as
// mcpserver.TrustedProxies decides it), correlation_id (one tool call, also
// in its audit event and in a sanitized internal error) and the
// OpenTelemetry trace_id and span_id when the request is traced.
package reqlog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

type requestKey struct{}
type correlationKey struct{}
type clientKey struct{}

// NewID returns a random id of 12 hex digits.
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// WithRequestID returns ctx carrying the request id (empty: ctx itself).
func WithRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestKey{}, id)
}

// RequestID is ctx's request id, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(requestKey{}).(string)
	return id
}

// WithClientAddr returns ctx carrying the client's address (empty: ctx
// itself).
func WithClientAddr(ctx context.Context, addr string) context.Context {
	if addr == "" {
		return ctx
	}
	return context.WithValue(ctx, clientKey{}, addr)
}

// ClientAddr is ctx's client address, or "".
func ClientAddr(ctx context.Context) string {
	a, _ := ctx.Value(clientKey{}).(string)
	return a
}

// WithCorrelationID returns ctx carrying a tool call's correlation id.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, correlationKey{}, id)
}

// CorrelationID is ctx's correlation id, or "".
func CorrelationID(ctx context.Context) string {
	id, _ := ctx.Value(correlationKey{}).(string)
	return id
}

// TraceID is the id of ctx's trace, or "" when it is not traced.
func TraceID(ctx context.Context) string {
	if sc := trace.SpanContextFromContext(ctx); sc.HasTraceID() {
		return sc.TraceID().String()
	}
	return ""
}

// ValidRequestID reports whether a client-supplied X-Request-Id may be
// used as given: 1 to 64 letters, digits, '-', '_' or '.'.
func ValidRequestID(id string) bool { return SafeID(id, 64) }

// SafeID reports whether a client-supplied identifier may go into logs
// and audit events as given: 1 to maxLen letters, digits, '-', '_' or
// '.' (nothing a log line could be forged with).
func SafeID(id string, maxLen int) bool {
	if id == "" || len(id) > maxLen {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Handler adds the context's ids to each record.
type Handler struct{ inner slog.Handler }

// NewHandler wraps h.
func NewHandler(h slog.Handler) *Handler { return &Handler{inner: h} }

// Enabled reports whether the inner handler takes level.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool { return h.inner.Enabled(ctx, l) }

// Handle adds the ids and passes the record on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if ctx != nil {
		if id := RequestID(ctx); id != "" {
			r.AddAttrs(slog.String("request_id", id))
		}
		if a := ClientAddr(ctx); a != "" {
			r.AddAttrs(slog.String("client_addr", a))
		}
		if id := CorrelationID(ctx); id != "" && !has(r, "correlation_id") {
			r.AddAttrs(slog.String("correlation_id", id))
		}
		if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
			r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return h.inner.Handle(ctx, r)
}

func has(r slog.Record, key string) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		found = a.Key == key
		return !found
	})
	return found
}

// WithAttrs wraps the inner handler's.
func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler { return &Handler{h.inner.WithAttrs(as)} }

// WithGroup wraps the inner handler's.
func (h *Handler) WithGroup(name string) slog.Handler { return &Handler{h.inner.WithGroup(name)} }

// New returns a logger writing format ("text" or "json") to w at level,
// with the ids of each line's context.
func New(w io.Writer, format string, level slog.Level) (*slog.Logger, error) {
	o := &slog.HandlerOptions{Level: level}
	switch format {
	case "", "text":
		return slog.New(NewHandler(slog.NewTextHandler(w, o))), nil
	case "json":
		return slog.New(NewHandler(slog.NewJSONHandler(w, o))), nil
	}
	return nil, fmt.Errorf("log format %q: want text or json", format)
}
