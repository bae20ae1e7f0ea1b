//go:build !bench

package agent

import "testing"

// checkViews reports whether shared class views are checked for changes
// on every hit (sharedView.checkUnchanged): in test binaries, but not in
// the benchmarks' (built with the bench tag), whose figures must be the
// server's.
func checkViews() bool { return testing.Testing() }
