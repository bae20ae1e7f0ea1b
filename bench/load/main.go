// Command load measures admission under load through the real HTTP
// server (mcpserver.NewHandler behind mcpserver.NewHTTPServer, on a
// loopback port): N sessions, each its own principal, open at once and
// each make M tools/call count_objects calls in a row. It reports:
//
//   - the success rate, and the refusals by kind (429 over a principal's
//     in-flight cap, 503 over the stream cap) and other errors: the target
//     is no refusal while every principal is under its own cap;
//
//   - the latency of the calls under load (p50, p99, nearest-rank), and
//     the baseline measured first in the same run: one session making the
//     same calls alone;
//
//   - the process's resident memory (VmRSS before, VmHWM peak; server and
//     clients share the process).
//
//     go run ./bench/load                            # 200 sessions × 5 calls, SQLite demo data (2,000 objects)
//     go run ./bench/load -store postgres://postgres@127.0.0.1:5432/DB
//     go run ./bench/load -sessions 400 -max-streams 100   # see the stream cap queue
//
// The run is bounded (a fixed number of calls, and -timeout). A benchmark
// reports; it never fails the build: the exit status is 0 whatever the
// verdict (1 only when the run itself cannot be made).
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

type config struct {
	sessions, calls, baseline, rows     int
	maxInFlight, maxStreams, dbMaxConns int
	storeURL                            string
	timeout                             time.Duration
}

func main() {
	var c config
	flag.IntVar(&c.sessions, "sessions", 200, "concurrent sessions, each its own principal")
	flag.IntVar(&c.calls, "calls", 5, "calls per session, in a row")
	flag.IntVar(&c.baseline, "baseline", 50, "calls of the baseline (one session alone)")
	flag.IntVar(&c.rows, "rows", 2000, "demo objects (SQLite)")
	flag.IntVar(&c.maxInFlight, "max-inflight", mcpserver.DefaultMaxInFlight, "per-principal in-flight cap")
	flag.IntVar(&c.maxStreams, "max-streams", mcpserver.DefaultMaxStreams, "server-wide stream cap")
	flag.IntVar(&c.dbMaxConns, "db-max-conns", 0, "database connections (0: the store's default)")
	flag.StringVar(&c.storeURL, "store", "", "postgres://… (a database the demo data is written into when empty); default: a SQLite demo database in a temporary directory")
	flag.DurationVar(&c.timeout, "timeout", 5*time.Minute, "bound of the whole run")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

func openStore(ctx context.Context, c config) (store.Store, string, func(), error) {
	if c.storeURL != "" {
		st, err := postgres.Create(ctx, c.storeURL, postgres.WithMaxConns(c.dbMaxConns))
		if err != nil {
			return nil, "", nil, err
		}
		schemas, err := st.Schemas(ctx)
		if err != nil {
			return nil, "", nil, err
		}
		if !slices.ContainsFunc(schemas, func(s parse.Schema) bool { return s.ClassName == demo.ClassTicket }) {
			if _, err := demo.Generate(ctx, st, demo.Options{Rows: c.rows}); err != nil {
				return nil, "", nil, err
			}
		}
		return st, "postgres", func() { st.Close() }, nil
	}
	dir, err := os.MkdirTemp("", "parsemcp-load-")
	if err != nil {
		return nil, "", nil, err
	}
	st, err := sqlite.Create(ctx, filepath.Join(dir, "load.sqlite"), sqlite.WithMaxConns(c.dbMaxConns))
	if err != nil {
		return nil, "", nil, err
	}
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: c.rows}); err != nil {
		return nil, "", nil, err
	}
	return st, fmt.Sprintf("sqlite, %d demo objects", c.rows), func() { st.Close(); os.RemoveAll(dir) }, nil
}

func run(c config) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, where, closeStore, err := openStore(ctx, c)
	if err != nil {
		return err
	}
	defer closeStore()
	// Each bearer token is a principal of its own.
	mk := func(r *http.Request) (*agent.Agent, error) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok {
			return nil, agent.ErrUnauthorized
		}
		a := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster})
		a.Policy.Name = tok
		return a, nil
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Agents: func(ctx context.Context, ri mcpserver.RequestInfo) (*agent.Agent, error) { return mk(ri.Request) }})
	if err != nil {
		return err
	}
	defer srv.Close()
	h, err := mcpserver.NewHandler(mcpserver.HandlerOptions{Server: srv, Agent: mk, HTTPOptions: mcpserver.HTTPOptions{MaxInFlight: c.maxInFlight, MaxStreams: c.maxStreams, MaxListeners: c.sessions + 10}})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := mcpserver.NewHTTPServer(h, mcpserver.ServerOptions{})
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	url := "http://" + ln.Addr().String() + "/"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c.sessions + 10, MaxConnsPerHost: 0}}

	rssStart := memKB("VmRSS")
	fmt.Printf("load: %d sessions (one principal each) × %d calls of count_objects on %s; max-inflight %d, max-streams %d; store %s\n",
		c.sessions, c.calls, demo.ClassTicket, c.maxInFlight, c.maxStreams, where)

	// The baseline: one session alone.
	b := &session{c: client, url: url, token: "baseline"}
	if err := b.open(ctx); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	var base []time.Duration
	for range c.baseline {
		d, kind := b.call(ctx)
		if kind != "ok" {
			return fmt.Errorf("baseline call: %s", kind)
		}
		base = append(base, d)
	}

	// The load: every session opens, then all call at once.
	sessions := make([]*session, c.sessions)
	for i := range sessions {
		sessions[i] = &session{c: client, url: url, token: "p" + strconv.Itoa(i)}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lat []time.Duration
	kinds := map[string]int{}
	start := make(chan struct{})
	began := time.Now()
	for _, s := range sessions {
		wg.Go(func() {
			err := s.open(ctx)
			<-start
			if err != nil {
				mu.Lock()
				kinds["initialize failed"] += c.calls
				mu.Unlock()
				return
			}
			for range c.calls {
				d, kind := s.call(ctx)
				mu.Lock()
				kinds[kind]++
				if kind == "ok" {
					lat = append(lat, d)
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	wall := time.Since(began)
	total := c.sessions * c.calls
	ok := kinds["ok"]
	fmt.Printf("baseline (1 session, %d calls in a row): p50 %s  p99 %s\n", len(base), ms(pct(base, 50)), ms(pct(base, 99)))
	fmt.Printf("under load: %d calls, success %.1f%%", total, 100*float64(ok)/float64(total))
	var other []string
	for k, n := range kinds {
		if k != "ok" {
			other = append(other, fmt.Sprintf("%s: %d", k, n))
		}
	}
	slices.Sort(other)
	if len(other) > 0 {
		fmt.Printf(" (%s)", strings.Join(other, ", "))
	}
	fmt.Println()
	if len(lat) > 0 {
		fmt.Printf("latency under load: p50 %s (%.1f× baseline)  p99 %s (%.1f× baseline); %.0f calls/s over %s\n",
			ms(pct(lat, 50)), ratio(pct(lat, 50), pct(base, 50)), ms(pct(lat, 99)), ratio(pct(lat, 99), pct(base, 99)), float64(ok)/wall.Seconds(), wall.Round(time.Millisecond))
	}
	fmt.Printf("memory: RSS %d MiB before the load, peak %d MiB (VmHWM; server and clients in one process)\n", rssStart/1024, memKB("VmHWM")/1024)
	verdict := "PASS"
	if ok != total {
		verdict = "WARN"
	}
	fmt.Printf("%s: no refusals while every principal is under its own cap (each has 1 call in flight, cap %d)\n", verdict, c.maxInFlight)
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Printf("machine: %d CPUs, load average %s\n", runtime.NumCPU(), strings.Join(strings.Fields(string(la))[:3], " "))
	}
	return nil
}

type session struct {
	c          *http.Client
	url, token string
	id         string
	next       int
}

func (s *session) post(ctx context.Context, body string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+s.token)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	return s.c.Do(req)
}

func (s *session) open(ctx context.Context) error {
	resp, err := s.post(ctx, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"load","version":"1"}}}`)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("initialize: %d", resp.StatusCode)
	}
	s.id = resp.Header.Get("Mcp-Session-Id")
	resp, err = s.post(ctx, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil
}

// call runs one count_objects and says how it ended: ok, 429, 503, or
// an error.
func (s *session) call(ctx context.Context) (time.Duration, string) {
	s.next++
	t0 := time.Now()
	resp, err := s.post(ctx, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":%q}}}`, s.next, demo.ClassTicket))
	if err != nil {
		return 0, "transport error"
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		_, _ = io.Copy(io.Discard, resp.Body)
		return 0, "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var m struct {
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &m) == nil && m.Result != nil {
			d := time.Since(t0)
			if m.Result.IsError {
				return d, "tool error"
			}
			return d, "ok"
		}
	}
	return 0, "no result"
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100 // nearest rank
	return s[max(i, 1)-1]
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d.Microseconds())/1000) }

// memKB reads a line of /proc/self/status (0 where there is none).
func memKB(field string) int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
