package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/demo"
)

// Target is the most the server may add at p50: server p50 / direct p50.
const Target = 1.30

// Config configures Compare.
type Config struct {
	Rows       int      // demo dataset size (default 100,000)
	N          int      // measured iterations per operation (default 300)
	Warmup     int      // unrecorded iterations first (default N/10, at least 10)
	Backends   []string // default sqlite, postgres
	Identities []string // default master, member
	Operations []string // default all
	HTTP       bool     // also measure Streamable HTTP
	// SDK adds the SDK-only experiment: the MCP SDK round trip of the
	// query_class result in different shapes, without parsemcp code.
	SDK bool
	// PostgresURL is the server to create the benchmark database on
	// (default PostgresURL()).
	PostgresURL string
	// Out receives the tables, Log the progress and notes.
	Out, Log io.Writer
}

func (c *Config) defaults() {
	if c.Rows <= 0 {
		c.Rows = 100_000
	}
	if c.N <= 0 {
		c.N = 300
	}
	if c.Warmup <= 0 {
		c.Warmup = max(c.N/10, 10)
	}
	if len(c.Backends) == 0 {
		c.Backends = []string{SQLite, Postgres}
	}
	if len(c.Identities) == 0 {
		c.Identities = IdentityNames()
	}
	if len(c.Operations) == 0 {
		c.Operations = Operations
	}
	if c.Out == nil {
		c.Out = io.Discard
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
}

// Result is the latencies of one operation on one backend for one
// identity, per mode, measured interleaved.
type Result struct {
	Op, Backend, Identity string
	Samples               map[Mode][]time.Duration // sorted
	ResultBytes           int                      // size of the tool's JSON result
}

// P returns the q-quantile (0..1, nearest rank) of mode m's latencies.
func (r *Result) P(m Mode, q float64) time.Duration {
	s := r.Samples[m]
	if len(s) == 0 {
		return 0
	}
	i := int(q*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// Measure runs c's modes n times after warmup unrecorded rounds,
// interleaved: each round runs every mode once, in a fresh (seeded) random
// order, so that each mode runs about equally often in each position and
// after each other mode (a fixed rotation would always run direct right
// after the garbage-heavy HTTP call), and drift (caches, GC, autovacuum,
// CPU frequency) hits all of them alike.
func Measure(ctx context.Context, c *Case, warmup, n int) (map[Mode][]time.Duration, error) {
	modes := c.modes()
	out := make(map[Mode][]time.Duration, len(modes))
	for _, m := range modes {
		out[m] = make([]time.Duration, 0, n)
	}
	rng := rand.New(rand.NewPCG(uint64(n), uint64(len(modes))))
	order := slices.Clone(modes)
	runtime.GC()
	for i := -warmup; i < n; i++ {
		rng.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
		for _, m := range order {
			start := time.Now()
			if _, err := c.Run[m](ctx); err != nil {
				return nil, fmt.Errorf("%s %s: %w", c.Op, m, err)
			}
			if d := time.Since(start); i >= 0 {
				out[m] = append(out[m], d)
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	for _, s := range out {
		slices.Sort(s)
	}
	return out, nil
}

// Compare runs the comparison and prints the tables to cfg.Out. A backend
// that cannot be opened because PostgreSQL is unreachable is skipped with a
// note; other failures stop the run.
func Compare(ctx context.Context, cfg Config) ([]*Result, error) {
	cfg.defaults()
	fmt.Fprintf(cfg.Log, "parsemcp server-overhead benchmark: %d demo objects (demo.Version %s), %d interleaved rounds (+%d warm-up), GOMAXPROCS=%d, %s\n",
		cfg.Rows, demo.Version, cfg.N, cfg.Warmup, runtime.GOMAXPROCS(0), runtime.Version())
	var results []*Result
	var notes []string
	protocol := ""
	var payload []byte // the first query_class result, for the SDK experiment
	for _, backend := range cfg.Backends {
		env, err := OpenEnv(ctx, backend, cfg.Rows, cfg.PostgresURL, cfg.Log)
		if errors.Is(err, ErrNoPostgres) {
			note := fmt.Sprintf("%s skipped: %v", backend, err)
			fmt.Fprintln(cfg.Log, note)
			notes = append(notes, note)
			continue
		}
		if err != nil {
			return results, fmt.Errorf("%s: %w", backend, err)
		}
		rs, ns, proto, p, err := compareEnv(ctx, env, cfg)
		if payload == nil {
			payload = p
		}
		results = append(results, rs...)
		notes = append(notes, ns...)
		if proto != "" {
			protocol = proto
		}
		if cerr := env.Close(); cerr != nil {
			fmt.Fprintf(cfg.Log, "%s: cleanup: %v\n", backend, cerr)
		}
		if err != nil {
			return results, err
		}
	}
	fmt.Fprintln(cfg.Out)
	WriteTable(cfg.Out, results, cfg.HTTP)
	fmt.Fprintln(cfg.Out)
	WriteBreakdown(cfg.Out, results)
	if protocol != "" {
		fmt.Fprintf(cfg.Out, "\nMCP protocol %s; workload: %s where {%q:%q}", protocol, benchClass, enumField, enumValue)
		fmt.Fprintf(cfg.Out, " order %q limit %d; count with the same where; $group by %s.\n", orderBy, pageLimit, enumField)
	}
	for _, n := range dedupe(notes) {
		fmt.Fprintln(cfg.Out, "note:", n)
	}
	if cfg.SDK && payload != nil {
		if err := sdkExperiment(ctx, cfg, payload); err != nil {
			return results, fmt.Errorf("SDK experiment: %w", err)
		}
	}
	return results, nil
}

func sdkExperiment(ctx context.Context, cfg Config, payload []byte) error {
	c, done, err := SDKCase(ctx, payload)
	if err != nil {
		return err
	}
	defer done()
	samples, err := Measure(ctx, c, cfg.Warmup, cfg.N)
	if err != nil {
		return err
	}
	r := &Result{Samples: samples}
	base := r.P(ShapeBoth, .5)
	fmt.Fprintf(cfg.Out, "\nSDK only (bare mcp.Server, in-memory, no parsemcp code): one tools/call returning the %.1f KB query_class result\n\n", float64(len(payload))/1024)
	var rows [][]string
	for _, m := range Shapes {
		rows = append(rows, []string{string(m), ms(r.P(m, .5)), ms(r.P(m, .95)), fmt.Sprintf("%.2f", ratio(r.P(m, .5), base))})
	}
	markdown(cfg.Out, []string{"result shape", "p50 ms", "p95 ms", "vs text+structured"}, rows)
	return nil
}

func dedupe(s []string) []string {
	var out []string
	for _, x := range s {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

func compareEnv(ctx context.Context, env *Env, cfg Config) (results []*Result, notes []string, protocol string, payload []byte, err error) {
	for _, ident := range cfg.Identities {
		s, err := NewSession(ctx, env, ident, cfg.HTTP)
		if err != nil {
			return results, notes, protocol, payload, err
		}
		protocol = s.Protocol
		for _, op := range cfg.Operations {
			c, err := NewCase(ctx, s, op)
			var skip *Skipped
			if errors.As(err, &skip) {
				fmt.Fprintf(cfg.Log, "%s/%s/%s: skipped: %s\n", env.Backend, ident, op, skip.Reason)
				notes = append(notes, op+": "+skip.Reason)
				continue
			}
			if err == nil {
				err = c.Check(ctx)
				if err != nil && op == OpGroup {
					// The aggregate tool is new: report, measure the rest.
					fmt.Fprintf(cfg.Log, "%s/%s/%s: skipped: %v\n", env.Backend, ident, op, err)
					notes = append(notes, fmt.Sprintf("%s on %s/%s not measured: %v", op, env.Backend, ident, err))
					continue
				}
			}
			if err != nil {
				s.Close()
				return results, notes, protocol, payload, fmt.Errorf("%s/%s: %w", env.Backend, ident, err)
			}
			if op == OpQuery && payload == nil {
				payload = c.Result
			}
			start := time.Now()
			samples, err := Measure(ctx, c, cfg.Warmup, cfg.N)
			if err != nil {
				s.Close()
				return results, notes, protocol, payload, fmt.Errorf("%s/%s: %w", env.Backend, ident, err)
			}
			r := &Result{Op: op, Backend: env.Backend, Identity: ident, Samples: samples, ResultBytes: len(c.Result)}
			results = append(results, r)
			fmt.Fprintf(cfg.Log, "%s/%s/%s: direct p50 %s, server p50 %s (%.2fx) [%s]\n", env.Backend, ident, op,
				ms(r.P(Direct, .5)), ms(r.P(Mem, .5)), ratio(r.P(Mem, .5), r.P(Direct, .5)), time.Since(start).Round(time.Millisecond))
		}
		if err := s.Close(); err != nil {
			fmt.Fprintf(cfg.Log, "%s/%s: closing session: %v\n", env.Backend, ident, err)
		}
	}
	return results, notes, protocol, payload, nil
}

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

// Verdict is PASS when the server's p50 is within Target of direct's.
func Verdict(r float64) string {
	if r <= Target {
		return "PASS"
	}
	return "WARN"
}

// WriteTable prints the main table (Markdown): per operation, backend,
// identity and transport, direct and server latencies and their ratios.
func WriteTable(w io.Writer, results []*Result, withHTTP bool) {
	head := []string{"operation", "backend", "agent", "transport", "direct p50 ms", "direct p95 ms", "server p50 ms", "server p95 ms", "ratio p50", "ratio p95", "added p50 ms", fmt.Sprintf("≤%.2fx", Target)}
	var rows [][]string
	for _, r := range results {
		transports := []Mode{Mem}
		if withHTTP && len(r.Samples[HTTP]) > 0 {
			transports = append(transports, HTTP)
		}
		for _, m := range transports {
			name := "in-memory"
			if m == HTTP {
				name = "HTTP"
			}
			d50, d95, s50, s95 := r.P(Direct, .5), r.P(Direct, .95), r.P(m, .5), r.P(m, .95)
			rp50 := ratio(s50, d50)
			rows = append(rows, []string{r.Op, r.Backend, r.Identity, name, ms(d50), ms(d95), ms(s50), ms(s95),
				fmt.Sprintf("%.2f", rp50), fmt.Sprintf("%.2f", ratio(s95, d95)), ms(s50 - d50), Verdict(rp50)})
		}
	}
	markdown(w, head, rows)
}

// WriteBreakdown prints the p50 of every mode, showing where the time
// between the SQL and the client goes.
func WriteBreakdown(w io.Writer, results []*Result) {
	head := []string{"operation", "backend", "agent", "result KB"}
	for _, m := range Modes {
		head = append(head, string(m)+" p50")
	}
	head = append(head, "tool÷direct")
	var rows [][]string
	for _, r := range results {
		row := []string{r.Op, r.Backend, r.Identity, fmt.Sprintf("%.1f", float64(r.ResultBytes)/1024)}
		for _, m := range Modes {
			if len(r.Samples[m]) == 0 {
				row = append(row, "—")
				continue
			}
			row = append(row, ms(r.P(m, .5)))
		}
		own := "—"
		if len(r.Samples[Tool]) > 0 {
			own = fmt.Sprintf("%.2f", ratio(r.P(Tool, .5), r.P(Direct, .5)))
		}
		rows = append(rows, append(row, own))
	}
	fmt.Fprintln(w, "p50 latency (ms) by layer: direct = store SQL + row decode; store = store.Store API; tool = handler + agent scope + JSON result (parsemcp's own code, no MCP SDK); mcp-* = official SDK client round trip; tool÷direct = what parsemcp's own code adds")
	fmt.Fprintln(w)
	markdown(w, head, rows)
}

func markdown(w io.Writer, head []string, rows [][]string) {
	width := make([]int, len(head))
	for i, h := range head {
		width[i] = len([]rune(h))
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(cells []string, numeric bool) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if numeric && i >= 3 && c != "" && (c[0] >= '0' && c[0] <= '9' || c[0] == '-') {
				b.WriteString(" " + pad + c + " |")
			} else {
				b.WriteString(" " + c + pad + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(head, false)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep, false)
	for _, r := range rows {
		line(r, true)
	}
}
