package mcpserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/redistest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/ratelimit"
	"github.com/parsemcp/parsemcp/store"
)

func limitedServer(t *testing.T, st store.Store, l ratelimit.Limiter, id agent.Identity) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{Store: st, RateLimit: l,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, id), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

var countTicket = map[string]any{"class_name": "Ticket"}

// midWindow is a fake clock 20 minutes into an hour (and 20 s into a
// minute): no window of a minute or an hour ends while a test runs.
func midWindow() ratelimit.Option {
	return ratelimit.WithClock(clockwork.NewFakeClockAt(time.Date(2026, 3, 1, 12, 20, 20, 0, time.UTC)))
}

func TestLocalRateLimit(t *testing.T) {
	st := fixtureStore(t)
	l, _ := ratelimit.NewLocal(3, time.Hour, midWindow())
	bobCS := connect(t, limitedServer(t, st, l, agent.Identity{Mode: agent.AuthUser, UserID: bob}), "")
	aliceCS := connect(t, limitedServer(t, st, l, agent.Identity{Mode: agent.AuthUser, UserID: alice}), "")
	for range 3 {
		ok(t, bobCS, "count_objects", countTicket)
	}
	e := fails(t, bobCS, "count_objects", countTicket, "rate_limited")
	if r := e["details"].(map[string]any)["retry_after"].(float64); r != 40*60-20 {
		t.Fatalf("retry_after %v, want the %d s left in the hour", r, 40*60-20)
	}
	ok(t, aliceCS, "count_objects", countTicket) // another principal has its own bucket
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func randomPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "parsemcp-test-" + hex.EncodeToString(b[:])
}

// Two server instances sharing Redis share one budget per principal.
func TestRedisRateLimitShared(t *testing.T) {
	c := redistest.Client(t, "")
	st := fixtureStore(t)
	prefix := randomPrefix()
	bobID := agent.Identity{Mode: agent.AuthUser, UserID: bob}
	a := connect(t, limitedServer(t, st, must(ratelimit.NewRedis(c, prefix, 5, time.Minute, midWindow())), bobID), "")
	b := connect(t, limitedServer(t, st, must(ratelimit.NewRedis(c, prefix, 5, time.Minute, midWindow())), bobID), "")
	for i := range 5 {
		cs := a
		if i%2 == 1 {
			cs = b
		}
		ok(t, cs, "count_objects", countTicket)
	}
	fails(t, a, "count_objects", countTicket, "rate_limited")
	fails(t, b, "count_objects", countTicket, "rate_limited")
}

// With its Redis down the shared limiter refuses every call, as
// unavailable (the limiter's outage, not the caller's rate), with a retry
// of 1–5 s; once Redis is back calls run again.
func TestRedisRateLimitFailsClosed(t *testing.T) {
	rd := redistest.Private(t)
	srv := limitedServer(t, fixtureStore(t), must(ratelimit.NewRedis(rd.Client(), randomPrefix(), 100, time.Minute)), master)
	cs := connect(t, srv, "")
	ts := httpServer(t, srv)
	ok(t, cs, "count_objects", countTicket)
	rd.Stop()
	wantHealth(t, ts.URL, http.StatusServiceUnavailable, "unavailable", "rate_limiter", "Redis does not answer")
	for range 3 {
		e := fails(t, cs, "count_objects", countTicket, "unavailable")
		d := e["details"].(map[string]any)
		if r := d["retry_after"].(float64); r < 1 || r > 5 || d["kind"] != "rate_limiter" || !strings.Contains(e["error"].(string), "rate limiter is unavailable") {
			t.Fatalf("fail-closed refusal %v", e)
		}
	}
	rd.Start()
	ok(t, cs, "count_objects", countTicket)
	wantHealth(t, ts.URL, http.StatusOK, "ok", "", "")
}

// The pre-auth limiter answers 429 with Retry-After before any agent is built.
func TestPreAuthLimit(t *testing.T) {
	built := 0
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		built++
		return agent.New(agent.Readonly, master), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(mcpserver.PreAuthLimit(must(ratelimit.NewLocal(2, time.Hour, midWindow())), srv.Mux(mcpserver.HTTPOptions{})))
	defer ts.Close()
	var codes []int
	for range 3 {
		resp, err := http.Get(ts.URL + "/tools")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
		if resp.StatusCode == 429 && (resp.Header.Get("Retry-After") == "" || resp.Header.Get("Retry-After") == "0") {
			t.Fatal("429 without Retry-After")
		}
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 || built != 2 {
		t.Fatalf("codes %v, agents built %d", codes, built)
	}
	if resp, err := http.Get(ts.URL + "/health"); err != nil || resp.StatusCode != 200 || strings.Contains(resp.Status, "429") {
		t.Fatalf("/health is exempt: %v", err)
	}
}
