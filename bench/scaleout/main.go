// Command scaleout runs two `parsemcp serve` instances on one PostgreSQL
// database and one Redis behind a real HAProxy (docs/SCALING.md), puts
// them under load, and takes one instance away twice: kill -9 (then it is
// started again), and SIGTERM. Writers (stateful sessions through the
// balancer) create objects and count what was acknowledged; subscribers
// (resources/subscribe on parse://Ticket/count) record when they are
// told. A client whose session breaks connects again, as an application
// would.
//
// It prints, for the whole run and per event:
//
//   - requests sent and failed (a failed one is retried on a new session);
//
//   - writes acknowledged, and how many of them are in the database at
//     the end (every acknowledged write must be);
//
//   - the notification gap: for each subscriber, the longest time without
//     a notification that the event falls in or that begins after it,
//     until the next event (median and worst across subscribers; writes
//     go on all the time, so a subscriber that hears nothing has lost its
//     stream); and how long after the event the subscribers whose
//     instance went away saw their session end (and so connected again).
//
//     go run ./bench/scaleout                   # 8 writers, 8 subscribers, events at 5 s and 15 s
//     go run ./bench/scaleout -writers 16 -subscribers 50 -phase 10s
//
// It needs haproxy, a Redis (-redis, default 127.0.0.1:6379) and a
// PostgreSQL server (PARSEMCP_BENCH_PG, else PARSEMCP_TEST_PG, else the
// local one), on which it creates a database parsemcp_bench_<random> and
// drops it at the end. A benchmark reports; it never fails the build: the
// exit status is 0 whatever the figures (1 only when the run itself cannot
// be made).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/bench"
	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/internal/testing/haproxy"
)

const uri = "parse://Ticket/count"

type config struct {
	writers, subscribers, rows int
	phase                      time.Duration
	redis                      string
}

func main() {
	var c config
	flag.IntVar(&c.writers, "writers", 8, "writer sessions, each creating objects one after another")
	flag.IntVar(&c.subscribers, "subscribers", 8, "subscriber sessions on "+uri)
	flag.IntVar(&c.rows, "rows", 1000, "demo rows in the database")
	flag.DurationVar(&c.phase, "phase", 5*time.Second, "load before the first event, between events and after the last")
	flag.StringVar(&c.redis, "redis", "127.0.0.1:6379", "Redis address")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "scaleout:", err)
		os.Exit(1)
	}
}

// instance is one serve process on a fixed address (so it can be started
// again where the balancer expects it).
type instance struct {
	name, addr, bin string
	args, env       []string
	cmd             *exec.Cmd
	log             *os.File
	exited          chan struct{}
}

var listening = regexp.MustCompile(`msg=listening`)

func (in *instance) start() error {
	in.cmd = exec.Command(in.bin, append([]string{"serve", "--addr", in.addr}, in.args...)...)
	in.cmd.Env = append(os.Environ(), in.env...)
	pr, pw := io.Pipe()
	in.cmd.Stderr = pw
	if err := in.cmd.Start(); err != nil {
		return err
	}
	in.exited = make(chan struct{})
	go func() { _ = in.cmd.Wait(); pw.Close(); close(in.exited) }()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			fmt.Fprintf(in.log, "%s %s\n", in.name, sc.Text())
			if listening.MatchString(sc.Text()) {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
		return nil
	case <-in.exited:
		return fmt.Errorf("%s exited before listening (see %s)", in.name, in.log.Name())
	case <-time.After(2 * time.Minute):
		return fmt.Errorf("%s did not listen", in.name)
	}
}

// recorder keeps what the clients saw.
type recorder struct {
	sent, failed atomic.Int64
	mu           sync.Mutex
	acked        []string
	failures     []time.Time
	notified     [][]time.Time // per subscriber
	ended        [][]time.Time // per subscriber: when a session of it ended
}

func (r *recorder) fail() {
	r.failed.Add(1)
	r.mu.Lock()
	r.failures = append(r.failures, time.Now())
	r.mu.Unlock()
}

func run(c config) error {
	haproxyBin, err := haproxy.Find()
	if err != nil {
		return err
	}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "scaleout")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "parsemcp")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/parsemcp").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	db, err := bench.NewPostgresDB(ctx, bench.PostgresURL(), c.rows, os.Stderr)
	if db != nil {
		defer db.Drop()
	}
	if err != nil {
		return err
	}
	if out, err := exec.Command(bin, "migrate", "--store", db.URL).CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %v\n%s", err, out)
	}
	logFile, err := os.Create(filepath.Join(os.TempDir(), "scaleout.log"))
	if err != nil {
		return err
	}
	defer logFile.Close()
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freeport.Get(); err != nil {
			return err
		}
	}
	args := []string{"--store", db.URL, "--redis", "redis://" + c.redis + "/0", "--redis-prefix", filepath.Base(dir),
		"--permission", "write", "--live-debounce", "100ms", "--rate-limit", "0", "--preauth-limit", "0", "--trusted-proxies", "127.0.0.1"}
	env := []string{"PARSEMCP_ALLOW_WRITE_TOOLS=true", "PARSEMCP_ALLOW_RAW_CRUD=true"}
	a := &instance{name: "a", addr: fmt.Sprintf("127.0.0.1:%d", ports[0]), bin: bin, args: args, env: env, log: logFile}
	b := &instance{name: "b", addr: fmt.Sprintf("127.0.0.1:%d", ports[1]), bin: bin, args: args, env: env, log: logFile}
	for _, in := range []*instance{a, b} {
		if err := in.start(); err != nil {
			return err
		}
		defer func() { _ = in.cmd.Process.Kill() }()
	}
	hp, err := haproxy.Start(haproxyBin, dir, ports[2], a.addr, b.addr)
	if err != nil {
		return err
	}
	defer func() { _ = hp.Process.Kill(); _ = hp.Wait() }()
	lb := fmt.Sprintf("http://127.0.0.1:%d/mcp", ports[2])

	rec := &recorder{notified: make([][]time.Time, c.subscribers), ended: make([][]time.Time, c.subscribers)}
	loadCtx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for i := range c.subscribers {
		wg.Go(func() { subscriber(loadCtx, lb, i, rec) })
	}
	for i := range c.writers {
		wg.Go(func() { writer(loadCtx, lb, i, rec) })
	}
	start := time.Now()
	type event struct {
		name string
		at   time.Time
	}
	var events []event
	time.Sleep(c.phase)
	events = append(events, event{"kill -9 a", time.Now()})
	_ = a.cmd.Process.Kill()
	<-a.exited
	time.Sleep(c.phase)
	if err := a.start(); err != nil { // back, for the next event
		return err
	}
	time.Sleep(c.phase)
	events = append(events, event{"SIGTERM b", time.Now()})
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	<-b.exited
	time.Sleep(c.phase)
	stop()
	wg.Wait()
	elapsed := time.Since(start)

	// What is in the database.
	conn, err := pgx.Connect(ctx, db.URL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	present := map[string]bool{}
	rows, err := conn.Query(ctx, `SELECT "objectId" FROM "Ticket" WHERE title LIKE 'scaleout-%'`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		present[id] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	missing := 0
	for _, id := range rec.acked {
		if !present[id] {
			missing++
		}
	}

	fmt.Printf("scale-out: 2 instances behind HAProxy, PostgreSQL, Redis; %d writers, %d subscribers, %s of load\n", c.writers, c.subscribers, elapsed.Round(time.Second))
	fmt.Printf("requests: %d sent, %d failed (each retried on a new session)\n", rec.sent.Load(), rec.failed.Load())
	fmt.Printf("writes: %d acknowledged, %d of them present, %d missing; %d present in all (a write whose answer was lost may be there unacknowledged)\n",
		len(rec.acked), len(rec.acked)-missing, missing, len(present))
	for i, e := range events {
		end := time.Now()
		if i+1 < len(events) {
			end = events[i+1].at
		}
		failed := 0
		for _, t := range rec.failures {
			if !t.Before(e.at) && t.Before(end) {
				failed++
			}
		}
		var gaps []time.Duration
		lost := 0
		for _, ts := range rec.notified {
			// The longest silence that the event falls in or that starts
			// after it, until the next event.
			var worst time.Duration
			last, seen := time.Time{}, false
			for _, t := range ts {
				if t.After(end) {
					break
				}
				if !t.Before(e.at) && !last.IsZero() {
					worst, seen = max(worst, t.Sub(last)), true
				}
				last = t
			}
			if !seen {
				lost++
				continue
			}
			gaps = append(gaps, worst)
		}
		slices.Sort(gaps)
		line := fmt.Sprintf("%-10s requests failed after it: %d; notification gap", e.name+":", failed)
		if len(gaps) > 0 {
			line += fmt.Sprintf(" median %s, worst %s", gaps[len(gaps)/2].Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
		}
		if lost > 0 {
			line += fmt.Sprintf(", %d subscribers never notified again", lost)
		}
		var moved []time.Duration
		for _, ts := range rec.ended {
			if i := slices.IndexFunc(ts, func(t time.Time) bool { return !t.Before(e.at) && t.Before(end) }); i >= 0 {
				moved = append(moved, ts[i].Sub(e.at))
			}
		}
		slices.Sort(moved)
		if len(moved) > 0 {
			line += fmt.Sprintf("; %d subscribers lost their session, after median %s, worst %s", len(moved),
				moved[len(moved)/2].Round(time.Millisecond), moved[len(moved)-1].Round(time.Millisecond))
		}
		fmt.Println(line)
	}
	fmt.Printf("instance logs: %s\n", logFile.Name())
	return nil
}

// connect opens a stateful session through the balancer.
func connect(ctx context.Context, lb string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	return mcp.NewClient(&mcp.Implementation{Name: "scaleout", Version: "1"}, opts).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: lb}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// writer creates objects one after another, recording the acknowledged
// ids; a failure breaks its session, and it connects again.
func writer(ctx context.Context, lb string, n int, rec *recorder) {
	var cs *mcp.ClientSession
	defer func() {
		if cs != nil {
			cs.Close()
		}
	}()
	for i := 0; ctx.Err() == nil; i++ {
		if cs == nil {
			var err error
			if cs, err = connect(ctx, lb, nil); err != nil {
				rec.sent.Add(1)
				rec.fail()
				time.Sleep(50 * time.Millisecond) // no instance reachable: do not spin
				continue
			}
		}
		rec.sent.Add(1)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_object",
			Arguments: map[string]any{"class_name": "Ticket", "object": map[string]any{"title": fmt.Sprintf("scaleout-%d-%d", n, i)}}})
		if ctx.Err() != nil {
			return
		}
		if err != nil || res.IsError {
			rec.fail()
			cs.Close()
			cs = nil
			continue
		}
		var out struct {
			ObjectID string `json:"object_id"`
		}
		if tc, ok := res.Content[0].(*mcp.TextContent); ok && json.Unmarshal([]byte(tc.Text), &out) == nil && out.ObjectID != "" {
			rec.mu.Lock()
			rec.acked = append(rec.acked, out.ObjectID)
			rec.mu.Unlock()
		}
	}
}

// subscriber stays subscribed, connecting and subscribing again whenever
// its session ends.
func subscriber(ctx context.Context, lb string, n int, rec *recorder) {
	for ctx.Err() == nil {
		cs, err := connect(ctx, lb, &mcp.ClientOptions{ResourceUpdatedHandler: func(context.Context, *mcp.ResourceUpdatedNotificationRequest) {
			rec.mu.Lock()
			rec.notified[n] = append(rec.notified[n], time.Now())
			rec.mu.Unlock()
		}})
		rec.sent.Add(1)
		if err != nil {
			rec.fail()
			time.Sleep(50 * time.Millisecond) // no instance reachable: do not spin
			continue
		}
		rec.sent.Add(1)
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			rec.fail()
			cs.Close()
			continue
		}
		ended := make(chan struct{})
		go func() { _ = cs.Wait(); close(ended) }()
		select {
		case <-ended:
			rec.mu.Lock()
			rec.ended[n] = append(rec.ended[n], time.Now())
			rec.mu.Unlock()
		case <-ctx.Done():
		}
		cs.Close()
	}
}
