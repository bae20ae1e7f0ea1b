// Command peers measures the parsemcp server against its peers under load,
// server only, on the same PostgreSQL data (the demo dataset, 100,000
// objects by default), in one run:
//
//   - parsemcp serve (a child process), called with raw Streamable HTTP
//     JSON-RPC POSTs after one initialize per client (-client sdk: the
//     official go-sdk client instead, its decoding included);
//   - pgx: parsemcp's own SQL straight through pgx in this process, every
//     value of every row read (the database's own rate, the limit);
//   - Parse Server 9 REST with the master key (scripts/parse-server; when
//     installed);
//   - MCP Toolbox for Databases 1.12.0 and dbhub, each running parsemcp's
//     SQL (when installed: bench/peers/install-toolbox.sh puts Toolbox's
//     prebuilt binary from npm in the cache in seconds, TOOLBOX_VERSION
//     choosing another release; install-dbhub.sh likewise).
//
// Operations: find (Ticket where status=open, order -createdAt, limit 100),
// count (the same where), group ($group by status, count) and get (one
// Ticket by objectId). Each cell — target × operation × concurrency (1, 8,
// 32 clients) — runs for -duration; the cells of a round run in a fresh
// random order, -rounds times (interleaved, so drift on a shared machine
// falls on every target alike). Reported per cell: requests/s, p50 and p99
// latency, server CPU per request (utime+stime of the server process from
// /proc, over the cell) and resident memory (idle, and peak VmHWM); then
// the ratios of parsemcp to each peer and the issue-31 targets, each
// labelled with the MCP protocol version of the sessions it compares.
// -protocol picks the version the client asks for (2025-03-26: results as
// text alone; 2025-06-18: text and structuredContent, unless
// -result-content says otherwise; the stateless 2026-07-28: no session),
// so every era is measured by its own run.
//
//	go run ./bench/peers                                 # fresh database, 100,000 objects, dropped at the end
//	go run ./bench/peers -db postgres://postgres@127.0.0.1:5432/DB   # a database holding the demo data already
//	go run ./bench/peers -ops find,get -conc 32 -rounds 5
//	go run ./bench/peers -protocol 2026-07-28 -result-content text  # the stateless era, results as text only
//
// The first line of the report gives the load average before and after the
// run: a run worth recording is made on a quiet machine (no other builds or
// tests), and says so with both figures.
//
// A benchmark reports; it never fails the build (exit 1 only when the run
// itself cannot be made). It is not part of CI.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parsemcp/parsemcp/bench"
	"github.com/parsemcp/parsemcp/internal/rawmcp"
	"github.com/parsemcp/parsemcp/store/postgres"
)

type config struct {
	db, admin, bin, client  string
	protocol, resultContent string
	before, parseDir        string
	rows, rounds, warmup    int
	duration                time.Duration
	ops, targets            []string
	conc                    []int
}

func main() {
	var c config
	var ops, targets, conc string
	flag.StringVar(&c.db, "db", "", "a PostgreSQL database holding the demo data (parsemcp demo --rows N --out URL; then ANALYZE); default: a fresh one, dropped at the end")
	flag.StringVar(&c.admin, "admin", bench.PostgresURL(), "PostgreSQL server the fresh database is created on")
	flag.IntVar(&c.rows, "rows", 100000, "demo objects of a fresh database")
	flag.StringVar(&c.bin, "parsemcp", "", "parsemcp binary (default: go build ./cmd/parsemcp)")
	flag.StringVar(&c.before, "before", "", "a second parsemcp binary (an earlier build), measured as target parsemcp-before in the same rounds")
	flag.StringVar(&c.parseDir, "parse-server-dir", "", "directory holding Parse Server's server.js (default: scripts/parse-server of this tree)")
	flag.StringVar(&c.client, "client", "raw", "MCP client: raw (plain JSON-RPC POSTs) or sdk (the official go-sdk client)")
	flag.StringVar(&c.protocol, "protocol", "", "MCP protocol version the client asks for, e.g. 2025-03-26, 2025-06-18 or the stateless 2026-07-28 (default: the raw client's "+rawmcp.Protocol+", the go-sdk client's latest); a server answers with the version it chose, printed in the header")
	flag.StringVar(&c.resultContent, "result-content", "", "passed to parsemcp serve as --result-content: both, text or structured (default: serve's, both)")
	flag.StringVar(&ops, "ops", strings.Join(allOps, ","), "operations")
	flag.StringVar(&targets, "targets", "parsemcp,pgx,parse-server,toolbox,dbhub", "targets (each skipped with a note when absent; see -before)")
	flag.StringVar(&conc, "conc", "1,8,32", "concurrent clients")
	flag.IntVar(&c.rounds, "rounds", 3, "interleaved rounds")
	flag.DurationVar(&c.duration, "duration", 2*time.Second, "length of one cell")
	flag.IntVar(&c.warmup, "warmup", 30, "requests per target and operation before the rounds")
	flag.Parse()
	switch c.resultContent {
	case "", "both", "text", "structured":
	default:
		fmt.Fprintf(os.Stderr, "peers: bad -result-content %q: want both, text or structured\n", c.resultContent)
		os.Exit(2)
	}
	c.ops = strings.Split(ops, ",")
	c.targets = strings.Split(targets, ",")
	for _, s := range strings.Split(conc, ",") {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "peers: bad -conc %q\n", conc)
			os.Exit(2)
		}
		c.conc = append(c.conc, n)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func repoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if ok {
		return filepath.Dir(filepath.Dir(filepath.Dir(file)))
	}
	return "."
}

func run(ctx context.Context, c config) error {
	log := os.Stderr
	repo := repoRoot()
	loadBefore := bench.LoadAverage()
	if c.db == "" {
		if err := bench.Reachable(ctx, c.admin); err != nil {
			return fmt.Errorf("PostgreSQL at %s: %w", c.admin, err)
		}
		db, err := bench.NewPostgresDB(ctx, c.admin, c.rows, log)
		if db != nil {
			defer func() {
				if err := db.Drop(); err != nil {
					fmt.Fprintln(log, "drop", db.Name+":", err)
				}
			}()
		}
		if err != nil {
			return err
		}
		c.db = db.URL
	}
	st, err := postgres.Open(ctx, c.db)
	if err != nil {
		return err
	}
	sp, err := specs(ctx, st)
	st.Close()
	if err != nil {
		return err
	}
	for _, op := range c.ops {
		if sp[op] == nil {
			return fmt.Errorf("unknown operation %q (want %s)", op, strings.Join(allOps, ","))
		}
	}
	if c.bin == "" {
		dir, err := os.MkdirTemp("", "parsemcp-peers-bin-*")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		c.bin = filepath.Join(dir, "parsemcp")
		build := exec.CommandContext(ctx, "go", "build", "-o", c.bin, "./cmd/parsemcp")
		build.Dir, build.Stdout, build.Stderr = repo, log, log
		if err := build.Run(); err != nil {
			return fmt.Errorf("build parsemcp: %w", err)
		}
	}
	cl := mcpClient{sdk: c.client == "sdk", protocol: c.protocol}

	var ts []*target
	var notes []string
	defer func() {
		for _, t := range ts {
			t.stop()
		}
	}()
	if c.before != "" && !slices.Contains(c.targets, "parsemcp-before") {
		c.targets = append(c.targets, "parsemcp-before")
	}
	for _, name := range c.targets {
		var t *target
		var note string
		var err error
		switch name {
		case "parsemcp":
			t, err = parsemcpTarget(ctx, name, c.bin, c.db, sp, cl, c.resultContent)
		case "parsemcp-before":
			t, err = parsemcpTarget(ctx, name, c.before, c.db, sp, cl, c.resultContent)
		case "pgx":
			t, err = pgxTarget(ctx, c.db, sp)
		case "parse-server":
			dir := c.parseDir
			if dir == "" {
				dir = filepath.Join(repo, "scripts", "parse-server")
			}
			t, note, err = parseServerTarget(ctx, dir, c.db, sp)
		case "toolbox":
			t, note, err = toolboxTarget(ctx, c.db, sp, cl)
		case "dbhub":
			t, note, err = dbhubTarget(ctx, repo, c.db, sp, cl)
		default:
			return fmt.Errorf("unknown target %q", name)
		}
		if err != nil {
			note = "did not start: " + err.Error()
		}
		if note != "" {
			notes = append(notes, name+": skipped: "+note)
			fmt.Fprintln(log, name+": skipped:", note)
			continue
		}
		ts = append(ts, t)
	}
	// Warm up (and check every answer) before anything is measured.
	for _, t := range ts {
		w, err := t.newWorker(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		for _, op := range c.ops {
			for range c.warmup {
				if err := w.do(ctx, op); err != nil {
					return fmt.Errorf("%s %s: %w", t.name, op, err)
				}
			}
		}
		if pw, ok := w.(protocolWorker); ok {
			t.protocol = pw.protocol()
		}
		w.close()
		if t.pid != 0 {
			t.idleRSSKB = memKB(t.pid, "VmRSS")
		}
	}

	type cellKey struct {
		target, op string
		conc       int
	}
	var keys []cellKey
	for _, t := range ts {
		for _, op := range c.ops {
			for _, n := range c.conc {
				keys = append(keys, cellKey{t.name, op, n})
			}
		}
	}
	byName := map[string]*target{}
	for _, t := range ts {
		byName[t.name] = t
	}
	results := map[cellKey][]cell{}
	for r := range c.rounds {
		rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		fmt.Fprintf(log, "round %d/%d: %d cells of %s\n", r+1, c.rounds, len(keys), c.duration)
		for _, k := range keys {
			res, err := runCell(ctx, byName[k.target], k.op, k.conc, c.duration)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				// Reported, not fatal: one failing cell (the database out of
				// connections on a shared machine) must not lose the run.
				fmt.Fprintf(log, "%s %s c=%d: every request failed: %v\n", k.target, k.op, k.conc, err)
				notes = append(notes, fmt.Sprintf("%s %s c=%d round %d: every request failed: %.200v", k.target, k.op, k.conc, r+1, err))
			}
			results[k] = append(results[k], res)
		}
	}

	// Report.
	fmt.Printf("machine: %s; load average before the run %s, after %s (a recorded run needs a quiet machine)\n", machine(), loadBefore, bench.LoadAverage())
	fmt.Printf("client: %s; %d rounds × %s per cell, interleaved; medians over rounds (p50/p99 over every request of the cell's rounds)\n", c.client, c.rounds, c.duration)
	fmt.Printf("MCP protocol: the client asks %s; each server's answer: %s\n", requestedProtocol(c.client, c.protocol), protocols(ts))
	rc := c.resultContent
	if rc == "" {
		rc = "both (serve's default)"
	}
	fmt.Printf("parsemcp --result-content: %s\n\n", rc)
	sum := func(k cellKey) summary { return summarize(results[k]) }
	for _, op := range c.ops {
		fmt.Printf("### %s\n\n", op)
		fmt.Println("| target | c | req/s | p50 ms | p99 ms | server CPU ms/req | RSS idle / peak MB | errors |")
		fmt.Println("| --- | --- | --- | --- | --- | --- | --- | --- |")
		for _, t := range ts {
			for _, n := range c.conc {
				s := sum(cellKey{t.name, op, n})
				cpu, mem := "—", "—"
				if t.pid != 0 {
					cpu = fmt.Sprintf("%.2f", s.cpuMS)
					mem = fmt.Sprintf("%.0f / %.0f", float64(t.idleRSSKB)/1024, float64(memKB(t.pid, "VmHWM"))/1024)
				}
				fmt.Printf("| %s | %d | %.0f | %.2f | %.2f | %s | %s | %d |\n", t.name, n, s.rps, s.p50, s.p99, cpu, mem, s.errors)
			}
		}
		fmt.Println()
	}
	if byName["parsemcp"] != nil {
		fmt.Println("### parsemcp ÷ peer (same run)")
		fmt.Println()
		fmt.Println("| op | c | peer | req/s ratio | p50 ratio | CPU/req ratio |")
		fmt.Println("| --- | --- | --- | --- | --- | --- |")
		for _, op := range c.ops {
			for _, n := range c.conc {
				me := sum(cellKey{"parsemcp", op, n})
				for _, t := range ts {
					if t.name == "parsemcp" {
						continue
					}
					p := sum(cellKey{t.name, op, n})
					cpu := "—"
					if t.pid != 0 {
						cpu = fmt.Sprintf("%.2f", me.cpuMS/p.cpuMS)
					}
					fmt.Printf("| %s | %d | %s | %.2f | %.2f | %s |\n", op, n, t.name, me.rps/p.rps, me.p50/p.p50, cpu)
				}
			}
		}
		fmt.Println()
		printTargets(c, byName, sum2(func(target, op string, n int) summary { return sum(cellKey{target, op, n}) }), func(t *target) int { return memKB(t.pid, "VmHWM") })
	}
	for _, n := range notes {
		fmt.Println("note:", n)
	}
	return nil
}

type sum2 func(target, op string, n int) summary

// requestedProtocol is the MCP protocol version the client asks for at
// initialize (or, stateless, in each request).
func requestedProtocol(client, protocol string) string {
	switch {
	case protocol >= rawmcp.Stateless:
		return protocol + " (stateless: no session, server/discover then each call alone; a server without it is initialized at its own latest)"
	case protocol != "":
		return protocol
	case client == "sdk":
		return "the go-sdk client's latest"
	}
	return rawmcp.Protocol
}

// protocols lists the protocol version each MCP target chose, with the
// peer's release where known.
func protocols(ts []*target) string {
	var parts []string
	for _, t := range ts {
		if t.protocol == "" {
			continue
		}
		name := t.name
		if t.version != "" {
			name += " " + t.version
		}
		parts = append(parts, name+" "+t.protocol)
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// printTargets checks the issue-31 targets, each a ratio of this run's
// cells (the same rounds) at each concurrency, labelled with the protocol
// version of the sessions it compares. A target whose cells the run lacks
// (a peer skipped, an operation or a concurrency not asked for) is listed
// as not measured, so the table always holds every target.
func printTargets(c config, ts map[string]*target, sum sum2, peakKB func(*target) int) {
	me := ts["parsemcp"]
	fmt.Println("### targets (issue 31)")
	fmt.Println()
	fmt.Println("| target | protocol | measured | verdict |")
	fmt.Println("| --- | --- | --- | --- |")
	proto := func(peer string) string {
		p := me.protocol
		if t := ts[peer]; t != nil && t.protocol != "" && t.protocol != p {
			p += " (" + peer + " " + t.protocol + ")"
		}
		if p == "" {
			p = "—"
		}
		return p
	}
	line := func(name, peer string, v, limit float64, le, measured bool) {
		if !measured {
			fmt.Printf("| %s | — | — | not measured |\n", name)
			return
		}
		ok := v <= limit
		if !le {
			ok = v >= limit
		}
		verdict := "MET"
		if !ok {
			verdict = "NOT MET"
		}
		fmt.Printf("| %s | %s | %.2f | %s |\n", name, proto(peer), v, verdict)
	}
	has := func(peer, op string, n int) bool {
		return ts[peer] != nil && slices.Contains(c.ops, op) && slices.Contains(c.conc, n)
	}
	conc := []int{1, 8, 32}
	for _, n := range c.conc {
		if !slices.Contains(conc, n) {
			conc = append(conc, n)
		}
	}
	slices.Sort(conc)
	ratio := func(op, peer string, n int, cpu bool) float64 {
		a, b := sum("parsemcp", op, n), sum(peer, op, n)
		if cpu {
			return a.cpuMS / b.cpuMS
		}
		return a.rps / b.rps
	}
	const tb, ps = "toolbox", "parse-server"
	for _, op := range allOps {
		for _, n := range conc {
			line(fmt.Sprintf("%s server CPU/call c=%d ≤ 1× Toolbox's", op, n), tb, ratio(op, tb, n, true), 1, true, has(tb, op, n))
		}
	}
	for _, n := range conc {
		line(fmt.Sprintf("find server CPU/call c=%d ≤ 0.7× Parse Server's", n), ps, ratio(opFind, ps, n, true), 0.7, true, has(ps, opFind, n))
	}
	for _, op := range allOps {
		limit := 1.0
		if op == opGet || op == opCount {
			limit = 0.8
		}
		for _, n := range conc {
			line(fmt.Sprintf("%s req/s c=%d ≥ %.1f× Toolbox's", op, n, limit), tb, ratio(op, tb, n, false), limit, false, has(tb, op, n))
		}
	}
	line("find req/s c=32 ≥ 0.6× pgx's", "pgx", ratio(opFind, "pgx", 32, false), 0.6, false, has("pgx", opFind, 32))
	findLoad := slices.Contains(c.ops, opFind) && slices.Contains(c.conc, 32)
	line("RSS idle ≤ 30 MB (MB)", "", float64(me.idleRSSKB)/1024, 30, true, true)
	line("RSS peak ≤ 60 MB, the run's VmHWM, c=32 find among its cells (MB)", "", float64(peakKB(me))/1024, 60, true, findLoad)
	fmt.Println()
}

// cell is one measured cell of one round.
type cell struct {
	n       int
	errors  int
	elapsed time.Duration
	cpu     time.Duration
	lat     []time.Duration
}

func runCell(ctx context.Context, t *target, op string, conc int, d time.Duration) (cell, error) {
	ws := make([]worker, conc)
	for i := range ws {
		w, err := t.newWorker(ctx)
		if err != nil {
			return cell{}, err
		}
		ws[i] = w
	}
	defer func() {
		for _, w := range ws {
			w.close()
		}
	}()
	var cpu0 time.Duration
	if t.pid != 0 {
		var err error
		if cpu0, err = bench.CPUTime(t.pid); err != nil {
			return cell{}, err
		}
	}
	lats := make([][]time.Duration, conc)
	errs := make([]int, conc)
	var firstErr error
	var once sync.Once
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				t0 := time.Now()
				if err := w.do(ctx, op); err != nil {
					errs[i]++
					once.Do(func() { firstErr = err })
					continue
				}
				lats[i] = append(lats[i], time.Since(t0))
			}
		})
	}
	wg.Wait()
	res := cell{elapsed: time.Since(start)}
	if t.pid != 0 {
		cpu1, err := bench.CPUTime(t.pid)
		if err != nil {
			return cell{}, err
		}
		res.cpu = cpu1 - cpu0
	}
	for i := range ws {
		res.lat = append(res.lat, lats[i]...)
		res.errors += errs[i]
	}
	res.n = len(res.lat)
	if res.n == 0 && firstErr != nil {
		return res, firstErr
	}
	return res, nil
}

type summary struct {
	rps, p50, p99, cpuMS float64
	errors               int
}

func summarize(cs []cell) summary {
	var s summary
	var rps, cpu []float64
	var all []time.Duration
	for _, c := range cs {
		rps = append(rps, float64(c.n)/c.elapsed.Seconds())
		if c.n > 0 {
			cpu = append(cpu, float64(c.cpu)/float64(time.Millisecond)/float64(c.n))
		}
		all = append(all, c.lat...)
		s.errors += c.errors
	}
	s.rps, s.cpuMS = median(rps), median(cpu)
	slices.Sort(all)
	s.p50, s.p99 = pctMS(all, 50), pctMS(all, 99)
	return s
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// pctMS is the nearest-rank percentile of sorted durations, in ms.
func pctMS(sorted []time.Duration, p int) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return float64(sorted[i-1]) / float64(time.Millisecond)
}

func machine() string {
	cpu := ""
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "model name"); ok {
				cpu = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(v), ":"))
				break
			}
		}
	}
	return fmt.Sprintf("%d CPUs (%s), %s/%s, %s", runtime.NumCPU(), cpu, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
