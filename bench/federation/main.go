// Command federation measures what proxying a tool call to a remote agent
// over MQTT v5 adds: the same echo tool is called through a real MCP
// client (the Go SDK, in memory) once as one of the server's own tools and
// once as a remote agent's tool reached through a broker on loopback,
// interleaved, and the p50/p99 of each and their difference (the added
// latency; target at most 1 ms at p50) are printed.
//
//	go run ./bench/federation                                  # the broker on mqtt://127.0.0.1:1883
//	go run ./bench/federation -broker mqtt://127.0.0.1:1884 -n 5000
//	go run ./bench/federation -broker embedded                 # the embedded mochi broker
//
// It uses its own platform id, so it shares a broker with other users
// without crossing their topics.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/federation/broker"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/tools"
)

func main() {
	brokerURL := flag.String("broker", "mqtt://127.0.0.1:1883", "MQTT broker (a loopback Mosquitto), or \"embedded\"")
	n := flag.Int("n", 2000, "calls per path")
	warm := flag.Int("warmup", 200, "calls per path before measuring")
	flag.Parse()
	if err := run(*brokerURL, *n, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "federation bench:", err)
		os.Exit(1)
	}
}

func run(brokerURL string, n, warm int) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if brokerURL == "embedded" {
		b, err := broker.Start(broker.Options{Addr: "127.0.0.1:0"})
		if err != nil {
			return err
		}
		defer b.Close()
		brokerURL = b.URL()
	}
	dir, err := os.MkdirTemp("", "fedbench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Create(ctx, filepath.Join(dir, "empty.sqlite"))
	if err != nil {
		return err
	}
	defer st.Close()

	echo := func(text string) string { return "echo: " + text }
	conn := federation.ConnOptions{Broker: brokerURL, Platform: "bench-" + fmt.Sprint(time.Now().UnixNano())}
	ts := &federation.ToolSet{}
	_ = ts.Add(federation.Tool{Name: "echo", Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)}},
		func(_ context.Context, args json.RawMessage, _ federation.Caller) (*federation.Result, error) {
			var in struct{ Text string }
			_ = json.Unmarshal(args, &in)
			return federation.TextResult(echo(in.Text)), nil
		})
	ready := make(chan struct{}, 1)
	go func() {
		_ = federation.ServeAgent(ctx, federation.AgentOptions{ConnOptions: conn, Entity: federation.Entity{Type: "bench", ID: "a1"},
			Ready: func() { ready <- struct{}{} }}, ts)
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the agent did not connect to %s", brokerURL)
	}
	p, err := federation.Connect(ctx, federation.Options{ConnOptions: conn})
	if err != nil {
		return err
	}
	defer p.Close()
	deadline := time.Now().Add(30 * time.Second)
	for len(p.Tools()) == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the platform never listed the agent's tool")
		}
		time.Sleep(10 * time.Millisecond)
	}

	reg := tools.NewRegistry()
	type echoArgs struct {
		Text string `json:"text"`
	}
	if err := reg.Register(&tools.Tool{Name: "echo", Description: "echo", ReadOnly: true, Handler: func(_ context.Context, c *tools.Call) (any, error) {
		var in echoArgs
		_ = json.Unmarshal(c.Args, &in)
		return map[string]any{"content": echo(in.Text)}, nil
	}}); err != nil {
		return err
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Tools: reg, Federation: p, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), nil
	}})
	if err != nil {
		return err
	}
	defer srv.Close()
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, stt)
	if err != nil {
		return err
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return err
	}
	defer cs.Close()

	remote := p.Tools()[0].Name
	callOnce := func(name string) (time.Duration, error) {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "hello"}})
		d := time.Since(start)
		if err == nil && res.IsError {
			err = fmt.Errorf("%s failed: %v", name, res.Content)
		}
		return d, err
	}
	var local, proxied []time.Duration
	for i := range warm + n {
		// Interleaved: both paths see the same machine load.
		dl, err := callOnce("echo")
		if err != nil {
			return err
		}
		dr, err := callOnce(remote)
		if err != nil {
			return err
		}
		if i >= warm {
			local, proxied = append(local, dl), append(proxied, dr)
		}
	}
	lp50, lp99 := pct(local, 50), pct(local, 99)
	rp50, rp99 := pct(proxied, 50), pct(proxied, 99)
	fmt.Printf("federation: %d interleaved calls per path through the Go SDK client (in memory), broker %s\n", n, brokerURL)
	fmt.Printf("%-28s %10s %10s\n", "path", "p50", "p99")
	fmt.Printf("%-28s %10s %10s\n", "local tool", us(lp50), us(lp99))
	fmt.Printf("%-28s %10s %10s\n", "remote tool (MQTT proxy)", us(rp50), us(rp99))
	fmt.Printf("%-28s %10s %10s\n", "added by the proxy", us(rp50-lp50), us(rp99-lp99))
	verdict := "PASS"
	if rp50-lp50 > time.Millisecond {
		verdict = "WARN"
	}
	fmt.Printf("target: at most 1 ms added at p50: %s\n", verdict)
	return nil
}

func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, len(s)*p/100)]
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d.Microseconds())) }
