//go:build bench

package agent

// checkViews is false in the benchmarks' binaries (viewguard.go).
func checkViews() bool { return false }
