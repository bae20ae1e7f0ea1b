package federation

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/eclipse/paho.golang/paho"

	"github.com/parsemcp/parsemcp/internal/testing/mqtttest"
)

// rogue is a raw client publishing whatever a test asks on the broker.
func rogue(t *testing.T, url string, onMessage func(*paho.Publish)) *conn {
	t.Helper()
	if onMessage == nil {
		onMessage = func(*paho.Publish) {}
	}
	o := &ConnOptions{Broker: url, ClientID: "rogue-" + newID()[:6]}
	must(t, o.defaults("rogue"))
	c, err := dial(context.Background(), o, connHooks{onMessage: onMessage})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	must(t, c.await(bound(t)))
	return c
}

func TestMalformedAndOversizedPayloadsAreDropped(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	startAgent(t, conn, d1, echoTools(t))
	pc := conn
	pc.MaxPayload = 4096
	p := startPlatform(t, Options{ConnOptions: pc})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 4 })
	// Hold a response subscription so the rogue's messages reach the platform.
	if _, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__echo", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	r := rogue(t, b.URL(), nil)
	res := p.topics.Response("u", "s", d1)
	for _, payload := range [][]byte{
		[]byte("{not json"),
		[]byte(`{"id":"x","result":{}}{"id":"y"}`),
		[]byte(`{"id":"../..","result":{}}`),
		[]byte(`{"id":"abc"}`),
		[]byte(`{"id":"abc","result":{"content":[]},"padding":"` + strings.Repeat("x", 5000) + `"}`),
	} {
		must(t, r.publish(bound(t), &paho.Publish{Topic: res, Payload: payload}))
	}
	must(t, r.publish(bound(t), &paho.Publish{Topic: p.topics.Presence(Entity{Type: "device", ID: "d9"}), Payload: []byte(`{"status":"dancing"}`)}))
	must(t, r.publish(bound(t), &paho.Publish{Topic: p.topics.Presence(Entity{Type: "device", ID: "d9"}), Payload: []byte(strings.Repeat("[", 5000))}))
	waitFor(t, p, "seven drops", func() bool { return p.Stats().Dropped >= 7 })
	if len(p.Tools()) != 4 {
		t.Fatalf("catalog changed: %v", names(p.Tools()))
	}
	if _, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__echo", json.RawMessage(`{"text":"still"}`)); err != nil {
		t.Fatalf("the platform stopped working: %v", err)
	}
}

func TestForeignResponsesAreDropped(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	release := make(chan struct{})
	ts := echoTools(t)
	must(t, ts.Add(Tool{Name: "gate", Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(ctx context.Context, _ json.RawMessage, _ Caller) (*Result, error) {
		select {
		case <-release:
			return TextResult("genuine"), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}))
	startAgent(t, conn, d1, ts)
	p := startPlatform(t, Options{ConnOptions: conn})
	waitFor(t, p, "d1's tools", func() bool { return len(p.Tools()) == 5 })
	// Another session's response topic, held by the platform.
	if _, err := p.Call(bound(t), Caller{User: "u", Session: "other"}, "device-d1__echo", json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	// A sniffer sees the request (on this allow-all broker) and forges answers.
	seen := make(chan *paho.Publish, 1)
	r := rogue(t, b.URL(), func(pub *paho.Publish) {
		if strings.Contains(string(pub.Payload), `"gate"`) {
			seen <- pub
		}
	})
	must(t, r.subscribe(bound(t), p.topics.AgentRequests(d1)))
	type out struct {
		raw json.RawMessage
		err error
	}
	done := make(chan out, 1)
	go func() {
		raw, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "device-d1__gate", json.RawMessage(`{}`))
		done <- out{raw, err}
	}()
	var req *paho.Publish
	select {
	case req = <-seen:
	case <-bound(t).Done():
		t.Fatal("the sniffer saw no request")
	}
	var rq request
	must(t, json.Unmarshal(req.Payload, &rq))
	forged := func(id string) []byte {
		b, _ := json.Marshal(response{ID: id, Result: json.RawMessage(`{"content":[{"type":"text","text":"forged"}]}`)})
		return b
	}
	before := p.Stats().Dropped
	// The right id on the wrong topic; the right id with foreign
	// correlation data. (A foreign id on the right topic fails the call:
	// TestBadAnswersFailAtOnce.)
	must(t, r.publish(bound(t), &paho.Publish{Topic: p.topics.Response("u", "other", d1), Payload: forged(rq.ID)}))
	must(t, r.publish(bound(t), &paho.Publish{Topic: req.Properties.ResponseTopic, Payload: forged(rq.ID), Properties: &paho.PublishProperties{CorrelationData: []byte("someone-else")}}))
	waitFor(t, p, "two drops", func() bool { return p.Stats().Dropped >= before+2 })
	close(release)
	o := <-done
	if o.err != nil || !strings.Contains(string(o.raw), "genuine") {
		t.Fatalf("call = %s, %v; want the genuine answer", o.raw, o.err)
	}
}

// badAnswers calls tools of agents answering with garbage, another
// request's id or 2 MB, with and without correlation data, through the
// broker at url: each call fails at once (ErrBadAnswer,
// ErrPayloadTooLarge), none waits for its time limit; an answer to a
// call that already ended fails nothing.
func badAnswers(t *testing.T, url string) {
	conn := ConnOptions{Broker: url, Platform: "p-bad"}
	p := startPlatform(t, Options{ConnOptions: conn})
	huge := func(id string) []byte {
		return mustJSON(t, response{ID: id, Result: json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 2<<20) + `"}]}`)})
	}
	cases := []struct {
		id     string
		noCorr bool
		answer func(req *request) []byte
		want   error
	}{
		{"garbage", false, func(*request) []byte { return []byte("{not json") }, ErrBadAnswer},
		{"garbage_nocorr", true, func(*request) []byte { return []byte("{not json") }, ErrBadAnswer},
		{"wrongid", false, func(*request) []byte {
			return mustJSON(t, response{ID: newID(), Result: json.RawMessage(`{"content":[]}`)})
		}, ErrBadAnswer},
		{"wrongid_nocorr", true, func(*request) []byte {
			return mustJSON(t, response{ID: newID(), Result: json.RawMessage(`{"content":[]}`)})
		}, ErrBadAnswer},
		{"notaresult", false, func(req *request) []byte {
			return mustJSON(t, response{ID: req.ID, Result: json.RawMessage(`{"text":"hi"}`)})
		}, ErrBadAnswer},
		{"huge", false, func(req *request) []byte { return huge(req.ID) }, ErrPayloadTooLarge},
		{"huge_nocorr", true, func(req *request) []byte { return huge(req.ID) }, ErrPayloadTooLarge},
	}
	r := rogue(t, url, nil)
	for _, c := range cases {
		a := startScriptedAgent(t, url, p.topics, Entity{Type: "evil", ID: c.id}, func(req *request) []byte {
			if req.Method == MethodListTools {
				return mustJSON(t, response{ID: req.ID, Result: json.RawMessage(`{"tools":[{"name":"ask","inputSchema":{"type":"object"}}]}`)})
			}
			return c.answer(req)
		})
		a.noCorrelation.Store(c.noCorr)
		presence(t, r, p.topics, Entity{Type: "evil", ID: c.id}, "online", "r1")
	}
	waitFor(t, p, "every agent's tool", func() bool { return len(p.Tools()) == len(cases) })
	errs := make([]chan error, len(cases))
	for i, c := range cases {
		errs[i] = make(chan error, 1)
		go func() {
			_, err := p.Call(bound(t), Caller{User: "u", Session: "s"}, "evil-"+c.id+"__ask", nil)
			errs[i] <- err
		}()
	}
	for i, c := range cases {
		if err := <-errs[i]; !errors.Is(err, c.want) || errors.Is(err, ErrTimeout) {
			t.Errorf("%s: %v, want %v", c.id, err, c.want)
		}
	}
}

func TestBadAnswersFailAtOnce(t *testing.T) {
	b, _ := testBroker(t)
	badAnswers(t, b.URL())
}

func TestBadAnswersFailAtOnceMosquitto(t *testing.T) {
	badAnswers(t, mqtttest.StartMosquitto(t, mqtttest.Config{}).URL())
}
