package mcpserver

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/jonboulle/clockwork"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/tools"
)

// admEnv is one server behind the real HTTP handler, with a tool that
// holds until released (or its context ends), fails, or panics, and an
// event for every HTTP request that carried X-Test-End: its ServeHTTP has
// returned, so whatever it held of the caps has been given back.
type admEnv struct {
	srv     *Server
	h       *handler
	url     string
	clock   *clockwork.FakeClock // the server's (tool time limits)
	started chan struct{}
	release chan struct{}
	ends    chan string
}

// admAgents: one user per bearer token.
func admAgents(r *http.Request) (*agent.Agent, error) {
	user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || user == "" {
		return nil, agent.ErrUnauthorized
	}
	return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: user}), nil
}

func newAdmEnv(t *testing.T, opts HTTPOptions) *admEnv {
	t.Helper()
	e := &admEnv{clock: clockwork.NewFakeClock(), started: make(chan struct{}, 16), release: make(chan struct{}), ends: make(chan string, 64)}
	reg := tools.NewRegistry()
	if err := reg.Register(&tools.Tool{Name: "hold_test", Description: "holds, fails or panics", Category: "query", Permission: agent.Readonly, ReadOnly: true,
		Input: &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"mode": {Type: "string"}}},
		Handler: func(ctx context.Context, c *tools.Call) (any, error) {
			switch {
			case strings.Contains(string(c.Args), `"quick"`):
				return map[string]any{"ok": true}, nil
			case strings.Contains(string(c.Args), `"fail"`):
				return nil, &tools.Error{Code: tools.CodeInvalidArgument, Message: "asked to fail"}
			case strings.Contains(string(c.Args), `"panic"`):
				panic("asked to panic")
			}
			e.started <- struct{}{}
			select {
			case <-e.release:
				return map[string]any{"ok": true}, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}}); err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Store: fixture.Store(t, filepath.Join(t.TempDir(), "f.sqlite")), Tools: reg, Clock: e.clock,
		Timeouts: map[string]time.Duration{"hold_test": time.Minute},
		Agents:   func(context.Context, RequestInfo) (*agent.Agent, error) { return nil, agent.ErrUnauthorized }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	opts.AdmissionWait = -1 // over a cap: refused at once, never a wait
	hh, err := NewHandler(HandlerOptions{Server: srv, HTTPOptions: opts, Agent: admAgents})
	if err != nil {
		t.Fatal(err)
	}
	e.srv, e.h = srv, hh.(*handler)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.h.ServeHTTP(w, r)
		if n := r.Header.Get("X-Test-End"); n != "" {
			e.ends <- n
		}
	}))
	t.Cleanup(ts.Close)
	t.Cleanup(func() { // first: calls a failed test left holding end
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = srv.Shutdown(ctx)
	})
	e.url = ts.URL
	return e
}

type admResp struct {
	status int
	sid    string
	body   string
	err    error
}

// send sends one request as user (end names it for waitEnd) and reads
// the whole answer.
func (e *admEnv) send(ctx context.Context, method, user, sid, end, body string) admResp {
	req, _ := http.NewRequestWithContext(ctx, method, e.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set("Authorization", "Bearer "+user)
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	if end != "" {
		req.Header.Set("X-Test-End", end)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return admResp{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return admResp{resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), err}
}

// open starts a request whose answer streams (a GET) and returns once its
// headers arrived; cancel drops it.
func (e *admEnv) open(t *testing.T, user, sid, end string) (status int, drop func()) {
	t.Helper()
	return e.stream(t, user, end, func(ctx context.Context) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		return req
	})
}

const admListenMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// listen starts a subscriptions/listen of user (protocol 2026-07-28, no
// session) and returns once its headers arrived; cancel drops it.
func (e *admEnv) listen(t *testing.T, user, end string) (status int, drop func()) {
	t.Helper()
	return e.stream(t, user, end, func(ctx context.Context) *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url, strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+admListenMeta+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		return req
	})
}

// stream sends the request build makes as user (end names it for
// waitEnd) and returns once its headers arrived; cancel drops it.
func (e *admEnv) stream(t *testing.T, user, end string, build func(context.Context) *http.Request) (status int, drop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req := build(ctx)
	req.Header.Set("Authorization", "Bearer "+user)
	req.Header.Set("X-Test-End", end)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode, func() { cancel(); resp.Body.Close() }
}

const admInit = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// session opens an initialized session of user.
func (e *admEnv) session(t *testing.T, user string) string {
	t.Helper()
	r := e.send(context.Background(), http.MethodPost, user, "", "", admInit)
	if r.status != http.StatusOK || r.sid == "" {
		t.Fatalf("initialize for %s: %d %v %s", user, r.status, r.err, r.body)
	}
	if r := e.send(context.Background(), http.MethodPost, user, r.sid, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`); r.status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", r.status, r.body)
	}
	return r.sid
}

func holdCall(id int, mode string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hold_test","arguments":{"mode":%q}}}`, id, mode)
}

// start sends a holding call of user in the background; it returns once
// the tool runs, and the call's answer arrives on the channel.
func (e *admEnv) start(t *testing.T, ctx context.Context, user, sid, end string) chan admResp {
	t.Helper()
	done := make(chan admResp, 1)
	go func() { done <- e.send(ctx, http.MethodPost, user, sid, end, holdCall(7, "hold")) }()
	select {
	case <-e.started:
	case r := <-done:
		t.Fatalf("the holding call ended before its tool ran: %d %v %s", r.status, r.err, r.body)
	}
	return done
}

// waitEnd waits until the request named end has left the handler.
func (e *admEnv) waitEnd(t *testing.T, end string) {
	t.Helper()
	deadline := time.After(time.Minute) // bounds a hang only
	for {
		select {
		case n := <-e.ends:
			if n == end {
				return
			}
		case <-deadline:
			t.Fatalf("request %q never left the handler", end)
		}
	}
}

// held reports what user holds of the caps: in-flight slots, listening
// streams, and whether its gate is still kept (users holding or waiting);
// and what the server's stream and listener gates hold.
func (e *admEnv) held(user string) (slots, listeners int, kept bool, streams, allListeners int) {
	a := e.h.admission
	a.mu.Lock()
	defer a.mu.Unlock()
	key := principalKey(agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: user}), nil)
	if p := a.principals[key]; p != nil {
		slots, listeners, kept = len(p.slots), p.listeners, true
	}
	return slots, listeners, kept, len(a.streams.slots), len(a.listeners.slots)
}

// free requires that user holds nothing, and the server's gates hold
// streams and listeners.
func (e *admEnv) free(t *testing.T, user string, streams, listeners int) {
	t.Helper()
	s, l, kept, gs, gl := e.held(user)
	if s != 0 || l != 0 || kept || gs != streams || gl != listeners {
		t.Fatalf("%s holds %d slots and %d listening streams (gate kept: %v); the server's gates hold %d streams and %d listeners, want %d and %d",
			user, s, l, kept, gs, gl, streams, listeners)
	}
}

// admitted requires that user's next call is admitted at once and runs.
func (e *admEnv) admitted(t *testing.T, user, sid string) {
	t.Helper()
	r := e.send(context.Background(), http.MethodPost, user, sid, "", holdCall(9, "quick"))
	if r.status != http.StatusOK || !strings.Contains(r.body, `\"ok\":true`) {
		t.Fatalf("%s's next call: %d %v %s", user, r.status, r.err, r.body)
	}
}

// listenerGivenBack opens one of alice's listening streams (what, opened
// by open), has a second refused past her share (1 of MaxListeners 2)
// without it taking anything, closes the first, and requires that the
// share came back: nothing is held and a new one opens.
func listenerGivenBack(t *testing.T, e *admEnv, what string, open func(end string) (status int, drop func())) {
	t.Helper()
	status, drop := open("first")
	if status != http.StatusOK {
		t.Fatalf("%s: %d", what, status)
	}
	if status, _ := open("over"); status != http.StatusTooManyRequests {
		t.Fatalf("a second %s: %d", what, status)
	}
	e.waitEnd(t, "over")
	if _, l, _, _, gl := e.held("alice"); l != 1 || gl != 1 {
		t.Fatalf("after a refused %s: alice holds %d listening streams, the server %d; want 1 and 1", what, l, gl)
	}
	drop()
	e.waitEnd(t, "first")
	e.free(t, "alice", 0, 0)
	if status, _ := open("again"); status != http.StatusOK {
		t.Fatalf("%s after the first closed: %d", what, status)
	}
}

// Every way a request ends gives back what it took of the caps: the
// principal's in-flight slot (with MaxInFlight 1 its next call is
// admitted at once, and AdmissionWait is negative, so a slot still held
// is a 429 rather than a wait), the server's stream slot, listening
// streams, and the session reservation. Each way waits for the ending
// request to leave the handler (an event), then checks the caps' state
// and admits the next call.
func TestAdmissionGivenBackOnEveryEnd(t *testing.T) {
	one := HTTPOptions{MaxInFlight: 1}
	for _, tc := range []struct {
		name string
		opts HTTPOptions
		run  func(t *testing.T, e *admEnv)
	}{
		{"success", one, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			done := e.start(t, context.Background(), "alice", sid, "call")
			close(e.release)
			if r := <-done; r.status != 200 || !strings.Contains(r.body, `\"ok\":true`) {
				t.Fatalf("released call: %d %s", r.status, r.body)
			}
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			e.admitted(t, "alice", sid)
		}},
		{"tool error", one, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			if r := e.send(context.Background(), http.MethodPost, "alice", sid, "call", holdCall(7, "fail")); !strings.Contains(r.body, `"isError":true`) || !strings.Contains(r.body, "invalid_argument") {
				t.Fatalf("failing call: %d %s", r.status, r.body)
			}
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			e.admitted(t, "alice", sid)
		}},
		{"panic in the tool", one, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			if r := e.send(context.Background(), http.MethodPost, "alice", sid, "call", holdCall(7, "panic")); !strings.Contains(r.body, `"isError":true`) || !strings.Contains(r.body, "internal") {
				t.Fatalf("panicking call: %d %s", r.status, r.body)
			}
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			e.admitted(t, "alice", sid)
		}},
		{"timeout", one, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			done := e.start(t, context.Background(), "alice", sid, "call")
			e.clock.Advance(time.Minute) // the tool's limit
			if r := <-done; !strings.Contains(r.body, `"isError":true`) || !strings.Contains(r.body, "timeout") {
				t.Fatalf("timed-out call: %d %s", r.status, r.body)
			}
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			e.admitted(t, "alice", sid)
		}},
		{"notifications/cancelled", one, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			done := e.start(t, context.Background(), "alice", sid, "call")
			if r := e.send(context.Background(), http.MethodPost, "alice", sid, "", `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); r.status != http.StatusAccepted {
				t.Fatalf("cancel: %d %s", r.status, r.body)
			}
			<-done
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			e.admitted(t, "alice", sid)
		}},
		{"dropped connection", one, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			ctx, drop := context.WithCancel(context.Background())
			done := e.start(t, ctx, "alice", sid, "call")
			drop()
			<-done
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			e.admitted(t, "alice", sid)
		}},
		{"session deleted", one, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			done := e.start(t, context.Background(), "alice", sid, "call")
			if r := e.send(context.Background(), http.MethodDelete, "alice", sid, "", ""); r.status != http.StatusNoContent {
				t.Fatalf("DELETE: %d %s", r.status, r.body)
			}
			<-done
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			e.admitted(t, "alice", e.session(t, "alice"))
		}},
		{"shutdown", one, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			done := e.start(t, context.Background(), "alice", sid, "call")
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // no grace: the call is cancelled
			_ = e.srv.Shutdown(ctx)
			<-done
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			// Admitted by the handler, refused by the server shutting down.
			r := e.send(context.Background(), http.MethodPost, "alice", sid, "", holdCall(9, "quick"))
			if r.status != http.StatusOK || !strings.Contains(r.body, fmt.Sprint(CodeShuttingDown)) {
				t.Fatalf("a call after shutdown: %d %s", r.status, r.body)
			}
		}},
		{"refused: the server's streams are taken", HTTPOptions{MaxInFlight: 1, MaxStreams: 1}, func(t *testing.T, e *admEnv) {
			sid, bob := e.session(t, "alice"), e.session(t, "bob")
			done := e.start(t, context.Background(), "bob", bob, "bob")
			// Alice's slot is taken, then the stream is refused.
			if r := e.send(context.Background(), http.MethodPost, "alice", sid, "call", holdCall(8, "quick")); r.status != http.StatusServiceUnavailable {
				t.Fatalf("call past the stream cap: %d %s", r.status, r.body)
			}
			e.waitEnd(t, "call")
			e.free(t, "alice", 1, 0)
			close(e.release)
			<-done
			e.waitEnd(t, "bob")
			e.free(t, "bob", 0, 0)
			e.admitted(t, "alice", sid)
		}},
		{"refused: the principal's session share", HTTPOptions{MaxInFlight: 2, MaxSessionsPerPrincipal: 1}, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			done := e.start(t, context.Background(), "alice", sid, "hold")
			// A second session: its slot is taken, then the session refused
			// (the first is busy, so it is not closed for it).
			if r := e.send(context.Background(), http.MethodPost, "alice", "", "call", admInit); r.status != http.StatusTooManyRequests {
				t.Fatalf("a session past the share: %d %s", r.status, r.body)
			}
			e.waitEnd(t, "call")
			if s, _, _, gs, _ := e.held("alice"); s != 1 || gs != 1 {
				t.Fatalf("alice holds %d slots, the server %d streams; want the running call's 1 and 1", s, gs)
			}
			e.admitted(t, "alice", sid)
			close(e.release)
			<-done
			e.waitEnd(t, "hold")
			e.free(t, "alice", 0, 0)
		}},
		{"refused: no session created", HTTPOptions{MaxInFlight: 1, MaxSessionsPerPrincipal: 1}, func(t *testing.T, e *admEnv) {
			// A request without a session that creates none gives its
			// reservation back: the principal's one session is still
			// to be had.
			if r := e.send(context.Background(), http.MethodPost, "alice", "", "call", `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); r.sid != "" || !strings.Contains(r.body, `"error"`) {
				t.Fatalf("a call outside any session: %d %q %s", r.status, r.sid, r.body)
			}
			e.waitEnd(t, "call")
			e.free(t, "alice", 0, 0)
			e.h.mu.Lock()
			owners := len(e.h.owners)
			e.h.mu.Unlock()
			if owners != 0 {
				t.Fatalf("session shares kept: %d", owners)
			}
			e.admitted(t, "alice", e.session(t, "alice"))
		}},
		{"listening stream closed", HTTPOptions{MaxInFlight: 1, MaxListeners: 2}, func(t *testing.T, e *admEnv) {
			sid := e.session(t, "alice")
			listenerGivenBack(t, e, "GET", func(end string) (int, func()) { return e.open(t, "alice", sid, end) })
		}},
		{"subscriptions/listen closed", HTTPOptions{MaxInFlight: 1, MaxListeners: 2}, func(t *testing.T, e *admEnv) {
			listenerGivenBack(t, e, "subscriptions/listen", func(end string) (int, func()) { return e.listen(t, "alice", end) })
		}},
		{"session idle expiry", HTTPOptions{MaxInFlight: 1, MaxSessionsPerPrincipal: 1, SessionTimeout: time.Minute, StreamlessSessionTimeout: time.Minute}, func(t *testing.T, e *admEnv) {
			idle := clockwork.NewFakeClock()
			e.h.mu.Lock()
			e.h.clock = idle // the sessions' idle timers
			e.h.mu.Unlock()
			sid := e.session(t, "alice")
			if r := e.send(context.Background(), http.MethodPost, "alice", sid, "call", holdCall(8, "quick")); r.status != http.StatusOK {
				t.Fatalf("call: %d %s", r.status, r.body)
			}
			e.waitEnd(t, "call")                                                  // the session is idle: its timer runs
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // bounds a hang only
			defer cancel()
			if err := idle.BlockUntilContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
			idle.Advance(time.Minute)
			for deadline := time.Now().Add(30 * time.Second); e.h.boundSessions() != 0; time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the idle session was never closed")
				}
			}
			e.free(t, "alice", 0, 0)
			e.h.mu.Lock()
			owners := len(e.h.owners)
			e.h.mu.Unlock()
			if owners != 0 {
				t.Fatalf("session shares kept after the expiry: %d", owners)
			}
			if r := e.send(context.Background(), http.MethodPost, "alice", sid, "", holdCall(9, "quick")); r.status != http.StatusNotFound {
				t.Fatalf("a call in the expired session: %d %s", r.status, r.body)
			}
			e.admitted(t, "alice", e.session(t, "alice"))
		}},
		{"refused: the server's listeners are taken", HTTPOptions{MaxInFlight: 1, MaxListeners: 2}, func(t *testing.T, e *admEnv) {
			sid, bob, carol := e.session(t, "alice"), e.session(t, "bob"), e.session(t, "carol")
			_, dropBob := e.open(t, "bob", bob, "bob")
			if status, _ := e.open(t, "carol", carol, "carol"); status != http.StatusOK {
				t.Fatalf("carol's GET: %d", status)
			}
			if status, _ := e.open(t, "alice", sid, "over"); status != http.StatusServiceUnavailable {
				t.Fatalf("alice's GET past the server's listeners: %d", status)
			}
			e.waitEnd(t, "over")
			e.free(t, "alice", 0, 2)
			dropBob()
			e.waitEnd(t, "bob")
			if status, _ := e.open(t, "alice", sid, "again"); status != http.StatusOK {
				t.Fatalf("alice's GET once bob's closed: %d", status)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newAdmEnv(t, tc.opts))
		})
	}
}
