// Command mutate is the project's mutation check: it puts small, deliberate
// bugs into the security- and semantics-critical code, one at a time, and
// runs the tests that should notice each with CI=true. A mutant the tests
// do not notice ("survived") is a rule whose breakage nobody would see.
//
// Each mutant in the list (mutants.yaml beside this file) names a file, an
// exact snippet of its source, the replacement, and the packages (and
// optionally a -run pattern, for all of them or per package as
// "./pkg/ -run Pattern -skip Pattern") whose tests must catch it. For each mutant the
// tree is copied to a temporary directory, the snippet replaced there, and
// the packages' tests run in that copy, one package after another, stopping
// at the first failure. The working tree is never modified.
//
// A snippet that is no longer in its file (the code was refactored) makes
// the mutant "stale"; one found more than once is "ambiguous"; a mutant
// whose copy no longer compiles is "broken". All three are failures of the
// list, reported loudly, so the list is updated after a refactor instead of
// silently shrinking.
//
//	go run ./internal/mutate                 # every mutant
//	go run ./internal/mutate -check          # only verify the snippets (fast)
//	go run ./internal/mutate -check -build   # and that each mutant compiles
//	go run ./internal/mutate -only 'tenant'  # mutants whose name or area matches
//	go run ./internal/mutate -from NAME      # resume at a mutant
//
// The exit status is 0 only when every selected mutant was caught.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"
)

// Mutant is one deliberate bug.
type Mutant struct {
	Name    string   `yaml:"name"`
	Area    string   `yaml:"area"`
	File    string   `yaml:"file"`
	Find    string   `yaml:"find"`
	Replace string   `yaml:"replace"`
	Pkgs    []string `yaml:"pkgs"`
	Run     string   `yaml:"run"`
}

// Outcome is what became of a mutant.
type Outcome string

const (
	Caught    Outcome = "caught"
	Survived  Outcome = "survived"
	Stale     Outcome = "STALE"
	Ambiguous Outcome = "AMBIGUOUS"
	Broken    Outcome = "BROKEN"
	TimedOut  Outcome = "TIMEOUT"
)

// interrupted ends with SIGINT or SIGTERM: the running go test and its
// test binaries are ended with it.
var interrupted context.Context

func main() {
	var stop context.CancelFunc
	interrupted, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	list := flag.String("list", "", "the mutant list (default: mutants.yaml beside this program, in the module)")
	only := flag.String("only", "", "run only the mutants whose name or area matches this regexp")
	from := flag.String("from", "", "start at the mutant of this name (resume a run)")
	check := flag.Bool("check", false, "only verify that every snippet is found exactly once; run no tests")
	build := flag.Bool("build", false, "with -check: also compile each mutant's package (finds BROKEN mutants in minutes)")
	timeout := flag.Duration("timeout", 30*time.Minute, "bound on one mutant's test run (it only stops a hang)")
	verbose := flag.Bool("v", false, "print the test output of caught mutants too")
	flag.Parse()

	root, err := moduleRoot()
	if err != nil {
		fatal(err)
	}
	if *list == "" {
		*list = filepath.Join(root, "internal", "mutate", "mutants.yaml")
	}
	mutants, err := load(*list)
	if err != nil {
		fatal(err)
	}
	if *only != "" {
		re, err := regexp.Compile(*only)
		if err != nil {
			fatal(err)
		}
		var sel []Mutant
		for _, m := range mutants {
			if re.MatchString(m.Name) || re.MatchString(m.Area) {
				sel = append(sel, m)
			}
		}
		mutants = sel
	}
	if *from != "" {
		i := slices.IndexFunc(mutants, func(m Mutant) bool { return m.Name == *from })
		if i < 0 {
			fatal(fmt.Errorf("no mutant named %q", *from))
		}
		mutants = mutants[i:]
	}
	if len(mutants) == 0 {
		fatal(fmt.Errorf("no mutants selected"))
	}

	work, err := os.MkdirTemp("", "parsemcp-mutate-")
	if err != nil {
		fatal(err)
	}
	workDir = work
	defer os.RemoveAll(work)
	// One path for every mutant's copy: the build cache then reuses every
	// package a mutant does not touch.
	tree := filepath.Join(work, "tree")

	counts := map[Outcome]int{}
	var bad []string
	start := time.Now()
	for i, m := range mutants {
		t0 := time.Now()
		out, log := runOne(root, tree, m, *check, *build, *timeout)
		counts[out]++
		label := fmt.Sprintf("[%d/%d] %-9s %s (%s)", i+1, len(mutants), out, m.Name, m.File)
		if !*check {
			label += fmt.Sprintf(" %s", time.Since(t0).Round(time.Second))
		}
		fmt.Println(label)
		if out != Caught && !(*check && out == "ok") {
			bad = append(bad, fmt.Sprintf("%s %s", out, m.Name))
		}
		if out != Caught && out != "ok" || *verbose {
			if log != "" {
				fmt.Println(indent(log))
			}
		}
	}
	fmt.Println()
	if *check {
		fmt.Printf("mutate -check: %d mutants, %d ok, %d stale, %d ambiguous, %d broken\n", len(mutants), counts["ok"], counts[Stale], counts[Ambiguous], counts[Broken])
	} else {
		fmt.Printf("mutate: %d mutants: %d caught, %d survived, %d stale, %d ambiguous, %d broken, %d timed out (%s)\n",
			len(mutants), counts[Caught], counts[Survived], counts[Stale], counts[Ambiguous], counts[Broken], counts[TimedOut], time.Since(start).Round(time.Second))
	}
	if len(bad) > 0 {
		fmt.Println("not caught:")
		for _, b := range bad {
			fmt.Println("  " + b)
		}
		os.Exit(1)
	}
}

// runOne applies m in a fresh copy of root at tree and runs its tests.
func runOne(root, tree string, m Mutant, checkOnly, build bool, timeout time.Duration) (Outcome, string) {
	src, err := os.ReadFile(filepath.Join(root, m.File))
	if err != nil {
		return Stale, fmt.Sprintf("file %s: %v", m.File, err)
	}
	switch n := bytes.Count(src, []byte(m.Find)); {
	case n == 0:
		return Stale, fmt.Sprintf("snippet no longer in %s (update the list):\n%s", m.File, m.Find)
	case n > 1:
		return Ambiguous, fmt.Sprintf("snippet found %d times in %s (make it longer):\n%s", n, m.File, m.Find)
	}
	if checkOnly && !build {
		return "ok", ""
	}
	if err := os.RemoveAll(tree); err != nil {
		return Broken, err.Error()
	}
	if err := copyTree(root, tree); err != nil {
		return Broken, err.Error()
	}
	mutated := bytes.Replace(src, []byte(m.Find), []byte(m.Replace), 1)
	if err := os.WriteFile(filepath.Join(tree, m.File), mutated, 0o644); err != nil {
		return Broken, err.Error()
	}
	if checkOnly {
		if out, err := goCmd(tree, timeout, "build", "./"+filepath.ToSlash(filepath.Dir(m.File))); err != nil {
			return Broken, lastLines(out, 30)
		}
		return "ok", ""
	}
	for _, entry := range m.Pkgs {
		// "./pkg/ -run A|B -skip C": the package, then go test flags
		// (patterns without spaces).
		fields := strings.Fields(entry)
		args := []string{"test", "-count=1", "-failfast", "-vet=off"}
		if m.Run != "" && !slices.Contains(fields, "-run") {
			args = append(args, "-run", m.Run)
		}
		args = append(args, fields[1:]...)
		args = append(args, fields[0])
		out, err := goCmd(tree, timeout, args...)
		if err == context.DeadlineExceeded {
			return TimedOut, out
		}
		if err != nil {
			// A mutant that does not build says nothing about the tests.
			if strings.Contains(out, "[build failed]") || strings.Contains(out, "[setup failed]") {
				return Broken, lastLines(out, 30)
			}
			return Caught, lastLines(out, 30)
		}
	}
	return Survived, ""
}

// goCmd runs the go command in dir with CI=true.
func goCmd(dir string, timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(interrupted, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	ownGroup(cmd)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CI=true")
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	if interrupted.Err() != nil {
		fatal(fmt.Errorf("interrupted"))
	}
	if ctx.Err() != nil {
		return buf.String(), context.DeadlineExceeded
	}
	return buf.String(), err
}

// copyTree copies the module at root to dst, leaving out version control,
// node_modules and other caches.
func copyTree(root, dst string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "node_modules", ".cache":
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		return copyFile(p, filepath.Join(dst, rel))
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func load(path string) ([]Mutant, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Packages map[string][]string `yaml:"packages"` // anchors only
		Mutants  []Mutant            `yaml:"mutants"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	seen := map[string]bool{}
	for i, m := range doc.Mutants {
		switch {
		case m.Name == "" || m.File == "" || m.Find == "" || len(m.Pkgs) == 0:
			return nil, fmt.Errorf("%s: mutant %d (%q) needs name, file, find and pkgs", path, i+1, m.Name)
		case m.Find == m.Replace:
			return nil, fmt.Errorf("%s: mutant %q replaces its snippet with itself", path, m.Name)
		case seen[m.Name]:
			return nil, fmt.Errorf("%s: mutant %q is listed twice", path, m.Name)
		}
		seen[m.Name] = true
	}
	return doc.Mutants, nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("run mutate inside the parsemcp module")
	}
	return filepath.Dir(mod), nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

// workDir is the run's temporary directory, removed on a fatal error too.
var workDir string

func fatal(err error) {
	if workDir != "" {
		os.RemoveAll(workDir)
	}
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}
