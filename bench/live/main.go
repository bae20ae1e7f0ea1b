// Command live measures resource subscriptions end to end through the
// real server: N MCP client sessions (a minimal line reader, or with -client sdk
// the official Go SDK; in memory, protocol 2025-11-25) subscribe to
// parse://Ticket/count on one mcpserver.Server over a SQLite demo store;
// bursts of writes go to the store directly (st.Create, one object at a
// time, as fast as possible); the store's change feed reaches the server,
// which decides visibility once per group of subscribers with equal rules,
// debounces per (group, URI) and sends notifications/resources/updated from
// its senders. Every client records when its notification arrived.
//
// It reports, in one run:
//
//   - the memory of a subscription: heap and goroutine stacks after
//     subscribing the N sessions minus before, divided by N;
//
//   - the latency of every session's notification, from the first write
//     of the burst (the debounce is trailing from the first event: the
//     target is p99 ≤ debounce + 50 ms) and from the last write;
//
//   - how many notifications each session got per burst (expect 1);
//
//   - the baseline: the same bursts with one subscribed session, on the
//     same server, before the N sessions connect; and the floor, the
//     debounce window itself.
//
//     go run ./bench/live                                 # 10,000 sessions, 5 bursts of 50 writes, 250 ms: the server's cost
//     go run ./bench/live -client sdk                     # the same with official Go SDK clients
//     go run ./bench/live -sessions 1000 -uris 10
//     go run ./bench/live -cpuprofile cpu.out             # profiles the N-session bursts only
//
// A benchmark reports; it never fails the build: the exit status is 0
// whatever the verdict (1 only when the run itself cannot be made).
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	benchenv "github.com/parsemcp/parsemcp/bench"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/resources"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/subscribe"
)

// The targets.
const (
	slack          = 50 * time.Millisecond // p99 (from the first write) ≤ debounce + slack
	maxBytesPerSub = 2048
	protocol       = "2025-11-25"
)

type config struct {
	sessions, writes, bursts, uris, rows, workers, senders int
	debounce, timeout                                      time.Duration
	as, client, transport, cpuprofile, memprofile          string
	baseline                                               bool
}

func main() {
	var c config
	flag.IntVar(&c.sessions, "sessions", 10_000, "client sessions, each subscribed to one URI")
	flag.IntVar(&c.writes, "writes", 50, "writes per burst (st.Create, one object each, back to back)")
	flag.IntVar(&c.bursts, "bursts", 5, "measured bursts")
	flag.DurationVar(&c.debounce, "debounce", subscribe.DefaultWindow, "LiveOptions.Debounce")
	flag.IntVar(&c.uris, "uris", 1, "distinct classes (URIs parse://{Class}/count) the sessions are spread over: Ticket, then LiveBenchNNN classes; a burst's writes go round-robin over them")
	flag.IntVar(&c.rows, "rows", 2000, "demo dataset size (objects)")
	flag.StringVar(&c.as, "as", "master", "agent of every session: master (master key) or member (demo user in role org-acme: ACL checked per row)")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Second, "longest wait for a burst's notifications")
	flag.IntVar(&c.senders, "senders", 0, "LiveOptions.Senders (0: the server's default)")
	flag.IntVar(&c.workers, "workers", 0, "goroutines connecting and subscribing the sessions (0: GOMAXPROCS×2)")
	flag.BoolVar(&c.baseline, "baseline", true, "measure the 1-session baseline first")
	flag.StringVar(&c.transport, "transport", "pipe", "how each client reaches the server: buffered (an in-memory stream with a buffer, as a stdio pipe or socket has: a write returns once queued) or pipe (net.Pipe, mcp.NewInMemoryTransports: every write waits until the client goroutine has read it)")
	flag.StringVar(&c.client, "client", "raw", "client sessions: raw (a minimal JSON-RPC client reading lines off its connection: the run measures the server, not in-process clients) or sdk (official Go SDK ClientSession: adds the SDK client's own decoding, about 80 µs per message, on the same cores)")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the N-session bursts to this file")
	flag.StringVar(&c.memprofile, "memprofile", "", "write a heap profile after subscribing to this file (allocations made while subscribing are all recorded: MemProfileRate 1)")
	flag.Parse()
	c.sessions, c.writes, c.bursts, c.uris = max(c.sessions, 1), max(c.writes, 1), max(c.bursts, 1), max(c.uris, 1)
	c.writes = max(c.writes, c.uris) // every class gets at least one write per burst
	if c.workers <= 0 {
		c.workers = 2 * runtime.GOMAXPROCS(0)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "live:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	start := time.Now()
	fmt.Printf("machine: %d CPUs (GOMAXPROCS %d)%s, %s/%s, %s; load average %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), cpuModel(), runtime.GOOS, runtime.GOARCH, runtime.Version(), benchenv.LoadAverage())

	// The store: a small demo dataset in a temporary directory.
	dir, err := os.MkdirTemp("", "parsemcp-bench-live-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Create(ctx, filepath.Join(dir, "live.sqlite"))
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: c.rows}); err != nil {
		return fmt.Errorf("demo dataset: %w", err)
	}
	classes := []string{demo.ClassTicket}
	for i := 1; i < c.uris; i++ {
		sch := parse.NewSchema(fmt.Sprintf("LiveBench%03d", i))
		sch.Fields["title"] = parse.Field{Type: parse.TypeString}
		if err := st.CreateClass(ctx, sch); err != nil {
			return err
		}
		classes = append(classes, sch.ClassName)
	}
	uris := make([]string, len(classes))
	for i, cl := range classes {
		uris[i] = resources.URI(cl, resources.KindCount)
	}

	// The server: default live options but the window (and the session
	// cap, raised only when -sessions exceeds it).
	var id agent.Identity
	switch c.as {
	case "master":
		id = agent.Identity{Mode: agent.AuthMaster}
	case "member":
		id = agent.Identity{Mode: agent.AuthUser, UserID: demo.MemberUserID, Roles: []string{demo.RoleAcme}}
	default:
		return fmt.Errorf("-as %q: want master or member", c.as)
	}
	if c.transport != "buffered" && c.transport != "pipe" {
		return fmt.Errorf("-transport %q: want buffered or pipe", c.transport)
	}
	if c.client != "sdk" && c.client != "raw" {
		return fmt.Errorf("-client %q: want sdk or raw", c.client)
	}
	a := agent.New(agent.Readonly, id)
	live := &mcpserver.LiveOptions{Debounce: c.debounce, Senders: c.senders}
	if c.sessions > subscribe.DefaultSessions {
		live.Limits.Sessions = c.sessions + 1
		fmt.Printf("note: LiveOptions.Limits.Sessions raised from %d to %d for this run\n", subscribe.DefaultSessions, live.Limits.Sessions)
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Live: live,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return a, nil }})
	if err != nil {
		return err
	}
	defer srv.Close()

	// Our own watcher on the change feed, registered after the server's:
	// the hub calls watchers in order, so it sees each change when the
	// server has finished fanning it out to the debouncer.
	fanout := &fanoutClock{}
	defer st.Watch(fanout.seen)()

	b := &bench{c: c, st: st, srv: srv, classes: classes, uris: uris, fanout: fanout}
	b.client = mcp.NewClient(&mcp.Implementation{Name: "parsemcp-bench-live", Version: "1"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: b.updated,
	})

	clientName := "official Go SDK ClientSession"
	if c.client == "raw" {
		clientName = "raw JSON-RPC lines"
	}
	fmt.Printf("setup: SQLite demo store (%d rows) in %s; agent %s; %d sessions (%s, in memory, protocol %s) over %d URI(s) (%s); debounce %v; %d bursts × %d writes\n",
		c.rows, dir, c.as, c.sessions, clientName, protocol, len(uris), uriSummary(uris), c.debounce, c.bursts, c.writes)

	// Baseline: one session, same server, same bursts.
	var base *result
	if c.baseline {
		ss, err := b.connect(ctx, 1, 1)
		if err != nil {
			return err
		}
		if err := b.subscribeAll(ctx, ss); err != nil {
			return err
		}
		if _, err := b.burst(ctx, ss); err != nil { // warm-up, not recorded
			return err
		}
		if base, err = b.measure(ctx, ss); err != nil {
			return err
		}
		for _, s := range ss {
			s.close()
		}
		// Wait for the server to release the session.
		for deadline := time.Now().Add(5 * time.Second); srv.LiveSnapshot().Sessions > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}

	// N sessions: connect, measure, subscribe, measure.
	mPre := memNow()
	t := time.Now()
	ss, err := b.connect(ctx, c.sessions, c.workers)
	if err != nil {
		return err
	}
	connectTime := time.Since(t)
	m0 := memNow()
	if c.memprofile != "" {
		// Every allocation made while subscribing is in the profile.
		runtime.MemProfileRate = 1
	}
	t = time.Now()
	if err := b.subscribeAll(ctx, ss); err != nil {
		return err
	}
	subscribeTime := time.Since(t)
	m1 := memNow()
	snap := srv.LiveSnapshot()
	if snap.Sessions != c.sessions {
		return fmt.Errorf("index holds %d sessions after subscribing %d", snap.Sessions, c.sessions)
	}
	if c.memprofile != "" {
		// Written at rate 1, so that the subscribing allocations are not
		// scaled (those made before are under-counted: look at the
		// subscribe paths only).
		if err := writeHeapProfile(c.memprofile); err != nil {
			return err
		}
		runtime.MemProfileRate = 512 * 1024
	}
	fmt.Printf("connected %d sessions in %v, subscribed them in %v\n", c.sessions, connectTime.Round(time.Millisecond), subscribeTime.Round(time.Millisecond))

	// Bursts, optionally profiled.
	if c.cpuprofile != "" {
		f, err := os.Create(c.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	res, err := b.measure(ctx, ss)
	if c.cpuprofile != "" {
		pprof.StopCPUProfile()
	}
	if err != nil {
		return err
	}

	// Report.
	fmt.Println()
	n := float64(c.sessions)
	heap := float64(int64(m1.heap)-int64(m0.heap)) / n
	stack := float64(int64(m1.stack)-int64(m0.stack)) / n
	fmt.Printf("memory per subscription at %d sessions (heap after GC, and goroutine stacks; after subscribing − before) / N:\n", c.sessions)
	fmt.Printf("  heap   %8.0f B   (live heap %.1f → %.1f MiB)\n", heap, mib(m0.heap), mib(m1.heap))
	fmt.Printf("  stacks %8.0f B   (goroutines %d → %d: %+.2f per subscription)\n", stack, m0.goroutines, m1.goroutines, float64(m1.goroutines-m0.goroutines)/n)
	fmt.Printf("  total  %8.0f B   (target ≤ %d)\n", heap+stack, maxBytesPerSub)
	fmt.Println("  includes, server: the subscribe.Index entries (both directions), live's session record and its group membership")
	fmt.Println("  (one agent.Visibility per group of equal rules), and the SDK server's resourceSubscriptions entry;")
	if c.client == "raw" {
		fmt.Println("  client: nothing (the raw client keeps no state). Excludes the session itself (connected before).")
	} else {
		fmt.Println("  client: whatever the SDK client session keeps after resources/subscribe.")
	}
	fmt.Printf("  excludes the sessions themselves, connected before the first reading: %.0f B of heap and %.1f goroutines (%.0f B of stacks)\n",
		float64(int64(m0.heap)-int64(mPre.heap))/n, float64(m0.goroutines-mPre.goroutines)/n, float64(int64(m0.stack)-int64(mPre.stack))/n)
	fmt.Println("  per session (client and server side together).")

	fmt.Println()
	fmt.Printf("latency of notifications/resources/updated, ms (nearest-rank; %d bursts × %d writes, %d notifications expected per burst)\n", c.bursts, c.writes, c.sessions)
	fmt.Printf("%-38s %8s %8s %8s %8s %8s %8s\n", "", "n", "min", "p50", "p90", "p99", "max")
	row := func(name string, s summary) {
		fmt.Printf("%-38s %8d %8s %8s %8s %8s %8s\n", name, s.n, ms(s.min), ms(s.p50), ms(s.p90), ms(s.p99), ms(s.max))
	}
	fmt.Printf("%-38s %8s %8s %8s %8s %8s %8s\n", "floor: the debounce window", "", ms(c.debounce), ms(c.debounce), ms(c.debounce), ms(c.debounce), ms(c.debounce))
	if base != nil {
		row("1 session (baseline), from first write", base.fromFirst)
		row("1 session (baseline), from last write", base.fromLast)
	}
	row(fmt.Sprintf("%d sessions, from first write", c.sessions), res.fromFirst)
	row(fmt.Sprintf("%d sessions, from last write", c.sessions), res.fromLast)
	fmt.Println()
	fmt.Printf("per burst (%d sessions):\n", c.sessions)
	fmt.Printf("  %-5s %10s %14s %16s %16s %16s  %s\n", "burst", "writes ms", "fan-out done", "first notif.", "last notif.", "send spread", "notifications per session")
	for i, bs := range res.bursts {
		fmt.Printf("  %-5d %10s %14s %16s %16s %16s  %s\n", i+1, ms(bs.writeTime), ms(bs.fanoutDone), ms(bs.firstNotif), ms(bs.lastNotif), ms(bs.lastNotif-bs.firstNotif), histString(bs.perSession))
	}
	if base != nil {
		fmt.Printf("  1-session baseline: writes %s ms per burst (mean), fan-out done %s ms after the first write (mean)\n",
			ms(meanOf(base.bursts, func(b burstStats) time.Duration { return b.writeTime })), ms(meanOf(base.bursts, func(b burstStats) time.Duration { return b.fanoutDone })))
	}
	fmt.Println("  (times from the burst's first write; fan-out done: the server has handed the burst's last change to the debouncer;")
	fmt.Println("   send spread: last − first notification received, i.e. the time to send all of one burst's notifications)")
	perURI := float64(c.sessions) / float64(len(uris))
	fan := meanOf(res.bursts, func(b burstStats) time.Duration { return b.fanoutDone })
	spread := meanOf(res.bursts, func(b burstStats) time.Duration { return b.lastNotif - b.firstNotif })
	notes := 0
	for _, bs := range res.bursts {
		for k, v := range bs.perSession {
			notes += k * v
		}
	}
	fmt.Printf("  server fan-out ≤ %.2f µs per (change, subscriber) (mean fan-out done ÷ %d writes × %.0f subscribers per class; the writes' own time included);\n",
		float64(fan)/float64(time.Microsecond)/(float64(c.writes)*perURI), c.writes, perURI)
	fmt.Printf("  notifications arrive every ≈ %.1f µs (mean send spread ÷ %.0f notifications per burst)\n",
		float64(spread)/float64(time.Microsecond)/max(1, float64(notes)/float64(len(res.bursts))), float64(notes)/float64(len(res.bursts)))

	fmt.Println()
	target := c.debounce + slack
	ok := true
	verdict := func(pass bool) string {
		if pass {
			return "PASS"
		}
		ok = false
		return "FAIL"
	}
	if base != nil {
		fmt.Printf("ratio p99 %d sessions ÷ p99 1 session (from first write): %.2f (%s / %s ms)\n",
			c.sessions, float64(res.fromFirst.p99)/float64(base.fromFirst.p99), ms(res.fromFirst.p99), ms(base.fromFirst.p99))
	}
	fmt.Printf("p99 from first write ≤ debounce + %v = %v: %s ms  %s\n", slack, target, ms(res.fromFirst.p99), verdict(res.fromFirst.p99 <= target))
	fmt.Printf("memory ≤ %d B per subscription (heap + stacks): %.0f B  %s  (heap alone: %.0f B)\n", maxBytesPerSub, heap+stack, verdict(heap+stack <= maxBytesPerSub), heap)
	exact := res.exactlyOne == res.total
	fmt.Printf("exactly one notification per session per burst: %d of %d  %s\n", res.exactlyOne, res.total, verdict(exact))
	overall := "PASS"
	if !ok {
		overall = "FAIL"
	}
	fmt.Printf("overall: %s  (run took %v; load average %s)\n", overall, time.Since(start).Round(time.Second), benchenv.LoadAverage())
	return nil
}

// sess is one client session and the times its notifications arrived in
// the current burst.
type sess struct {
	cs    *mcp.ClientSession // -client sdk
	raw   *rawClient         // -client raw
	uri   string
	mu    sync.Mutex
	times []time.Time
}

func (s *sess) close() {
	if s.cs != nil {
		_ = s.cs.Close()
	}
	if s.raw != nil {
		_ = s.raw.conn.Close()
	}
}

type bench struct {
	c       config
	st      store.Store
	srv     *mcpserver.Server
	client  *mcp.Client
	classes []string
	uris    []string
	fanout  *fanoutClock

	byCS sync.Map              // *mcp.ClientSession → *sess
	cur  atomic.Pointer[round] // the burst being collected
	last atomic.Int64          // UnixNano of the latest notification
	seq  int
}

// updated is every SDK client's ResourceUpdatedHandler.
func (b *bench) updated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	now := time.Now()
	v, ok := b.byCS.Load(req.Session)
	if !ok {
		return
	}
	b.record(v.(*sess), now)
}

// record notes one notification of s received at now.
func (b *bench) record(s *sess, now time.Time) {
	s.mu.Lock()
	s.times = append(s.times, now)
	first := len(s.times) == 1
	s.mu.Unlock()
	b.last.Store(now.UnixNano())
	if r := b.cur.Load(); first && r != nil && r.got.Add(1) == r.want {
		close(r.allDone)
	}
}

// connect opens n client sessions (in memory, protocol 2025-11-25) with
// workers goroutines; session i will subscribe to uris[i mod len(uris)].
func (b *bench) connect(ctx context.Context, n, workers int) ([]*sess, error) {
	out := make([]*sess, n)
	err := parallel(n, workers, func(i int) error {
		if b.c.client == "raw" {
			s := &sess{uri: b.uris[i%len(b.uris)]}
			rc, err := b.connectRaw(ctx, s)
			if err != nil {
				return err
			}
			s.raw, out[i] = rc, s
			return nil
		}
		ct, st, err := b.transports()
		if err != nil {
			return err
		}
		if _, err := b.srv.Connect(ctx, st); err != nil {
			return err
		}
		cs, err := b.client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
		if err != nil {
			return err
		}
		if v := cs.InitializeResult().ProtocolVersion; v != protocol {
			return fmt.Errorf("negotiated protocol %s, want %s", v, protocol)
		}
		s := &sess{cs: cs, uri: b.uris[i%len(b.uris)]}
		b.byCS.Store(cs, s)
		out[i] = s
		return nil
	})
	return out, err
}

func (b *bench) subscribeAll(ctx context.Context, ss []*sess) error {
	return parallel(len(ss), b.c.workers, func(i int) error {
		if rc := ss[i].raw; rc != nil {
			_, err := rc.call(ctx, "resources/subscribe", fmt.Sprintf(`{"uri":%q}`, ss[i].uri))
			return err
		}
		return ss[i].cs.Subscribe(ctx, &mcp.SubscribeParams{URI: ss[i].uri})
	})
}

// rawClient is the client of -client raw: it speaks
// newline-delimited JSON-RPC over the same kind of in-memory pipe
// (net.Pipe, as mcp.NewInMemoryTransports) and decodes nothing: a line
// naming notifications/resources/updated is a notification, a line with
// an id is the response to the one request in flight.
type rawClient struct {
	conn io.ReadWriteCloser
	resp chan []byte
	mu   sync.Mutex // one request at a time
	id   int
}

func (b *bench) connectRaw(ctx context.Context, s *sess) (*rawClient, error) {
	c1, c2, err := b.conns()
	if err != nil {
		return nil, err
	}
	if _, err := b.srv.Connect(ctx, &mcp.IOTransport{Reader: c2, Writer: c2}); err != nil {
		return nil, err
	}
	rc := &rawClient{conn: c1, resp: make(chan []byte, 1)}
	go rc.read(func(now time.Time) { b.record(s, now) })
	res, err := rc.call(ctx, "initialize", `{"protocolVersion":"`+protocol+`","capabilities":{},"clientInfo":{"name":"parsemcp-bench-live-raw","version":"1"}}`)
	if err != nil {
		return nil, err
	}
	if !bytes.Contains(res, []byte(`"protocolVersion":"`+protocol+`"`)) {
		return nil, fmt.Errorf("raw client: initialize did not negotiate %s: %.200s", protocol, res)
	}
	if _, err := rc.conn.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		return nil, err
	}
	return rc, nil
}

// conns returns the two ends of one client's connection: client, server.
func (b *bench) conns() (io.ReadWriteCloser, io.ReadWriteCloser, error) {
	if b.c.transport == "pipe" {
		c1, c2 := net.Pipe()
		return c1, c2, nil
	}
	up, down := newBufPipe(), newBufPipe()
	return bufConn{down, up}, bufConn{up, down}, nil
}

// transports returns one client's transports: client, server.
func (b *bench) transports() (mcp.Transport, mcp.Transport, error) {
	if b.c.transport == "pipe" {
		ct, st := mcp.NewInMemoryTransports()
		return ct, st, nil
	}
	c1, c2, err := b.conns()
	if err != nil {
		return nil, nil, err
	}
	return &mcp.IOTransport{Reader: c1, Writer: c1}, &mcp.IOTransport{Reader: c2, Writer: c2}, nil
}

// bufPipe is a one-way in-memory byte stream with a buffer, as a kernel
// socket or pipe has: Write returns once the bytes are queued (it waits
// only when bufPipeChunks writes are queued and unread), and the reader
// takes them when it runs. (net.Pipe, behind mcp.NewInMemoryTransports,
// has no buffer: each Write waits until the reader has read it all.)
type bufPipe struct {
	ch     chan []byte
	cur    []byte
	closed chan struct{}
	once   sync.Once
}

const bufPipeChunks = 64

func newBufPipe() *bufPipe {
	return &bufPipe{ch: make(chan []byte, bufPipeChunks), closed: make(chan struct{})}
}

func (p *bufPipe) Write(b []byte) (int, error) {
	select {
	case <-p.closed:
		return 0, io.ErrClosedPipe
	default:
	}
	select {
	case p.ch <- bytes.Clone(b):
		return len(b), nil
	case <-p.closed:
		return 0, io.ErrClosedPipe
	}
}

func (p *bufPipe) Read(b []byte) (int, error) {
	if len(p.cur) == 0 {
		select {
		case c := <-p.ch:
			p.cur = c
		case <-p.closed:
			return 0, io.EOF
		}
	}
	n := copy(b, p.cur)
	p.cur = p.cur[n:]
	return n, nil
}

func (p *bufPipe) Close() error {
	p.once.Do(func() { close(p.closed) })
	return nil
}

// bufConn is one end of a connection made of two bufPipes.
type bufConn struct{ in, out *bufPipe }

func (c bufConn) Read(b []byte) (int, error)  { return c.in.Read(b) }
func (c bufConn) Write(b []byte) (int, error) { return c.out.Write(b) }
func (c bufConn) Close() error {
	c.in.Close()
	return c.out.Close()
}

func (rc *rawClient) call(ctx context.Context, method, params string) ([]byte, error) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.id++
	if _, err := fmt.Fprintf(rc.conn, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", rc.id, method, params); err != nil {
		return nil, err
	}
	select {
	case r := <-rc.resp:
		if bytes.Contains(r, []byte(`"error":`)) {
			return nil, fmt.Errorf("raw client: %s: %.300s", method, r)
		}
		return r, nil
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("raw client: %s: no response", method)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

var (
	updatedMethod = []byte(`notifications/resources/updated`)
	idKey         = []byte(`"id":`)
)

func (rc *rawClient) read(notified func(time.Time)) {
	br := bufio.NewReaderSize(rc.conn, 1024)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			continue
		}
		if err != nil {
			return
		}
		if long != nil {
			line, long = append(long, line...), nil
		}
		switch {
		case bytes.Contains(line, updatedMethod):
			notified(time.Now())
		case bytes.Contains(line, idKey):
			select {
			case rc.resp <- bytes.Clone(line):
			default:
			}
		}
	}
}

// parallel runs f(0..n-1) on workers goroutines; the first error wins.
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// round counts the sessions notified at least once in one burst; a
// straggler from an earlier burst can only count towards its own round.
type round struct {
	want    int64
	got     atomic.Int64
	allDone chan struct{} // closed when got reaches want
}

type burstStats struct {
	writeTime  time.Duration // first write start → last write returned
	fanoutDone time.Duration // first write start → the server handed the last change to the debouncer
	firstNotif time.Duration // first write start → first notification received (any session)
	lastNotif  time.Duration // … → last notification received
	perSession map[int]int   // notifications in the burst → sessions
	fromFirst  []time.Duration
	fromLast   []time.Duration
}

// burst writes one burst and collects every session's notifications.
func (b *bench) burst(ctx context.Context, ss []*sess) (burstStats, error) {
	for _, s := range ss {
		s.mu.Lock()
		s.times = s.times[:0]
		s.mu.Unlock()
	}
	r := &round{want: int64(len(ss)), allDone: make(chan struct{})}
	b.cur.Store(r)
	b.fanout.reset(b.c.writes)

	t0 := time.Now()
	for i := range b.c.writes {
		b.seq++
		class := b.classes[i%len(b.classes)]
		obj := parse.Object{"title": fmt.Sprintf("live bench %d", b.seq)}
		if class == demo.ClassTicket {
			obj["status"] = "open"
		}
		if err := b.st.Create(ctx, class, []parse.Object{obj}); err != nil {
			return burstStats{}, fmt.Errorf("write %d: %w", i, err)
		}
	}
	tLast := time.Now()

	select {
	case <-r.allDone:
	case <-time.After(b.c.timeout):
	case <-ctx.Done():
		return burstStats{}, ctx.Err()
	}
	// Quiet period: a second notification of a key re-armed by a late
	// change would come one window after the first.
	quiet := b.c.debounce + 200*time.Millisecond
	for {
		since := time.Since(time.Unix(0, b.last.Load()))
		if fd := b.fanout.done(); !fd.IsZero() && since >= quiet {
			break
		}
		if time.Since(tLast) > b.c.timeout+quiet {
			break
		}
		time.Sleep(quiet - min(since, quiet-10*time.Millisecond))
	}

	bs := burstStats{writeTime: tLast.Sub(t0), perSession: map[int]int{}}
	if fd := b.fanout.done(); !fd.IsZero() {
		bs.fanoutDone = fd.Sub(t0)
	}
	var firstN, lastN time.Time
	for _, s := range ss {
		s.mu.Lock()
		ts := slices.Clone(s.times)
		s.mu.Unlock()
		bs.perSession[len(ts)]++
		if len(ts) == 0 {
			continue
		}
		bs.fromFirst = append(bs.fromFirst, ts[0].Sub(t0))
		bs.fromLast = append(bs.fromLast, ts[len(ts)-1].Sub(tLast))
		if firstN.IsZero() || ts[0].Before(firstN) {
			firstN = ts[0]
		}
		if ts[len(ts)-1].After(lastN) {
			lastN = ts[len(ts)-1]
		}
	}
	if !firstN.IsZero() {
		bs.firstNotif, bs.lastNotif = firstN.Sub(t0), lastN.Sub(t0)
	}
	return bs, nil
}

type result struct {
	bursts              []burstStats
	fromFirst, fromLast summary
	exactlyOne, total   int
}

func (b *bench) measure(ctx context.Context, ss []*sess) (*result, error) {
	r := &result{}
	var first, last []time.Duration
	for range b.c.bursts {
		bs, err := b.burst(ctx, ss)
		if err != nil {
			return nil, err
		}
		r.bursts = append(r.bursts, bs)
		first = append(first, bs.fromFirst...)
		last = append(last, bs.fromLast...)
		r.exactlyOne += bs.perSession[1]
		r.total += len(ss)
	}
	r.fromFirst, r.fromLast = summarize(first), summarize(last)
	return r, nil
}

// fanoutClock records when the server finished with the burst's last
// change (see the Watch in run).
type fanoutClock struct {
	mu     sync.Mutex
	left   int
	doneAt time.Time
}

func (f *fanoutClock) reset(n int) {
	f.mu.Lock()
	f.left, f.doneAt = n, time.Time{}
	f.mu.Unlock()
}

func (f *fanoutClock) seen(store.Change) {
	now := time.Now()
	f.mu.Lock()
	if f.left > 0 {
		if f.left--; f.left == 0 {
			f.doneAt = now
		}
	}
	f.mu.Unlock()
}

func (f *fanoutClock) done() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.doneAt
}

type mem struct {
	heap, stack uint64
	goroutines  int
}

func memNow() mem {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return mem{heap: m.HeapAlloc, stack: m.StackInuse, goroutines: runtime.NumGoroutine()}
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	runtime.GC()
	return pprof.WriteHeapProfile(f)
}

type summary struct {
	n                       int
	min, p50, p90, p99, max time.Duration
}

func summarize(d []time.Duration) summary {
	if len(d) == 0 {
		return summary{}
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[min(len(d)-1, max(0, int(math.Ceil(p*float64(len(d))))-1))] }
	return summary{n: len(d), min: d[0], p50: q(0.50), p90: q(0.90), p99: q(0.99), max: d[len(d)-1]}
}

func meanOf(bs []burstStats, f func(burstStats) time.Duration) time.Duration {
	if len(bs) == 0 {
		return 0
	}
	var sum time.Duration
	for _, b := range bs {
		sum += f(b)
	}
	return sum / time.Duration(len(bs))
}

func histString(h map[int]int) string {
	keys := make([]int, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d×%d", h[k], k))
	}
	return strings.Join(parts, ", ")
}

func uriSummary(uris []string) string {
	if len(uris) <= 2 {
		return strings.Join(uris, ", ")
	}
	return uris[0] + ", " + uris[1] + ", …"
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return " " + strings.TrimSpace(v)
		}
	}
	return ""
}
