//go:build !bench

package mcpserver

import "testing"

// checkEncoded reports whether a tool result's JSON text is checked valid
// before it is sent unchecked as structuredContent (encodedResult): in
// test binaries, but not in the benchmarks' (built with the bench tag),
// whose figures must be the server's.
func checkEncoded() bool { return testing.Testing() }
