package federation_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/federation/broker"
)

// An agent serving one Go tool, and a platform calling it, through the
// embedded broker.
func Example() {
	b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	conn := federation.ConnOptions{Broker: b.URL(), Platform: "example"}

	ts := &federation.ToolSet{}
	_ = ts.Add(federation.Tool{Name: "read_level", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)}},
		func(ctx context.Context, args json.RawMessage, c federation.Caller) (*federation.Result, error) {
			return federation.TextResult("73 %"), nil
		})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{}, 1)
	go federation.ServeAgent(ctx, federation.AgentOptions{ConnOptions: conn, Entity: federation.Entity{Type: "device", ID: "tank"},
		Ready: func() { ready <- struct{}{} }}, ts)
	<-ready

	p, err := federation.Connect(ctx, federation.Options{ConnOptions: conn})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	for len(p.Tools()) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	raw, err := p.Call(ctx, federation.Caller{User: "u1", Session: "s1"}, p.Tools()[0].Name, nil)
	if err != nil {
		panic(err)
	}
	var res federation.Result
	_ = json.Unmarshal(raw, &res)
	fmt.Println(p.Tools()[0].Name, "=", res.Content[0].Text)
	// Output: device-tank__read_level = 73 %
}
