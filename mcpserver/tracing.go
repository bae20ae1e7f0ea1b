package mcpserver

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/parsemcp/parsemcp/internal/telemetry"
)

// tracer makes this package's spans: one per MCP request, the guard
// chain and the tool of a tools/call, each subscription delivery. Spans
// carry names (method, tool, class, profile), codes and sizes, never
// argument values or row data. Without a configured provider
// (internal/telemetry.On) none is made.
var tracer = otel.Tracer("github.com/parsemcp/parsemcp/mcpserver")

// Span attribute keys.
const (
	attrMethod  = attribute.Key("mcp.method.name")
	attrTool    = attribute.Key("gen_ai.tool.name")
	attrClass   = attribute.Key("parsemcp.class")
	attrProfile = attribute.Key("parsemcp.agent.profile")
	attrCode    = attribute.Key("parsemcp.error_code")
	attrBytes   = attribute.Key("parsemcp.result.bytes")
	attrRPCCode = attribute.Key("rpc.jsonrpc.error_code")
)

// traceRequests starts each MCP request's span, continuing the trace of
// the HTTP request's traceparent header when there is one (over stdio each
// request starts a trace).
func (s *Server) traceRequests(next Handler) Handler {
	return func(ctx context.Context, r *Request) (any, error) {
		if ex := r.Params.GetExtra(); ex != nil && ex.Header != nil {
			ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(ex.Header))
		}
		if !telemetry.On() {
			return next(ctx, r)
		}
		name, attrs := r.Method, []attribute.KeyValue{attrMethod.String(r.Method)}
		if ct, ok := r.Params.(*mcp.CallToolRequest); ok && ct.Params != nil {
			name += " " + ct.Params.Name
			attrs = append(attrs, attrTool.String(ct.Params.Name))
		}
		ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
		defer span.End()
		res, err := next(ctx, r)
		if err != nil {
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				span.SetAttributes(attrRPCCode.Int64(je.Code))
			}
			span.SetStatus(codes.Error, "json-rpc error")
		}
		return res, err
	}
}

// startToolSpan starts the span of a tool call's guard chain; with
// tracing off, a span that records nothing, made without allocating.
func startToolSpan(ctx context.Context, inv *Invocation) (context.Context, trace.Span) {
	if !telemetry.On() {
		return ctx, trace.SpanFromContext(ctx)
	}
	attrs := []attribute.KeyValue{attrTool.String(inv.Tool.Name)}
	if c := argClass(inv.Args); c != "" {
		attrs = append(attrs, attrClass.String(c))
	}
	if inv.Agent != nil && inv.Agent.Policy.Name != "" {
		attrs = append(attrs, attrProfile.String(inv.Agent.Policy.Name))
	}
	return tracer.Start(ctx, "guard chain", trace.WithAttributes(attrs...))
}

// endToolSpan records how the call ended: its error code, its size.
func endToolSpan(span trace.Span, data any, code string) {
	if !span.IsRecording() {
		return
	}
	if raw, ok := data.(json.RawMessage); ok {
		span.SetAttributes(attrBytes.Int(len(raw)))
	}
	if code != "" {
		span.SetAttributes(attrCode.String(code))
		span.SetStatus(codes.Error, code)
	}
	span.End()
}

// argClass is the class a tool call names (class_name), a name and not a
// value; "" when there is none.
func argClass(raw json.RawMessage) string {
	var a struct {
		Class string `json:"class_name"`
	}
	if json.Unmarshal(raw, &a) != nil || len(a.Class) > 128 {
		return ""
	}
	return a.Class
}

// traceDelivery is the span of one subscription notification sent.
func traceDelivery(uri string) (context.Context, trace.Span) {
	return tracer.Start(context.Background(), "subscription deliver", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attrClass.String(uriClass(uri))))
}

// uriClass is the class of a parse://Class/... URI.
func uriClass(uri string) string {
	const p = "parse://"
	if len(uri) <= len(p) || uri[:len(p)] != p {
		return ""
	}
	rest := uri[len(p):]
	for i := range len(rest) {
		if rest[i] == '/' || rest[i] == '?' {
			return rest[:i]
		}
	}
	return rest
}
