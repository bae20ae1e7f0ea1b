// Package npmcache installs the npm packages of a test's JavaScript peer
// (a directory of the repository holding package.json, package-lock.json
// and its scripts) outside the tree: into
// $HOME/.cache/parsemcp/npm/<name>-<hash of the package files>, once per
// version of those files. The tree never gets a node_modules.
//
// Without node or npm, or when the registry is unreachable, the test is
// skipped with a one-line reason; under CI=true it fails instead.
package npmcache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Node returns the node binary, skipping the test without one.
func Node(t testing.TB) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not installed")
	}
	return node
}

// Dir returns a directory holding src's scripts and its installed
// node_modules (npm ci from src's lock file), installing on first use.
func Dir(t testing.TB, src string) string {
	t.Helper()
	Node(t)
	npm, err := exec.LookPath("npm")
	if err != nil {
		missing(t, "npm is not installed")
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(abs, f))
		if err != nil {
			t.Fatalf("npmcache: %v", err)
		}
		h.Write(b)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".cache", "parsemcp", "npm", filepath.Base(abs)+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		install(t, npm, abs, dir)
	}
	// The scripts are copied on every use: editing one needs no reinstall.
	entries, err := os.ReadDir(abs)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".mjs") || strings.HasSuffix(n, ".js") || strings.HasSuffix(n, ".json") {
			copyFile(t, filepath.Join(abs, n), filepath.Join(dir, n))
		}
	}
	return dir
}

// install runs npm ci in a fresh directory and moves it into place, so
// that parallel test binaries never see half an installation.
func install(t testing.TB, npm, src, dir string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for _, f := range []string{"package.json", "package-lock.json"} {
		copyFile(t, filepath.Join(src, f), filepath.Join(tmp, f))
	}
	cmd := exec.Command(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		ping := exec.Command(npm, "ping")
		if ping.Run() != nil {
			missing(t, "the npm registry is unreachable (npm ci "+filepath.Base(src)+" failed)")
		}
		t.Fatalf("npm ci for %s: %v\n%s", src, err, out.String())
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, serr := os.Stat(filepath.Join(dir, "node_modules")); serr != nil {
			t.Fatalf("npmcache: %v", err)
		} // another test binary installed it meanwhile
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	tmp := to + fmt.Sprintf(".%d.tmp", os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, to); err != nil {
		t.Fatal(err)
	}
}

// missing skips the test, or fails it in CI.
func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (required in CI)", why)
	}
	t.Skipf("SKIP: %s", why)
}
