package mcpserver_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/tools"
)

// eventSink keeps the audit events it receives.
type eventSink struct {
	mu     sync.Mutex
	events []audit.Event
}

func (s *eventSink) Record(_ context.Context, e audit.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *eventSink) all() []audit.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audit.Event(nil), s.events...)
}

// holdServer has a tool, hold_test, that signals started and returns when
// released (ok) or when its context ends (its error).
func holdServer(t *testing.T, sink audit.Sink) (*mcpserver.Server, chan struct{}, chan struct{}) {
	t.Helper()
	started, release := make(chan struct{}, 16), make(chan struct{})
	reg := tools.NewRegistry()
	if err := reg.Register(&tools.Tool{Name: "hold_test", Description: "holds until released", Category: "query", Permission: agent.Readonly, ReadOnly: true,
		Input: &jsonschema.Schema{Type: "object"},
		Handler: func(ctx context.Context, _ *tools.Call) (any, error) {
			started <- struct{}{}
			select {
			case <-release:
				return map[string]any{"ok": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Tools: reg, Audit: sink,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, started, release
}

// waitRefusing waits until the server refuses new requests as shutting down.
func waitRefusing(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := cs.ListTools(context.Background(), nil)
		var je *jsonrpc.Error
		if errors.As(err, &je) && je.Code == mcpserver.CodeShuttingDown {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still admits requests during shutdown: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

// Shutdown stops admitting, waits for the running call, and returns only
// once it ended, so its audit event is recorded before sinks close.
func TestShutdownWaitsForCalls(t *testing.T) {
	sink := &eventSink{}
	srv, started, release := holdServer(t, sink)
	cs := connect(t, srv, "")
	called := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hold_test", Arguments: map[string]any{}})
		called <- res
	}()
	<-started
	other := connect(t, srv, "")
	down := make(chan error, 1)
	go func() { down <- srv.Shutdown(context.Background()) }()
	waitRefusing(t, other)
	select {
	case err := <-down:
		t.Fatalf("Shutdown returned while a call ran: %v", err)
	default:
	}
	close(release)
	if err := <-down; err != nil {
		t.Fatal(err)
	}
	if ev := sink.all(); len(ev) != 1 || !ev[0].Success || ev[0].Tool != "hold_test" {
		t.Fatalf("audit events when Shutdown returned: %+v", ev)
	}
	if res := <-called; res == nil || res.IsError {
		t.Fatalf("the running call: %+v", res)
	}
}

// Past its grace, Shutdown cancels what still runs and waits for it.
func TestShutdownCancelsAfterGrace(t *testing.T) {
	sink := &eventSink{}
	srv, started, _ := holdServer(t, sink)
	cs := connect(t, srv, "")
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hold_test", Arguments: map[string]any{}})
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace at all
	if err := srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Shutdown: %v, want the grace's error", err)
	}
	if ev := sink.all(); len(ev) != 1 || ev[0].Success || ev[0].ErrorCode != tools.CodeCancelled {
		t.Fatalf("audit events when Shutdown returned: %+v", ev)
	}
}
