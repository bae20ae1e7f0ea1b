package federation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/eclipse/paho.golang/paho"
)

// presence publishes a presence message for e from a raw client.
func presence(t *testing.T, r *conn, topics Topics, e Entity, status, revision string) {
	t.Helper()
	body, _ := json.Marshal(Presence{Status: status, Revision: revision})
	must(t, r.publish(bound(t), &paho.Publish{Topic: topics.Presence(e), Payload: body, QoS: 1}))
}

// agentStatus is what the platform holds about the agent keyed "type/id".
func agentStatus(p *Platform, key string) (team string, online, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.agents[key]
	if st == nil {
		return "", false, false
	}
	return st.entity.Team, st.online, true
}

// TestTeamSwitchThenOffline: an online agent announcing itself under
// another team is the old agent leaving (its calls fail, its tools go)
// and a new one arriving (its tools fetched again and listed under the
// new team); an offline or cleared message under a team the agent is not
// in touches nothing; offline under its own team takes it offline
// (before: "close of closed channel").
func TestTeamSwitchThenOffline(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	started := make(chan struct{}, 1)
	ts := echoTools(t)
	must(t, ts.Add(Tool{Name: "gate", Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(ctx context.Context, _ json.RawMessage, _ Caller) (*Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	startAgent(t, conn, d1, ts)
	p := startPlatform(t, Options{ConnOptions: conn})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 5 })
	errc := make(chan error, 1)
	go func() {
		_, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__gate", nil)
		errc <- err
	}()
	<-started

	r := rogue(t, b.URL(), nil)
	globex := Entity{Type: d1.Type, ID: d1.ID, Team: "globex"}
	presence(t, r, p.topics, globex, "online", "other-revision")
	if err := <-errc; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a call to the agent under its old team: %v, want unavailable", err)
	}
	waitFor(t, p, "d1's tools under team globex", func() bool {
		rt, ok := p.Lookup("device-d1__echo")
		return ok && rt.Entity.Team == "globex" && len(p.Tools()) == 5
	})

	// Offline and cleared under the old team: not the agent's team now.
	dropped := p.Stats().Dropped
	presence(t, r, p.topics, d1, "offline", "")
	waitFor(t, p, "the foreign-team offline message dropped", func() bool { return p.Stats().Dropped > dropped })
	must(t, r.publish(bound(t), &paho.Publish{Topic: p.topics.Presence(d1), QoS: 1}))
	if team, online, _ := agentStatus(p, "device/d1"); team != "globex" || !online || len(p.Tools()) != 5 {
		t.Fatalf("after messages under the old team: team %q online %v tools %v", team, online, names(p.Tools()))
	}

	presence(t, r, p.topics, globex, "offline", "")
	waitFor(t, p, "d1 offline", func() bool { _, online, _ := agentStatus(p, "device/d1"); return !online })
	if len(p.Tools()) != 0 {
		t.Fatalf("tools of an offline agent: %v", names(p.Tools()))
	}
	// Back online under globex (and once more offline): no panic either.
	presence(t, r, p.topics, globex, "online", "other-revision")
	waitFor(t, p, "d1 back under globex", func() bool { return len(p.Tools()) == 5 })
	presence(t, r, p.topics, globex, "offline", "")
	waitFor(t, p, "d1 offline again", func() bool { return len(p.Tools()) == 0 })
}

// TestFetchBackoffThenGiveUp: an agent that never lists its tools is
// retried after RetryInterval, doubling up to MaxRetryInterval, then
// given up on after FetchAttempts until it announces itself again; only
// the first failure and the giving up are logged at WARN.
func TestFetchBackoffThenGiveUp(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	clock := newFakeClock()
	logs := newLogRecorder()
	o := Options{ConnOptions: conn, RetryInterval: 10 * time.Second, MaxRetryInterval: 25 * time.Second, FetchAttempts: 4}
	o.Logger = slog.New(logs)
	clock.install(&o)
	p := startPlatform(t, o)
	mute := Entity{Type: "device", ID: "mute"}
	var answering atomic.Bool
	agent := startScriptedAgent(t, b.URL(), p.topics, mute, func(req *request) []byte {
		if !answering.Load() {
			return refuse(req)
		}
		return mustJSON(t, response{ID: req.ID, Result: json.RawMessage(`{"tools":[{"name":"ping","inputSchema":{"type":"object"}}]}`)})
	})
	r := rogue(t, b.URL(), nil)
	presence(t, r, p.topics, mute, "online", "r1")

	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second} {
		d := clock.nextTimer(t)
		if d < want || d > want+want/10 {
			t.Fatalf("retry %d after %v, want %v plus at most a tenth", i+1, d, want)
		}
		if n := agent.requests.Load(); n != int64(i+1) {
			t.Fatalf("%d tools/list requests before retry %d", n, i+1)
		}
		clock.advance(d)
	}
	waitFor(t, p, "the agent given up", func() bool {
		return strings.Contains(strings.Join(p.Warnings(), "\n"), "agent device/mute did not list its tools in 4 attempts")
	})
	select {
	case d := <-clock.added:
		t.Fatalf("a retry %v after giving up", d)
	default:
	}
	if n := agent.requests.Load(); n != 4 {
		t.Fatalf("%d tools/list requests, want 4", n)
	}
	if w, g, d := logs.count(slog.LevelWarn, "fetching an agent's tools failed"), logs.count(slog.LevelWarn, "giving up"), logs.count(slog.LevelDebug, "fetching an agent's tools failed"); w != 1 || g != 1 || d != 2 {
		t.Fatalf("logged %d WARN failures, %d WARN give-ups, %d DEBUG failures; want 1, 1, 2", w, g, d)
	}

	// A new announcement (even of the same revision) starts afresh.
	answering.Store(true)
	presence(t, r, p.topics, mute, "online", "r1")
	waitFor(t, p, "the agent's tool", func() bool { _, ok := p.Lookup("device-mute__ping"); return ok })
	if w := p.Warnings(); len(w) != 0 {
		t.Fatalf("warnings after the agent answered: %v", w)
	}
}

// TestPresenceFloodIsRateLimited: a flood of announcements for one agent
// id is handled a burst at a time, the latest held until the limit
// allows: neither a fetch nor a change notification per message.
func TestPresenceFloodIsRateLimited(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	clock := newFakeClock()
	o := Options{ConnOptions: conn, RetryInterval: time.Hour}
	clock.install(&o)
	p := startPlatform(t, o)
	flood := Entity{Type: "device", ID: "flood"}
	agent := startScriptedAgent(t, b.URL(), p.topics, flood, refuse)
	var changes atomic.Int64
	defer p.OnChange(func() { changes.Add(1) })()
	r := rogue(t, b.URL(), nil)
	const n = 200
	for i := range n {
		presence(t, r, p.topics, flood, "online", fmt.Sprintf("r%d", i))
	}
	// A message after the flood, from the same client: once it is
	// handled, so is every message of the flood.
	sentinel := Entity{Type: "device", ID: "sentinel"}
	presence(t, r, p.topics, sentinel, "offline", "")
	waitFor(t, p, "the sentinel", func() bool { _, _, known := agentStatus(p, "device/sentinel"); return known })
	if got := changes.Load(); got > 2*presenceBurst+1 {
		t.Fatalf("%d change notifications for %d announcements of one agent", got, n)
	}
	if got := agent.requests.Load(); got > presenceBurst {
		t.Fatalf("%d tools/list requests for %d announcements of one agent", got, n)
	}
	// The last announcement is handled once the limit allows.
	clock.advance(presenceEvery)
	waitFor(t, p, "the last revision", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.agents["device/flood"].want == fmt.Sprintf("r%d", n-1)
	})
}

// TestWarningsAreBounded: many absent agents make a handful of warning
// lines and one summary, at most 2 KB; an agent's long refusal is cut.
func TestWarningsAreBounded(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	p := startPlatform(t, Options{ConnOptions: conn, RetryInterval: time.Hour})
	r := rogue(t, b.URL(), nil)
	loud := Entity{Type: "device", ID: "aaa_loud"}
	startScriptedAgent(t, b.URL(), p.topics, loud, func(req *request) []byte {
		return mustJSON(t, response{ID: req.ID, Error: &WireError{Code: "refused", Message: strings.Repeat("é", 5000)}})
	})
	presence(t, r, p.topics, loud, "online", "r1")
	const n = 30
	for i := range n {
		presence(t, r, p.topics, Entity{Type: "device", ID: fmt.Sprintf("gone%02d", i)}, "offline", "")
	}
	waitFor(t, p, "every agent", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		st := p.agents["device/aaa_loud"]
		return len(p.agents) == n+1 && st != nil && st.err != nil
	})
	w := p.Warnings()
	size := 0
	for _, l := range w {
		size += len(l)
		if len(l) > 300 || !utf8.ValidString(l) {
			t.Fatalf("warning line of %d bytes (valid UTF-8: %v): %.80q…", len(l), utf8.ValidString(l), l)
		}
	}
	if len(w) != 6 || size > 2048 || !strings.HasPrefix(w[5], "and 26 more") || !strings.HasPrefix(w[0], "agent device/aaa_loud is unavailable") {
		t.Fatalf("%d warnings, %d bytes:\n%s", len(w), size, strings.Join(w, "\n"))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

// TestPresenceSequencesNeverPanic drives the presence state machine and
// the answer router with random sequences of messages (online, offline,
// cleared, garbage, across teams; answers with and without correlation
// data): nothing panics, an online agent's gone channel is open, an
// offline one holds no tools.
func TestPresenceSequencesNeverPanic(t *testing.T) {
	b, _ := testBroker(t)
	p := startPlatform(t, Options{ConnOptions: ConnOptions{Broker: b.URL(), Platform: "p1"}, RetryInterval: time.Hour})
	rng := rand.New(rand.NewPCG(27, 1))
	teams := []string{"", "acme", "globex"}
	payloads := [][]byte{nil, []byte(`{"status":"online","revision":"r1"}`), []byte(`{"status":"online","revision":"r2"}`),
		[]byte(`{"status":"offline"}`), []byte(`{"status":"dancing"}`), []byte(`[`), []byte(`{}`)}
	for range 3000 {
		e := Entity{Type: "device", ID: fmt.Sprintf("x%d", rng.IntN(3)), Team: teams[rng.IntN(len(teams))]}
		if rng.IntN(4) == 0 {
			props := &paho.PublishProperties{}
			if rng.IntN(2) == 0 {
				props.CorrelationData = []byte(newID())
			}
			p.onMessage(&paho.Publish{Topic: p.topics.Response("u", "s", e), Payload: payloads[rng.IntN(len(payloads))], Properties: props})
			continue
		}
		p.handlePresence(e, payloads[rng.IntN(len(payloads))])
		if bad := presenceInvariant(p); bad != "" {
			t.Fatal(bad)
		}
	}
}

// presenceInvariant says what is wrong with the platform's agents ("" if
// nothing): an online agent's gone channel is open, an offline one holds
// no tools.
func presenceInvariant(p *Platform) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, st := range p.agents {
		select {
		case <-st.gone:
			if st.online {
				return k + ": online with its gone channel closed"
			}
		default:
		}
		if !st.online && st.tools != nil {
			return k + ": offline with tools"
		}
	}
	return ""
}
