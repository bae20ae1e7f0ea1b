//go:build race

package main

// raceEnabled: the tests run under the race detector, and so does the
// binary they build (TestMain), so `go test -race` checks the commands'
// own goroutines (ask, chat, serve) too, not only the test process.
const raceEnabled = true
