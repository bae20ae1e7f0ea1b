//go:build !bench

// Package selfcheck says whether the code checks its own invariants as it
// runs: checks too costly for the server's hot path (a shared class view
// hashed on every hit, a tool result's JSON text validated before it is
// sent unchecked), kept in test binaries so that every test exercises
// them.
package selfcheck

import "testing"

// On reports whether invariant self-checks run: in test binaries, but not
// in the benchmarks' (built with the bench tag), whose figures must be
// the server's, nor in the server itself.
func On() bool { return testing.Testing() }
