package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/testing/mqtttest"
)

// manyAgentsAcrossRestart serves n agents on the broker at url, then
// starts a platform, stops it and starts another, as a server restart
// does: each must list every agent's tool. Failed fetches are not
// retried (RetryInterval is an hour), so an agent whose fetch failed
// (before: a SUBSCRIBE refused with "packet identifier in use" while the
// broker delivered the agents' retained presence) stays absent.
func manyAgentsAcrossRestart(t *testing.T, url string, n int) {
	conn := ConnOptions{Broker: url, Platform: "p-many"}
	for i := range n {
		ts := &ToolSet{}
		must(t, ts.Add(Tool{Name: "ping", Annotations: &Annotations{ReadOnlyHint: Bool(true)}}, func(context.Context, json.RawMessage, Caller) (*Result, error) {
			return TextResult("pong"), nil
		}))
		startAgent(t, conn, Entity{Type: "device", ID: fmt.Sprintf("m%02d", i)}, ts)
	}
	for run := range 2 {
		p, err := Connect(context.Background(), Options{ConnOptions: ConnOptions{Broker: url, Platform: "p-many", Logger: testLogger(t)}, RetryInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, p, fmt.Sprintf("%d agents' tools (platform %d)", n, run+1), func() bool { return len(p.Tools()) == n })
		if w := p.Warnings(); len(w) != 0 {
			t.Fatalf("warnings: %v", w)
		}
		p.Close()
	}
}

func TestManyAgentsAcrossRestart(t *testing.T) {
	b, _ := testBroker(t)
	manyAgentsAcrossRestart(t, b.URL(), 20)
}

func TestManyAgentsAcrossRestartMosquitto(t *testing.T) {
	m := mqtttest.StartMosquitto(t, mqtttest.Config{})
	manyAgentsAcrossRestart(t, m.URL(), 20)
}
