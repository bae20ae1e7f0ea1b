// Package telemetry turns on OpenTelemetry tracing from the standard
// OTEL_* environment variables: off unless OTEL_TRACES_EXPORTER=otlp or an
// OTLP endpoint (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, and off whenever
// OTEL_SDK_DISABLED=true. Spans go out over OTLP/HTTP (protobuf); the
// exporter reads its endpoint, headers, timeout and TLS settings from the
// same variables, the batch processor OTEL_BSP_*, the resource
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
package telemetry

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Enabled reports whether the environment asks for traces.
func Enabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	switch strings.ToLower(getenv("OTEL_TRACES_EXPORTER")) {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// on is set once Setup has installed a tracer provider.
var on atomic.Bool

// On reports whether Setup installed a tracer provider. Without one no
// span is recorded, so the code that makes spans skips its work
// (attributes, the span itself) when On is false; an incoming trace
// context is still carried, for the log lines and the peers it is sent to.
func On() bool { return on.Load() }

// Setup installs the global tracer provider and the W3C trace-context
// propagator when the environment asks for traces. shutdown flushes the
// spans still buffered; it is a no-op when tracing is off.
func Setup(ctx context.Context, version string) (enabled bool, shutdown func(context.Context) error, err error) {
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if !Enabled(os.Getenv) {
		return false, func(context.Context) error { return nil }, nil
	}
	for _, v := range []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		if p := os.Getenv(v); p != "" && p != "http/protobuf" {
			return false, nil, fmt.Errorf("%s=%s: only http/protobuf is supported", v, p)
		}
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return false, nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(
		attribute.String("service.name", "parsemcp"), attribute.String("service.version", version)))
	if err != nil {
		return false, nil, err
	}
	if env, err := resource.New(ctx, resource.WithFromEnv()); err == nil {
		if merged, err := resource.Merge(res, env); err == nil {
			res = merged
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	otel.SetTracerProvider(tp)
	on.Store(true)
	return true, tp.Shutdown, nil
}
