package federation

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eclipse/paho.golang/paho"

	"github.com/parsemcp/parsemcp/internal/testing/mqtttest"
)

// aclBroker starts a private Mosquitto whose ACL confines the platform
// user and the agents d1 (team acme) and d2 (team globex) to their own
// topics.
func aclBroker(t *testing.T) (*mqtttest.Mosquitto, Topics) {
	topics := Topics{Prefix: DefaultPrefix, Platform: "p1"}
	acl := MosquittoACL(topics, "platform", map[string]Entity{"agent-d1": d1, "agent-d2": {Type: "device", ID: "d2", Team: "globex"}})
	m := mqtttest.StartMosquitto(t, mqtttest.Config{
		Users: map[string]string{"platform": "pw-platform", "agent-d1": "pw-d1", "agent-d2": "pw-d2"},
		ACL:   acl,
	})
	return m, topics
}

func TestMosquittoACLConfinesAgents(t *testing.T) {
	m, topics := aclBroker(t)
	startAgent(t, ConnOptions{Broker: m.URL(), Platform: "p1", Username: "agent-d1", Password: "pw-d1"}, d1, echoTools(t))
	p := startPlatform(t, Options{ConnOptions: ConnOptions{Broker: m.URL(), Platform: "p1", Username: "platform", Password: "pw-platform"}})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	if _, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__echo", json.RawMessage(`{"text":"via mosquitto"}`)); err != nil {
		t.Fatalf("call through the ACL'd broker: %v\n%s", err, m.Log())
	}

	// d2 may not claim d1's team nor serve as d1: its presence under
	// another team, and its subscription to d1's requests, are refused.
	d2 := Entity{Type: "device", ID: "d2", Team: "globex"}
	evil := &ConnOptions{Broker: m.URL(), Platform: "p1", Username: "agent-d2", Password: "pw-d2"}
	must(t, evil.defaults("evil"))
	var sniffed atomic.Int64
	c, err := dial(context.Background(), evil, connHooks{onMessage: func(pub *paho.Publish) {
		if strings.HasSuffix(pub.Topic, "/req") {
			sniffed.Add(1)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	must(t, c.await(bound(t)))
	// Mosquitto may accept the subscription but delivers nothing the ACL
	// does not let agent-d2 read.
	_ = c.subscribe(bound(t), topics.AgentRequests(d1))
	if _, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__echo", json.RawMessage(`{"text":"private"}`)); err != nil {
		t.Fatal(err)
	}
	if n := sniffed.Load(); n != 0 {
		t.Fatalf("agent-d2 read %d of d1's requests", n)
	}
	claim, _ := json.Marshal(Presence{Status: "online", Revision: "x"})
	_ = c.publish(bound(t), &paho.Publish{Topic: topics.Presence(Entity{Type: "device", ID: "d2", Team: "acme"}), Payload: claim, Retain: true})
	_ = c.publish(bound(t), &paho.Publish{Topic: topics.Response("u", "s", d1), Payload: []byte(`{"id":"x","result":{"content":[]}}`)})
	// A reader of d2's presence under any team: a retained forged claim
	// would reach it before d2's own presence, published after it
	// subscribed.
	seen := make(chan string, 10)
	watcher := &ConnOptions{Broker: m.URL(), Platform: "p1", Username: "platform", Password: "pw-platform"}
	must(t, watcher.defaults("watcher"))
	w, err := dial(context.Background(), watcher, connHooks{onMessage: func(pub *paho.Publish) { seen <- pub.Topic }})
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	must(t, w.await(bound(t)))
	must(t, w.subscribe(bound(t), strings.Replace(topics.Presence(d2), "/globex/", "/+/", 1)))
	must(t, c.publish(bound(t), &paho.Publish{Topic: topics.Presence(d2), Payload: claim, Retain: true}))
	select {
	case topic := <-seen:
		if topic != topics.Presence(d2) {
			t.Fatalf("agent-d2 published presence on %s", topic)
		}
	case <-bound(t).Done():
		t.Fatal("d2's own presence never arrived")
	}
	waitFor(t, p, "d2 announced", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.agents["device/d2"] != nil
	})
	p.mu.Lock()
	team := p.agents["device/d2"].entity.Team
	p.mu.Unlock()
	if team != "globex" {
		t.Fatalf("d2's team = %q", team)
	}
	if d := p.Stats().Dropped; d != 0 {
		t.Fatalf("the platform received %d forged messages the ACL should have stopped", d)
	}
}

func TestBrokerRestartDuringCalls(t *testing.T) {
	m, _ := aclBroker(t)
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	ts := echoTools(t)
	must(t, ts.Add(Tool{Name: "gate", Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(ctx context.Context, _ json.RawMessage, _ Caller) (*Result, error) {
		started <- struct{}{}
		select {
		case <-release:
			return TextResult("late"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	startAgent(t, ConnOptions{Broker: m.URL(), Platform: "p1", Username: "agent-d1", Password: "pw-d1"}, d1, ts)
	p := startPlatform(t, Options{ConnOptions: ConnOptions{Broker: m.URL(), Platform: "p1", Username: "platform", Password: "pw-platform"}})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 5 })
	if _, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__echo", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__gate", json.RawMessage(`{}`))
		errc <- err
	}()
	<-started
	m.Stop()
	// The call in flight fails at once with a structured unavailable error.
	if err := <-errc; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("call in flight during the restart: %v, want unavailable", err)
	}
	close(release)
	// The agent's going offline (its will) may reach the platform before
	// the platform notices its own connection is gone: wait for that.
	waitFor(t, p, "the warning that the broker is unreachable", func() bool {
		return strings.Contains(strings.Join(p.Warnings(), "; "), "broker is unreachable")
	})
	m.Start()
	// Both sides reconnect, subscribe again and the agent announces
	// again; calls on the old (user, session) topic work with no new
	// subscription from the LRU.
	subs := p.Stats().Subscribes
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
		raw, err := p.Call(cctx, Caller{User: "u", Session: "s"}, "device-d1__echo", json.RawMessage(`{"text":"after"}`))
		ccancel()
		if err == nil {
			if !strings.Contains(string(raw), "after") {
				t.Fatalf("after restart: %s", raw)
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no call succeeded after the restart: %v\n%s", err, m.Log())
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	if got := p.Stats().Subscribes; got != subs {
		t.Fatalf("the LRU subscribed again (%d → %d); the connection should restore its subscriptions", subs, got)
	}
}
