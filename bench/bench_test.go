//go:build bench

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// This file builds only with -tags bench, so `go test ./...` neither links
// nor runs it. The benchmarks use the 100k-object dataset (cached SQLite,
// a fresh PostgreSQL database dropped at the end):
//
//	go test -tags bench ./bench -run '^$' -bench . -benchtime 200x
//	go test -tags bench ./bench -run '^$' -bench 'QueryClass/sqlite/master/mcp-mem' -cpuprofile cpu.out
//
// Names are Benchmark<Op>/<backend>/<agent>/<mode>; compare a mode with
// .../direct (or run TestCompare / bench/run.sh for interleaved ratios).
// PARSEMCP_BENCH_ROWS sets the dataset size (default 100000).

func TestMain(m *testing.M) {
	code := m.Run()
	envs.closeAll()
	os.Exit(code)
}

func benchRows() int {
	if n, err := strconv.Atoi(os.Getenv("PARSEMCP_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 100_000
}

// envs caches one Env per backend and one Session per backend and agent for
// the whole test binary; TestMain closes them (dropping the PostgreSQL
// database).
var envs = &envCache{env: map[string]*Env{}, sess: map[string]*Session{}, fail: map[string]error{}}

type envCache struct {
	mu   sync.Mutex
	env  map[string]*Env
	sess map[string]*Session
	fail map[string]error
}

func (c *envCache) session(tb testing.TB, backend, ident string) *Session {
	tb.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx := context.Background()
	key := backend + "/" + ident
	if s, ok := c.sess[key]; ok {
		return s
	}
	if err := c.fail[backend]; err != nil {
		tb.Skip(err)
	}
	e, ok := c.env[backend]
	if !ok {
		var err error
		e, err = OpenEnv(ctx, backend, benchRows(), "", os.Stderr)
		if errors.Is(err, ErrNoPostgres) {
			c.fail[backend] = err
			tb.Skip(err)
		}
		if err != nil {
			tb.Fatal(err)
		}
		c.env[backend] = e
	}
	s, err := NewSession(ctx, e, ident, true)
	if err != nil {
		tb.Fatal(err)
	}
	c.sess[key] = s
	return s
}

func (c *envCache) closeAll() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.sess {
		s.Close()
	}
	for _, e := range c.env {
		if err := e.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "bench cleanup:", err)
		}
	}
}

func benchOp(b *testing.B, op string) {
	ctx := context.Background()
	for _, backend := range []string{SQLite, Postgres} {
		b.Run(backend, func(b *testing.B) {
			for _, ident := range IdentityNames() {
				b.Run(ident, func(b *testing.B) {
					s := envs.session(b, backend, ident)
					c, err := NewCase(ctx, s, op)
					var skip *Skipped
					if errors.As(err, &skip) {
						b.Skip(skip.Reason)
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := c.Check(ctx); err != nil {
						b.Fatal(err)
					}
					for _, m := range Modes {
						run, ok := c.Run[m]
						if !ok {
							continue
						}
						b.Run(string(m), func(b *testing.B) {
							b.ReportAllocs()
							for b.Loop() {
								if _, err := run(ctx); err != nil {
									b.Fatal(err)
								}
							}
						})
					}
				})
			}
		})
	}
}

func BenchmarkQueryClass(b *testing.B)     { benchOp(b, OpQuery) }
func BenchmarkCountObjects(b *testing.B)   { benchOp(b, OpCount) }
func BenchmarkAggregateGroup(b *testing.B) { benchOp(b, OpGroup) }

// TestCompare is bench/cmd/compare as a test: interleaved rounds, the
// ratio table on stdout. It takes a minute or more, so it runs only with
// PARSEMCP_BENCH=1:
//
//	PARSEMCP_BENCH=1 go test -tags bench ./bench -run TestCompare -v
//
// PARSEMCP_BENCH_N sets the rounds, PARSEMCP_BENCH_BACKENDS the backends
// (comma-separated).
func TestCompare(t *testing.T) {
	if os.Getenv("PARSEMCP_BENCH") != "1" {
		t.Skip("set PARSEMCP_BENCH=1 to run the comparison (it builds a 100k-object dataset)")
	}
	cfg := Config{Rows: benchRows(), HTTP: true, SDK: true, Out: os.Stdout, Log: os.Stderr}
	if n, err := strconv.Atoi(os.Getenv("PARSEMCP_BENCH_N")); err == nil {
		cfg.N = n
	}
	if v := os.Getenv("PARSEMCP_BENCH_BACKENDS"); v != "" {
		cfg.Backends = strings.Split(v, ",")
	}
	if _, err := Compare(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkSDKPayload is the SDK-only experiment as a benchmark: the
// query_class result of the SQLite dataset (master key) through a bare
// mcp.Server in each shape.
func BenchmarkSDKPayload(b *testing.B) {
	ctx := context.Background()
	s := envs.session(b, SQLite, "master")
	qc, err := NewCase(ctx, s, OpQuery)
	if err != nil {
		b.Fatal(err)
	}
	if err := qc.Check(ctx); err != nil {
		b.Fatal(err)
	}
	c, done, err := SDKCase(ctx, qc.Result)
	if err != nil {
		b.Fatal(err)
	}
	defer done()
	for _, m := range Shapes {
		run := c.Run[m]
		b.Run(strings.ReplaceAll(string(m), " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(qc.Result)))
			for b.Loop() {
				if _, err := run(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
