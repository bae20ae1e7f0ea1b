package sqlkit

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

var tracer = otel.Tracer("github.com/parsemcp/parsemcp/store")

// traced runs one statement of a read in its own span: the statement's
// text (its shape: values travel as arguments and are never recorded) and
// the rows it returned. Statements outside a traced request (start-up,
// the change feed) make no span.
func traced(ctx context.Context, db Querier, sqlText string, args []any, row func(vals []any) error) error {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return db.Query(ctx, sqlText, args, row)
	}
	ctx, span := tracer.Start(ctx, "db.query", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.query.text", sqlText)))
	n := 0
	err := db.Query(ctx, sqlText, args, func(vals []any) error {
		n++
		return row(vals)
	})
	span.SetAttributes(attribute.Int("db.response.returned_rows", n))
	if err != nil {
		span.SetStatus(codes.Error, "query failed")
	}
	span.End()
	return err
}

// traceWrite starts the span of one write transaction (insert, update or
// delete of rows of class; its statements' values are never recorded);
// end records how it ended.
func traceWrite(ctx context.Context, op, class string, rows int) (context.Context, func(error)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, func(error) {}
	}
	ctx, span := tracer.Start(ctx, "db.write", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("db.operation.name", op), attribute.String("db.collection.name", class), attribute.Int("parsemcp.rows", rows)))
	return ctx, func(err error) {
		if err != nil {
			span.SetStatus(codes.Error, "write failed")
		}
		span.End()
	}
}
