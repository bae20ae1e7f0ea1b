// Command compare measures what the parsemcp MCP server adds to the SQL it
// runs: query_class, count_objects and (once the tool exists) an aggregate
// $group, called through a real MCP client, against the same SQL run
// directly on the same database, interleaved in one run. It prints the
// latencies and their ratios against the 1.30 target.
//
//	go run ./bench/cmd/compare                   # both backends, 100k objects
//	go run ./bench/cmd/compare -backends sqlite -n 100
//
// The SQLite dataset is cached under the OS cache directory; PostgreSQL gets
// a fresh database (dropped afterwards), skipped when the server is down.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/parsemcp/parsemcp/bench"
)

func main() {
	var (
		cfg        bench.Config
		backends   = flag.String("backends", "sqlite,postgres", "comma-separated backends: sqlite, postgres")
		identities = flag.String("as", "master,member", "comma-separated agents: master (no ACL), member (demo user in org-acme, ACL in every statement)")
		ops        = flag.String("ops", "", "comma-separated operations (default all): "+strings.Join(bench.Operations, ", "))
		cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of the whole measurement to this file")
	)
	flag.IntVar(&cfg.Rows, "rows", 100_000, "demo dataset size (objects)")
	flag.IntVar(&cfg.N, "n", 300, "measured rounds per operation (each round runs every mode once)")
	flag.IntVar(&cfg.Warmup, "warmup", 0, "unrecorded rounds first (default n/10, at least 10)")
	flag.BoolVar(&cfg.HTTP, "http", true, "also measure the server over Streamable HTTP (httptest, loopback)")
	flag.BoolVar(&cfg.SDK, "sdk", true, "also run the SDK-only experiment (the query_class result through a bare mcp.Server, in several shapes)")
	flag.StringVar(&cfg.PostgresURL, "pg", bench.PostgresURL(), "PostgreSQL server to create the benchmark database on (env PARSEMCP_BENCH_PG, PARSEMCP_TEST_PG)")
	flag.Parse()
	cfg.Backends = split(*backends)
	cfg.Identities = split(*identities)
	cfg.Operations = split(*ops)
	cfg.Out, cfg.Log = os.Stdout, os.Stderr

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fatal(err)
		}
		defer func() {
			pprof.StopCPUProfile()
			f.Close()
		}()
	}
	if _, err := bench.Compare(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func split(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "compare:", err)
	os.Exit(1)
}
