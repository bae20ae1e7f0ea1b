package parserest

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

var tracer = otel.Tracer("github.com/parsemcp/parsemcp/store/parserest")

// traceCall starts the span of one REST call to Parse Server (each retry
// is a call of its own): its method and the shape of its path, never its
// query string or body, which hold values. The request carries the trace
// on to Parse Server (traceparent). Calls outside a traced request make
// no span.
func traceCall(ctx context.Context, req *http.Request, path string, attempt int) func(status, code int, err error) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return func(int, int, error) {}
	}
	shape := pathShape(path)
	attrs := []attribute.KeyValue{
		attribute.String("http.request.method", req.Method), attribute.String("url.template", shape),
		attribute.String("server.address", req.URL.Hostname()),
	}
	if attempt > 1 {
		attrs = append(attrs, attribute.Int("http.request.resend_count", attempt-1))
	}
	ctx, span := tracer.Start(ctx, req.Method+" "+shape, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(req.Header))
	return func(status, code int, err error) {
		if status != 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		if code != 0 {
			span.SetAttributes(attribute.Int("parse.error.code", code))
		}
		if err != nil || status >= 400 {
			desc := "call failed"
			if status != 0 {
				desc = strconv.Itoa(status)
			}
			span.SetStatus(codes.Error, desc)
		}
		span.End()
	}
}

// pathShape is a REST path with its ids left out: the first two segments
// (the collection and a class or function name, e.g. /classes/Ticket) are
// names; any segment after them (an objectId) becomes {objectId}.
func pathShape(path string) string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := 2; i < len(segs); i++ {
		segs[i] = "{objectId}"
	}
	return "/" + strings.Join(segs, "/")
}
