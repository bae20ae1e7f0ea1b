// Command testsummary reads `go test -json` on stdin and prints what a
// person reading a CI log needs: each package's result line as it comes,
// the output of every failed test, and at the end the list of skipped
// tests with the reason each gave. It exits 1 when a test or package
// failed (or the stream could not be read), so
//
//	go test -json ./... | go run ./internal/testsummary
//
// under `set -o pipefail` fails exactly when go test does, and says why.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json output.
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type skip struct{ name, reason string }

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	out := map[string][]string{} // package/test → its output so far
	var skips []skip
	failed := false
	for in.Scan() {
		line := in.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil || e.Action == "" {
			fmt.Println(string(line)) // build errors and other plain text
			continue
		}
		key := e.Package + " " + e.Test
		switch e.Action {
		case "output":
			if e.Test == "" {
				// Package lines: "ok …", "FAIL …", "--- FAIL" summaries,
				// panics outside a test.
				if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS") {
					fmt.Print(e.Output)
				}
				continue
			}
			out[key] = append(out[key], e.Output)
		case "fail":
			failed = true
			if e.Test != "" {
				fmt.Print(strings.Join(out[key], ""))
			}
			delete(out, key)
		case "skip":
			if e.Test != "" {
				skips = append(skips, skip{name: e.Package + " " + e.Test, reason: reason(out[key])})
			}
			delete(out, key)
		case "pass":
			delete(out, key)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		failed = true
	}
	sort.Slice(skips, func(i, j int) bool { return skips[i].name < skips[j].name })
	fmt.Printf("\n== skipped tests: %d\n", len(skips))
	for _, s := range skips {
		fmt.Printf("SKIP %s: %s\n", s.name, s.reason)
	}
	if failed {
		os.Exit(1)
	}
}

// reason returns the message a skipped test gave: its output lines other
// than the === and --- markers, joined.
func reason(lines []string) string {
	var r []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		r = append(r, t)
	}
	if len(r) == 0 {
		return "(no reason given)"
	}
	return strings.Join(r, " / ")
}
