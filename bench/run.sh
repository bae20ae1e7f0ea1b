#!/usr/bin/env bash
# bench/run.sh — what the parsemcp MCP server adds to the SQL it runs.
#
# Runs bench/cmd/compare on both backends: query_class, count_objects and
# (once the tool exists) an aggregate $group, through a real MCP client (in
# memory and over Streamable HTTP) versus the same SQL run directly on the
# same database, interleaved, on the 100,000-object demo dataset. Prints the
# latency table with the ratios against the 1.30 target (PASS/WARN).
#
#   bench/run.sh                       # sqlite + postgres, 300 rounds
#   bench/run.sh -n 100 -as master     # any bench/cmd/compare flag
#   bench/run.sh -backends sqlite
#
# SQLite: the dataset is cached under the OS cache directory
# (~/.cache/parsemcp/demo-<version>-100000.sqlite). PostgreSQL: a fresh
# database parsemcp_bench_<random> on $PARSEMCP_BENCH_PG (else
# $PARSEMCP_TEST_PG, else postgres://postgres@127.0.0.1:5432), dropped at
# the end; skipped with a note when the server is unreachable.
set -euo pipefail
cd "$(dirname "$0")/.."

bin="$(mktemp -d)/compare"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./bench/cmd/compare

cpu="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || true)"
load() { cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?'; }
echo "machine: $(nproc 2>/dev/null || echo '?') CPUs${cpu:+ ($cpu)}, $(uname -sm), $(go version | cut -d' ' -f3); load average $(load)" >&2
"$bin" "$@"
echo "load average at the end: $(load)" >&2
