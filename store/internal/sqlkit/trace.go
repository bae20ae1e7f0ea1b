package sqlkit

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

var tracer = otel.Tracer("github.com/parsemcp/parsemcp/store")

// TraceStatement starts the span of one statement: its text, which is its
// shape (values travel as arguments and are never recorded); end records
// the rows it returned or wrote and how it ended. Statements outside a
// traced request (start-up, the change feed) make no span.
func TraceStatement(ctx context.Context, sqlText string) (_ context.Context, end func(rows int, err error)) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ctx, func(int, error) {}
	}
	ctx, span := tracer.Start(ctx, "db.query", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("db.query.text", sqlText)))
	return ctx, func(rows int, err error) {
		span.SetAttributes(attribute.Int("db.response.returned_rows", rows))
		if err != nil {
			span.SetStatus(codes.Error, "statement failed")
		}
		span.End()
	}
}

// traced runs one statement returning rows (by query: a Querier's Query
// or QueryRawText) in its own span.
func traced(ctx context.Context, query queryFunc, sqlText string, args []any, row func(vals []any) error) error {
	ctx, end := TraceStatement(ctx, sqlText)
	n := 0
	err := query(ctx, sqlText, args, func(vals []any) error {
		n++
		return row(vals)
	})
	end(n, err)
	return err
}

// exec runs one statement returning no rows in its own span.
func exec(ctx context.Context, db Querier, sqlText string, args ...any) error {
	ctx, end := TraceStatement(ctx, sqlText)
	err := db.Exec(ctx, sqlText, args...)
	end(0, err)
	return err
}

// commit commits tx in the span of its COMMIT.
func commit[T Tx](ctx context.Context, tx T, w Written) error {
	ctx, end := TraceStatement(ctx, "COMMIT")
	err := tx.Commit(ctx, w)
	end(0, err)
	return err
}

// traceWrite starts the span of one write transaction (insert, update or
// delete of rows of class), the parent of its statements' spans; end
// records how it ended.
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
