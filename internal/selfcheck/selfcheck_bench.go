//go:build bench

package selfcheck

// On is false in the benchmarks' binaries (selfcheck.go).
func On() bool { return false }
