package federation

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// TestCollidingNamesListedOnce: two tools of one agent whose exposed
// names collide ("a.b" and "a_b" both become device-d1__a_b) are not
// both listed under confusable names: the first by name keeps it, the
// other is left out with a warning.
func TestCollidingNamesListedOnce(t *testing.T) {
	b, _ := testBroker(t)
	conn := ConnOptions{Broker: b.URL(), Platform: "p1"}
	ts := &ToolSet{}
	for _, name := range []string{"a_b", "a.b", "c"} {
		must(t, ts.Add(Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, json.RawMessage, Caller) (*Result, error) {
			return TextResult(name), nil
		}))
	}
	startAgent(t, conn, d1, ts)
	p := startPlatform(t, Options{ConnOptions: conn})
	waitFor(t, p, "d1's tools", func() bool { _, ok := p.Lookup("device-d1__c"); return ok })
	if got, want := names(p.Tools()), []string{"device-d1__a_b", "device-d1__c"}; !slices.Equal(got, want) {
		t.Fatalf("catalog = %v, want %v", got, want)
	}
	if rt, _ := p.Lookup("device-d1__a_b"); rt.Tool.Name != "a.b" {
		t.Fatalf("device-d1__a_b is %q, want the first by name, a.b", rt.Tool.Name)
	}
	w := p.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], `tool "a_b" of agent device/d1 is left out`) {
		t.Fatalf("warnings = %v", w)
	}
}
