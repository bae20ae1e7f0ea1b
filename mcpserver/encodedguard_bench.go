//go:build bench

package mcpserver

// checkEncoded is false in the benchmarks' binaries (encodedguard.go).
func checkEncoded() bool { return false }
