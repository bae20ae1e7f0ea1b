package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/tools"
)

// slowTools registers "slow" (runs for d, reporting nothing) and
// "reporting" (heartbeats first, then its own progress 1..3 of 3).
func slowTools(t *testing.T, d time.Duration) *tools.Registry {
	t.Helper()
	reg := tools.NewRegistry()
	wait := func(ctx context.Context, d time.Duration) error {
		select {
		case <-time.After(d):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, tl := range []*tools.Tool{
		{Name: "slow", Description: "waits", Permission: agent.Readonly, ReadOnly: true, Input: &jsonschema.Schema{Type: "object"},
			Handler: func(ctx context.Context, _ *tools.Call) (any, error) {
				if err := wait(ctx, d); err != nil {
					return nil, err
				}
				return map[string]any{"done": true}, nil
			}},
		{Name: "reporting", Description: "reports", Permission: agent.Readonly, ReadOnly: true, Input: &jsonschema.Schema{Type: "object"},
			Handler: func(ctx context.Context, _ *tools.Call) (any, error) {
				if err := wait(ctx, d/2); err != nil {
					return nil, err
				}
				for i := 1; i <= 3; i++ {
					mcpserver.ReportProgress(ctx, float64(i), 3, "step")
					mcpserver.ReportProgress(ctx, 0.5, 3, "ignored: does not advance")
					if err := wait(ctx, d/6); err != nil {
						return nil, err
					}
				}
				return map[string]any{"done": true}, nil
			}},
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	return reg
}

type progressLog struct {
	mu  sync.Mutex
	got []*mcp.ProgressNotificationParams
}

func (p *progressLog) handler(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.got = append(p.got, req.Params)
	p.mu.Unlock()
}

// of returns the notifications received for one progress token (the
// client may still be handling an earlier call's last notifications).
func (p *progressLog) of(token any) []*mcp.ProgressNotificationParams {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*mcp.ProgressNotificationParams
	for _, n := range p.got {
		if fmt.Sprint(n.ProgressToken) == fmt.Sprint(token) {
			out = append(out, n)
		}
	}
	return out
}

// A running tool call that carries a progress token streams heartbeats
// until it reports its own progress; values always increase, and every
// notification precedes the result. Without a token nothing is sent.
func TestProgressHeartbeats(t *testing.T) {
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Tools: slowTools(t, 1200*time.Millisecond), HeartbeatInterval: 100 * time.Millisecond,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	url := mount(t, mcpserver.HandlerOptions{Server: srv})
	for _, version := range []string{"2025-03-26", "2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			var log progressLog
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "progress", Version: "1"}, &mcp.ClientOptions{ProgressNotificationHandler: log.handler}).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: "alice-token"}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			ctx := context.Background()

			p := &mcp.CallToolParams{Name: "slow"}
			p.SetProgressToken("tok-slow")
			if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
				t.Fatalf("slow: %v %v", res, err)
			}
			beats := log.of("tok-slow")
			if len(beats) < 5 {
				t.Fatalf("%d heartbeats in 1.2 s at 100 ms, want ≥ 5", len(beats))
			}
			last := 0.0
			for _, b := range beats {
				if b.ProgressToken != "tok-slow" || b.Progress <= last || b.Progress >= 1 || b.Total != 0 || b.Message == "" {
					t.Fatalf("heartbeat %+v after %v", b, last)
				}
				last = b.Progress
			}

			p = &mcp.CallToolParams{Name: "reporting"}
			p.SetProgressToken(7)
			if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
				t.Fatalf("reporting: %v %v", res, err)
			}
			got := log.of(7)
			own := 0
			last = 0
			for _, n := range got {
				if n.Progress <= last {
					t.Fatalf("progress does not increase: %v (token %v) after %v", n.Progress, n.ProgressToken, last)
				}
				last = n.Progress
				if n.Total == 3 {
					own++
					continue
				}
				if own > 0 {
					t.Fatalf("heartbeat %+v after the tool's own report", n)
				}
			}
			if own != 3 || len(got) < 4 {
				t.Fatalf("notifications %d, own reports %d (want heartbeats then 3 reports)", len(got), own)
			}

			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow"}); err != nil || res.IsError {
				t.Fatalf("slow without token: %v %v", res, err)
			}
			log.mu.Lock()
			n := len(log.got)
			log.mu.Unlock()
			n -= len(log.of("tok-slow")) + len(log.of(7))
			if n != 0 {
				t.Fatalf("%d progress notifications without a progress token", n)
			}
		})
	}
}

// Notify delivers one notification to one session (on its listening
// stream), and to no other; unknown sessions and non-notifications are
// errors.
func TestNotify(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	url := mount(t, mcpserver.HandlerOptions{Server: srv})
	type recv struct {
		updated chan string
		logs    chan any
	}
	open := func(token string) (*mcp.ClientSession, recv) {
		r := recv{updated: make(chan string, 4), logs: make(chan any, 4)}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "notify", Version: "1"}, &mcp.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { r.updated <- req.Params.URI },
			LoggingMessageHandler:  func(_ context.Context, req *mcp.LoggingMessageRequest) { r.logs <- req.Params.Data },
		}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: token}}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs, r
	}
	a, ra := open("alice-token")
	b, rb := open("bob-token")
	ctx := context.Background()
	// The listening stream opens asynchronously after initialize: retry
	// until the first notification arrives. Bob's first, so that a leak
	// of alice's notifications would reach him.
	deadline := time.Now().Add(10 * time.Second) // bounds a hang
	for ready := false; !ready; {
		if time.Now().After(deadline) {
			t.Fatal("bob's listening stream never opened")
		}
		if err := srv.Notify(ctx, b.ID(), "notifications/resources/updated", map[string]any{"uri": "probe://bob-ready"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-rb.updated:
			ready = true
		case <-time.After(100 * time.Millisecond):
		}
	}
	for len(rb.updated) > 0 { // later probes
		<-rb.updated
	}
	deadline = time.Now().Add(5 * time.Second)
	got := ""
	for got == "" && time.Now().Before(deadline) {
		if err := srv.Notify(ctx, a.ID(), "notifications/resources/updated", map[string]any{"uri": "parse://Ticket/count"}); err != nil {
			t.Fatal(err)
		}
		select {
		case got = <-ra.updated:
		case <-time.After(100 * time.Millisecond):
		}
	}
	if got != "parse://Ticket/count" {
		t.Fatalf("alice got %q", got)
	}
	if err := srv.Notify(ctx, a.ID(), "notifications/message", map[string]any{"level": "info", "data": "hello alice"}); err != nil {
		t.Fatal(err)
	}
	select {
	case d := <-ra.logs:
		if d != "hello alice" {
			t.Fatalf("log data %v", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no notifications/message")
	}
	// Barriers: a notification of each kind to bob, sent after alice's;
	// the first bob receives of each kind must be his own.
	if err := srv.Notify(ctx, b.ID(), "notifications/resources/updated", map[string]any{"uri": "barrier://bob"}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Notify(ctx, b.ID(), "notifications/message", map[string]any{"level": "info", "data": "hello bob"}); err != nil {
		t.Fatal(err)
	}
	select {
	case u := <-rb.updated:
		if u != "barrier://bob" {
			t.Fatalf("bob received alice's notification %q", u)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bob's own resources/updated never arrived")
	}
	select {
	case d := <-rb.logs:
		if d != "hello bob" {
			t.Fatalf("bob received alice's log message %v", d)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bob's own notifications/message never arrived")
	}
	if err := srv.Notify(ctx, "no-such-session", "notifications/resources/list_changed", nil); !errors.Is(err, mcpserver.ErrUnknownSession) {
		t.Fatalf("unknown session: %v", err)
	}
	if err := srv.Notify(ctx, a.ID(), "tools/call", nil); err == nil {
		t.Fatal("a request method was accepted as a notification")
	}
	if err := srv.Notify(ctx, a.ID(), "notifications/message", []int{1}); err == nil {
		t.Fatal("non-object params accepted")
	}
}
