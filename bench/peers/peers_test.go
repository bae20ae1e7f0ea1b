package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/bench"
)

func TestInline(t *testing.T) {
	got, err := inline(`SELECT * FROM "T" WHERE a = $1 AND b = $2 AND c && $10 LIMIT $3`, []any{"o'k", 5, int64(101), "", "", "", "", "", "", []string{`x"y`, "role:a"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `SELECT * FROM "T" WHERE a = 'o''k' AND b = 5 AND c && '{"x\"y","role:a"}' LIMIT 101`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if _, err := inline(`$1`, []any{1.5}); err == nil {
		t.Fatal("a float argument was inlined")
	}
}

func TestSummarize(t *testing.T) {
	ms := time.Millisecond
	s := summarize([]cell{
		{n: 4, elapsed: time.Second, cpu: 8 * ms, lat: []time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}},
		{n: 2, elapsed: time.Second, cpu: 2 * ms, lat: []time.Duration{5 * ms, 6 * ms}, errors: 1},
		{n: 6, elapsed: 2 * time.Second, cpu: 6 * ms, lat: []time.Duration{ms, ms, ms, ms, ms, ms}},
	})
	if s.rps != 3 || s.cpuMS != 1 || s.errors != 1 {
		t.Fatalf("rps %v cpu %v errors %d", s.rps, s.cpuMS, s.errors)
	}
	if s.p50 != 1 || s.p99 != 6 {
		t.Fatalf("p50 %v p99 %v", s.p50, s.p99)
	}
}

func TestToolboxConfig(t *testing.T) {
	cfg := toolboxConfig("postgres://u:p%40ss@127.0.0.1:5433/db?sslmode=disable", map[string]*spec{
		opGet: {literal: `SELECT "a" FROM "T" WHERE "objectId" = 'x'`},
	})
	for _, want := range []string{"kind: source\nname: bench-pg\ntype: postgres\n", "host: 127.0.0.1", `port: "5433"`, "database: db", "user: u", `password: "p@ss"`,
		"---\nkind: tool\nname: bench_get\ntype: postgres-sql\nsource: bench-pg\n", `statement: "SELECT \"a\" FROM \"T\" WHERE \"objectId\" = 'x'"`} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("no %q in\n%s", want, cfg)
		}
	}
	// Toolbox refuses an empty password; trust authentication ignores it.
	cfg = toolboxConfig("postgres://postgres@127.0.0.1/db", map[string]*spec{opGet: {literal: "SELECT 1"}})
	for _, want := range []string{`port: "5432"`, `password: "` + toolboxNoPassword + `"`} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("no %q in\n%s", want, cfg)
		}
	}
}

// TestToolboxServes starts the installed Toolbox
// (bench/peers/install-toolbox.sh) as bench/peers does, on the test
// PostgreSQL server, and makes one call of every operation through each
// client; skipped when Toolbox or PostgreSQL is absent, except under
// CI=true (.ci/run installs Toolbox with the same script).
func TestToolboxServes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts MCP Toolbox")
	}
	skip := t.Skip
	if os.Getenv("CI") == "true" {
		skip = t.Fatal
	}
	if bin, _, why := toolboxBinary(); bin == "" {
		skip(why)
	}
	ctx := t.Context()
	db := bench.PostgresURL()
	if err := bench.Reachable(ctx, db); err != nil {
		skip(fmt.Sprintf("PostgreSQL at %s: %v", db, err))
	}
	sp := map[string]*spec{}
	for _, op := range allOps {
		sp[op] = &spec{op: op, literal: "SELECT 1 AS one, '" + op + "' AS op"}
	}
	for _, sdk := range []bool{false, true} {
		tg, note, err := toolboxTarget(ctx, db, sp, mcpClient{sdk: sdk})
		if err != nil || note != "" {
			t.Fatalf("toolbox did not start: %v %s", err, note)
		}
		w, err := tg.newWorker(ctx)
		if err != nil {
			tg.stop()
			t.Fatal(err)
		}
		for _, op := range allOps {
			if err := w.do(ctx, op); err != nil {
				t.Errorf("sdk %v: %s: %v", sdk, op, err)
			}
		}
		if p := w.(protocolWorker).protocol(); p == "" {
			t.Errorf("sdk %v: no protocol version", sdk)
		} else {
			t.Logf("sdk %v: protocol %s", sdk, p)
		}
		w.close()
		tg.stop()
	}
}
