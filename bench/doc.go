// Package bench measures what the parsemcp MCP server adds to the SQL it
// runs: each operation (query_class, count_objects, an aggregate $group) is
// run directly on the store's database (the baseline), through the store
// API, through the tool handler, and through a real MCP client over the
// in-memory and Streamable HTTP transports, interleaved in one run, on the
// demo dataset. Ratios are always against the baseline measured in the
// same run; see docs/PERFORMANCE.md.
//
// Entry points: bench/run.sh, bench/cmd/compare, and the Go benchmarks in
// bench_test.go (build tag "bench", so `go test ./...` skips them).
package bench
