//go:build bench

// Package parserest benchmarks parsemcp in front of a running Parse Server
// (store/parserest): find, count, a $group aggregate and get through
// parsemcp's MCP tools (Streamable HTTP, in process) against the same
// calls straight to Parse Server's REST API, at concurrency 1, 8 and 32,
// printed as p50 ratios measured in the same run. Target: parsemcp adds
// at most 1.3× Parse Server's own p50.
//
//	go test -tags bench ./bench/parserest -run TestCompare -v [-rows 2000 -n 200]
package parserest

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/bench"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/rawmcp"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

var (
	rows   = flag.Int("rows", 2000, "demo dataset size")
	n      = flag.Int("n", 200, "measured calls per operation and concurrency")
	only   = flag.String("ops", "", "run only these operations (comma-separated: find,count,$group,get)")
	client = flag.String("client", "raw", "MCP client: raw (reads each answer without decoding it, as the REST client does: the server's cost) or sdk (the official go-sdk client in this process, its decoding and output-schema validation included)")
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// op is one operation, both ways.
type op struct {
	name   string
	direct func(ctx context.Context) error // Parse Server's REST API
	tool   string
	args   map[string]any
}

func TestCompare(t *testing.T) {
	srv := parseserver.Start(t, parseserver.Options{CustomObjectIDs: true, AcceptAuthData: []string{"google", "apple", "github"}})
	ctx := context.Background()
	st, err := parserest.Open(ctx, parserest.Config{ServerURL: srv.URL(), AppID: srv.AppID(), MasterKey: srv.MasterKey(), Scratch: sqlite.Scratch})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: *rows}); err != nil {
		t.Fatal(err)
	}
	a := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster})
	ms, err := mcpserver.New(mcpserver.Options{Store: st, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return a, nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer ms.Close()
	ts := httptest.NewServer(ms.Handler(mcpserver.HTTPOptions{}))
	defer ts.Close()

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	get := func(ctx context.Context, path string, q url.Values) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL()+path+"?"+q.Encode(), nil)
		req.Header.Set("X-Parse-Application-Id", srv.AppID())
		req.Header.Set("X-Parse-Master-Key", srv.MasterKey())
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		// Read to the end, not decoded: as the raw MCP client does.
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
		return nil
	}
	open := `{"status":"open"}`
	pipeline := `[{"$group":{"_id":"$status","n":{"$sum":1}}}]`
	ops := []op{
		{"find", func(ctx context.Context) error {
			return get(ctx, "/classes/Ticket", url.Values{"where": {open}, "limit": {"20"}, "order": {"-number"}})
		}, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open"}, "limit": 20, "order": "-number"}},
		{"count", func(ctx context.Context) error {
			return get(ctx, "/classes/Ticket", url.Values{"where": {open}, "count": {"1"}, "limit": {"0"}})
		}, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open"}}},
		{"$group", func(ctx context.Context) error {
			return get(ctx, "/aggregate/Ticket", url.Values{"pipeline": {pipeline}})
		}, "aggregate", map[string]any{"class_name": "Ticket", "pipeline": json.RawMessage(pipeline)}},
		{"get", func(ctx context.Context) error {
			return get(ctx, "/classes/Ticket/"+demo.TicketMemberID, url.Values{})
		}, "get_object", map[string]any{"class_name": "Ticket", "object_id": demo.TicketMemberID}},
	}
	var ms0 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	fmt.Printf("\nparsemcp over parserest vs Parse Server REST (%d rows, %d calls per cell, Streamable HTTP, master key, %s MCP client)\n\n", *rows, *n, *client)
	fmt.Println("| operation | concurrency | Parse Server p50 ms | parsemcp p50 ms | ratio | within 1.3× | Parse Server CPU ms/call, direct | Parse Server CPU ms/call, via parsemcp | parsemcp CPU ms/call | CPU ratio |")
	fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, o := range ops {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), o.name) {
			continue
		}
		for _, conc := range []int{1, 8, 32} {
			var callTool func(ctx context.Context, i int) error
			switch *client {
			case "sdk":
				sessions := make([]*mcp.ClientSession, conc)
				for i := range sessions {
					cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
						&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
					if err != nil {
						t.Fatal(err)
					}
					defer cs.Close()
					sessions[i] = cs
				}
				callTool = func(ctx context.Context, i int) error {
					res, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: o.tool, Arguments: o.args})
					if err == nil && res.IsError {
						err = fmt.Errorf("%s: %v", o.tool, res.Content[0].(*mcp.TextContent).Text)
					}
					return err
				}
			case "raw":
				args, _ := json.Marshal(o.args)
				clients := make([]*rawmcp.Client, conc)
				for i := range clients {
					if clients[i], err = rawmcp.Connect(ctx, hc, ts.URL, nil); err != nil {
						t.Fatal(err)
					}
				}
				callTool = func(ctx context.Context, i int) error { return clients[i].Call(ctx, o.tool, string(args)) }
			default:
				t.Fatalf("-client %q: raw or sdk", *client)
			}
			// Interleaved rounds: direct, then parsemcp, so drift hits both.
			// CPU time is read around each round: Parse Server's (node)
			// and this process's (parsemcp and the clients).
			var direct, server []time.Duration
			var psDirect, psVia, goDirect, goVia time.Duration
			for round := 0; round < 2; round++ {
				ps0, go0 := procCPU(t, srv.Pid()), selfCPU(t)
				d, err := run(ctx, conc, *n/2, func(ctx context.Context, _ int) error { return o.direct(ctx) })
				if err != nil {
					t.Fatal(err)
				}
				ps1, go1 := procCPU(t, srv.Pid()), selfCPU(t)
				s, err := run(ctx, conc, *n/2, callTool)
				if err != nil {
					t.Fatal(err)
				}
				ps2, go2 := procCPU(t, srv.Pid()), selfCPU(t)
				direct, server = append(direct, d...), append(server, s...)
				psDirect, goDirect = psDirect+ps1-ps0, goDirect+go1-go0
				psVia, goVia = psVia+ps2-ps1, goVia+go2-go1
			}
			pd, ps := p50(direct), p50(server)
			r := float64(ps) / float64(pd)
			ok := "yes"
			if r > 1.3 {
				ok = "no"
			}
			calls := float64(len(direct))
			perCall := func(d time.Duration) float64 { return msOf(d) / calls }
			// parsemcp's own CPU: this process's during the parsemcp
			// rounds less its CPU during the direct rounds (the clients'
			// share, about the same both ways).
			own := max(goVia-goDirect, 0)
			cpuRatio := float64(psVia+own) / float64(max(psDirect, time.Millisecond))
			fmt.Printf("| %s | %d | %.2f | %.2f | %.2f× | %s | %.2f | %.2f | %.2f | %.2f× |\n", o.name, conc, msOf(pd), msOf(ps), r, ok,
				perCall(psDirect), perCall(psVia), perCall(own), cpuRatio)
		}
	}
	// The floor: an MCP ping over the same transport, no tool and no
	// Parse Server (what any MCP server in front of it adds at least).
	if *client == "raw" {
		for _, conc := range []int{1, 8, 32} {
			clients := make([]*rawmcp.Client, conc)
			for i := range clients {
				if clients[i], err = rawmcp.Connect(ctx, hc, ts.URL, nil); err != nil {
					t.Fatal(err)
				}
			}
			d, err := run(ctx, conc, *n, func(ctx context.Context, i int) error { return clients[i].Ping(ctx) })
			if err != nil {
				t.Fatal(err)
			}
			fmt.Printf("| MCP ping (floor) | %d | | %.2f | | | | | | |\n", conc, msOf(p50(d)))
		}
	}
	var ms1 runtime.MemStats
	runtime.ReadMemStats(&ms1)
	fmt.Printf("\nparsemcp heap in use after the run: %.1f MiB (Go runtime; Parse Server's own memory is Node's)\n", float64(ms1.HeapInuse)/(1<<20))
}

// run makes n calls with conc workers and returns each call's duration.
func run(ctx context.Context, conc, n int, call func(ctx context.Context, worker int) error) ([]time.Duration, error) {
	var mu sync.Mutex
	var out []time.Duration
	var firstErr error
	var wg sync.WaitGroup
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				start := time.Now()
				err := call(ctx, w)
				d := time.Since(start)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out = append(out, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out, firstErr
}

// procCPU returns the user and system CPU time process pid has used.
func procCPU(t *testing.T, pid int) time.Duration {
	d, err := bench.CPUTime(pid)
	if err != nil {
		t.Fatalf("Parse Server's CPU time: %v", err)
	}
	return d
}

// selfCPU returns this process's user and system CPU time.
func selfCPU(t *testing.T) time.Duration {
	d, err := bench.SelfCPUTime()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func p50(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
