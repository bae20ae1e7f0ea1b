package main

import (
	"strings"
	"testing"
	"time"
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
	for _, want := range []string{"host: 127.0.0.1", "port: 5433", "database: db", "user: u", `password: "p@ss"`,
		"bench_get:", "kind: postgres-sql", `statement: "SELECT \"a\" FROM \"T\" WHERE \"objectId\" = 'x'"`} {
		if !strings.Contains(cfg, want) {
			t.Fatalf("no %q in\n%s", want, cfg)
		}
	}
}
