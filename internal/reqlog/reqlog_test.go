package reqlog_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/parsemcp/parsemcp/internal/reqlog"
)

func TestHandlerAddsContextIDs(t *testing.T) {
	var b bytes.Buffer
	log, err := reqlog.New(&b, "json", slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ctx := trace.ContextWithSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid}))
	ctx = reqlog.WithCorrelationID(reqlog.WithRequestID(ctx, "req-1"), "corr-1")
	ctx = reqlog.WithClientAddr(ctx, "203.0.113.7")
	log.With("component", "test").InfoContext(ctx, "hello")
	log.Info("no context ids")
	dec := json.NewDecoder(&b)
	var first, second map[string]any
	if err := dec.Decode(&first); err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(&second); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"request_id": "req-1", "client_addr": "203.0.113.7", "correlation_id": "corr-1", "trace_id": tid.String(), "span_id": sid.String(), "component": "test"} {
		if first[k] != v {
			t.Errorf("%s = %v, want %s", k, first[k], v)
		}
	}
	if _, ok := second["request_id"]; ok {
		t.Errorf("a line without a request context got an id: %v", second)
	}
	if _, err := reqlog.New(&b, "xml", slog.LevelInfo); err == nil {
		t.Error("an unknown format was accepted")
	}
}

func TestValidRequestID(t *testing.T) {
	for id, want := range map[string]bool{"abc-123_x.y": true, "": false, "a b": false, "x\ny": false, string(make([]byte, 65)): false, "é": false} {
		if got := reqlog.ValidRequestID(id); got != want {
			t.Errorf("ValidRequestID(%q) = %v", id, got)
		}
	}
}
