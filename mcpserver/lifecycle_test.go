package mcpserver_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
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

// openStream sends a request whose response streams, reads its first
// bytes (what the server sent at once), and returns them and a channel
// that receives the rest of the body and the read's error when the
// response ends.
func openStream(t *testing.T, req *http.Request, until string) (string, <-chan streamEnd) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s", req.Method, req.Header.Get("Mcp-Method"), resp.StatusCode, b)
	}
	var first []byte
	buf := make([]byte, 4096)
	for !strings.Contains(string(first), until) {
		n, err := resp.Body.Read(buf)
		first = append(first, buf[:n]...)
		if err != nil {
			t.Fatalf("%s: %v after %q", req.Method, err, first)
		}
	}
	end := make(chan streamEnd, 1)
	go func() {
		rest, err := io.ReadAll(resp.Body)
		end <- streamEnd{string(rest), err}
	}()
	return string(first), end
}

type streamEnd struct {
	rest string
	err  error
}

func streamRequest(t *testing.T, method, url, session, body string) *http.Request {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer alice-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	return req
}

// awaitEnd waits for a stream to end; the deadline only bounds a hang.
func awaitEnd(t *testing.T, what string, end <-chan streamEnd) streamEnd {
	t.Helper()
	select {
	case e := <-end:
		if e.err != nil {
			t.Fatalf("%s was cut, not closed: %v", what, e.err)
		}
		return e
	case <-time.After(30 * time.Second):
		t.Fatalf("%s is still open", what)
	}
	return streamEnd{}
}

// Shutdown ends the listening streams at once, with a clean close, while a
// call still runs: a session's GET stream and a subscriptions/listen
// (answered with its result). The GET stream of the session whose call
// runs stays until the call is answered (a client whose GET stream cannot
// be resumed would give its session up, and the call with it). New
// streams are refused.
func TestShutdownEndsListeningStreams(t *testing.T) {
	srv, started, release := holdServer(t, nil)
	url := mount(t, mcpserver.HandlerOptions{Server: srv})
	listening := initSession(t, url, "alice-token")
	_, listenEnd := openStream(t, streamRequest(t, http.MethodGet, url, listening, ""), ": ok")
	calling := initSession(t, url, "alice-token")
	_, callerStreamEnd := openStream(t, streamRequest(t, http.MethodGet, url, calling, ""), ": ok")
	callReq := streamRequest(t, http.MethodPost, url, calling, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"hold_test","arguments":{}}}`)
	called := make(chan streamEnd, 1)
	go func() {
		resp, err := http.DefaultClient.Do(callReq)
		if err != nil {
			called <- streamEnd{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		called <- streamEnd{string(b), err}
	}()
	<-started
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	listen := func() *http.Request {
		req := streamRequest(t, http.MethodPost, url, "", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta+`}}`)
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		return req
	}
	_, subEnd := openStream(t, listen(), "subscriptions/acknowledged")

	down := make(chan error, 1)
	go func() { down <- srv.Shutdown(context.Background()) }()
	awaitEnd(t, "the GET stream", listenEnd)
	if e := awaitEnd(t, "the subscriptions/listen", subEnd); !strings.Contains(e.rest, `"id":1,"result"`) {
		t.Errorf("the listen ended without its result: %q", e.rest)
	}
	select {
	case e := <-called:
		t.Fatalf("the call ended before its release: %+v", e)
	case e := <-callerStreamEnd:
		t.Fatalf("the calling session's GET stream ended before its call was answered: %+v", e)
	default:
	}
	if r := raw(t, http.MethodGet, url, "alice-token", listening, ""); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"code":-32002`) {
		t.Errorf("a GET stream during shutdown: %d %s, want 503 -32002", r.status, r.body)
	}
	if r := raw(t, http.MethodPost, url, "alice-token", "", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+meta+`}}`,
		"Mcp-Protocol-Version", "2026-07-28", "Mcp-Method", "subscriptions/listen"); !strings.Contains(r.body, `"code":-32002`) {
		t.Errorf("a listen during shutdown: %d %s, want -32002", r.status, r.body)
	}

	close(release)
	if e := <-called; e.err != nil || !strings.Contains(e.rest, `"id":7,"result"`) || strings.Contains(e.rest, `"isError":true`) {
		t.Fatalf("the call in flight: %+v", e)
	}
	awaitEnd(t, "the calling session's GET stream", callerStreamEnd)
	if err := <-down; err != nil {
		t.Fatal(err)
	}
}
