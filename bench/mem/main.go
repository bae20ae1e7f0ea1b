// Command mem measures what `parsemcp serve` holds in memory when idle
// (issue 31, item 4), so the figure in docs/PERFORMANCE.md can be made
// again:
//
//   - it builds the binary (or takes -bin), as `go build` does by default
//     and, with -release, with the release flags of .goreleaser.yaml;
//   - it drops the binary's pages from the page cache (-warm keeps them);
//   - it starts `serve` on a fresh, migrated PostgreSQL database and on a
//     fresh SQLite file, with GODEBUG=inittrace=1, waits for /health, lets
//     it idle, and reads /proc/PID/status, /proc/PID/smaps and
//     /proc/PID/pagemap;
//   - it prints the resident set split into anonymous and file pages, the
//     binary's mappings and ELF sections with how much of each is resident,
//     the packages whose code is resident (from the ELF symbol table: a
//     stripped binary has none), and the package inits that cost the most
//     time and allocation.
//
// File pages are counted as the kernel counts them: a page fault on the
// binary maps the neighbouring pages already in the page cache too
// (fault-around, 64 KB by default), so one touched function makes its 64 KB
// neighbourhood resident.
//
//	go run ./bench/mem                       # both stores, the default build
//	go run ./bench/mem -release -stores postgres
//	go run ./bench/mem -release -stores postgres -tags llm   # parsemcp-llm's serve
//	go run ./bench/mem -bin /tmp/parsemcp -idle 10s -top 30
//
// It needs Linux (/proc) and, for the PostgreSQL store, a server at
// PARSEMCP_BENCH_PG, PARSEMCP_TEST_PG or 127.0.0.1:5432.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/parsemcp/parsemcp/bench"
)

const pageSize = 4096

func main() {
	var (
		bin, stores, tags string
		release           bool
		idle              time.Duration
		top               int
		warm              bool
	)
	flag.StringVar(&bin, "bin", "", "parsemcp binary (default: go build ./cmd/parsemcp into a temporary directory)")
	flag.BoolVar(&release, "release", false, "build with the release flags (-trimpath -ldflags='-s -w', CGO_ENABLED=0, as .goreleaser.yaml)")
	flag.StringVar(&tags, "tags", "", "build tags: llm builds parsemcp-llm (every command; its serve links the LLM SDKs, which the default build leaves out)")
	flag.StringVar(&stores, "stores", "postgres,sqlite", "stores to serve: postgres, sqlite")
	flag.DurationVar(&idle, "idle", 5*time.Second, "how long serve idles after /health answers before it is measured")
	flag.IntVar(&top, "top", 20, "rows of the package and init tables")
	flag.BoolVar(&warm, "warm", false, "keep the binary's pages in the page cache as they are (after go build: the pages its writing left); by default they are dropped first, so serve reads the binary as after a deployment")
	flag.Parse()
	if err := run(bin, tags, stores, release, !warm, idle, top); err != nil {
		fmt.Fprintln(os.Stderr, "mem:", err)
		os.Exit(1)
	}
}

func run(bin, tags, stores string, release, evict bool, idle time.Duration, top int) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "parsemcp-mem-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "parsemcp")
		args := []string{"build", "-o", bin}
		if release {
			args = append(args, "-trimpath", "-ldflags=-s -w")
		}
		if tags != "" {
			args = append(args, "-tags", tags)
		}
		cmd := exec.Command("go", append(args, "./cmd/parsemcp")...)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if release {
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		}
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
		fmt.Printf("built %s in %s (%s, tags %q)\n", bin, time.Since(start).Round(time.Second), map[bool]string{true: "release flags", false: "default flags"}[release], tags)
	}
	img, err := readImage(bin)
	if err != nil {
		return err
	}
	fmt.Printf("binary: %s, %.1f MB on disk; load average %s\n", bin, float64(img.size)/1e6, bench.LoadAverage())
	for _, s := range strings.Split(stores, ",") {
		var storeURL string
		var cleanup func()
		switch s = strings.TrimSpace(s); s {
		case "postgres":
			storeURL, cleanup, err = freshPostgres(ctx)
		case "sqlite":
			storeURL, cleanup = "sqlite:"+filepath.Join(tmp, "idle.sqlite"), func() {}
		default:
			return fmt.Errorf("unknown store %q", s)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		if evict {
			if err := dropCache(bin); err != nil {
				return err
			}
		}
		err = measure(bin, s, storeURL, img, idle, top)
		cleanup()
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	fmt.Printf("load average at the end: %s\n", bench.LoadAverage())
	return nil
}

// dropCache drops the binary's pages from the page cache, so every run
// maps it as read from disk. The kernel maps file pages in folios: pages
// left by the writer (go build) come in other sizes than pages read back,
// and RssFile differs by several MB between the two.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages (a fresh build) are not dropped
		return err
	}
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// freshPostgres creates an empty database on bench.PostgresURL's server;
// serve's migrate step sets it up.
func freshPostgres(ctx context.Context) (string, func(), error) {
	admin := bench.PostgresURL()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", nil, err
	}
	defer c.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "parsemcp_mem_" + hex.EncodeToString(b[:])
	if _, err := c.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", nil, err
	}
	u, err := url.Parse(admin)
	if err != nil {
		return "", nil, err
	}
	u.Path = "/" + name
	drop := func() {
		c, err := pgx.Connect(context.Background(), admin)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
	}
	return u.String(), drop, nil
}

// measure migrates the store, serves it, lets it idle and prints the report.
func measure(bin, name, storeURL string, img *image, idle time.Duration, top int) error {
	if out, err := exec.Command(bin, "migrate", "--store", storeURL).CombinedOutput(); err != nil {
		return fmt.Errorf("migrate: %w\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin, "serve", "--store", storeURL, "--addr", addr)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(syscall.SIGTERM); _ = cmd.Wait() }()
	lines := make(chan string, 1024)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	start := time.Now()
	if err := waitHealth("http://"+addr+"/health", 60*time.Second); err != nil {
		return err
	}
	ready := time.Since(start)
	time.Sleep(idle)
	pid := cmd.Process.Pid
	status, err := procStatus(pid)
	if err != nil {
		return err
	}
	maps, err := readMaps(pid)
	if err != nil {
		return err
	}
	resident, err := residentPages(pid, maps, img.path)
	if err != nil {
		return err
	}
	var inits []initCost
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				done = true
				break
			}
			if c, ok := parseInit(l); ok {
				inits = append(inits, c)
			}
		default:
			done = true
		}
	}

	fmt.Printf("\n## serve --store %s (ready in %s, idle %s)\n\n", name, ready.Round(time.Millisecond), idle)
	mb := func(kb int) string { return fmt.Sprintf("%.1f", float64(kb)/1024) }
	fmt.Printf("VmRSS %s MB = RssAnon %s + RssFile %s (+ RssShmem %s); VmHWM %s MB\n",
		mb(status["VmRSS"]), mb(status["RssAnon"]), mb(status["RssFile"]), mb(status["RssShmem"]), mb(status["VmHWM"]))

	fmt.Printf("\nmappings with at least 100 kB resident (kB):\n\n| mapping | perm | size | resident | anonymous |\n| --- | --- | --- | --- | --- |\n")
	for _, m := range maps {
		if m.rss >= 100 {
			fmt.Printf("| %s | %s | %d | %d | %d |\n", m.label(), m.perm, (m.end-m.start)/1024, m.rss, m.anon)
		}
	}

	fmt.Printf("\nthe binary's sections, resident pages (MB):\n\n| section | size | resident |\n| --- | --- | --- |\n")
	for _, s := range img.sections {
		n := 0
		for p := s.addr &^ (pageSize - 1); p < s.addr+s.size; p += pageSize {
			if resident[p] {
				n++
			}
		}
		fmt.Printf("| %s | %.1f | %.1f |\n", s.name, float64(s.size)/(1<<20), float64(n*pageSize)/(1<<20))
	}

	if len(img.funcs) > 0 {
		type pkgRes struct {
			pkg            string
			size, resident uint64
		}
		by := map[string]*pkgRes{}
		for _, f := range img.funcs {
			p := by[f.pkg]
			if p == nil {
				p = &pkgRes{pkg: f.pkg}
				by[f.pkg] = p
			}
			p.size += f.size
			// A page shared by two functions counts for both; the
			// resident share of a function is its bytes on resident pages.
			for a := f.addr; a < f.addr+f.size; {
				next := min((a&^(pageSize-1))+pageSize, f.addr+f.size)
				if resident[a&^(pageSize-1)] {
					p.resident += next - a
				}
				a = next
			}
		}
		var all []*pkgRes
		var tot, res uint64
		for _, p := range by {
			all = append(all, p)
			tot += p.size
			res += p.resident
		}
		sort.Slice(all, func(i, j int) bool { return all[i].resident > all[j].resident })
		fmt.Printf("\ncode (.text) by module, resident (MB; a module is its path up to the version or third element):\n\n| module | text | resident |\n| --- | --- | --- |\n")
		for i, p := range all {
			if i == top {
				break
			}
			fmt.Printf("| %s | %.2f | %.2f |\n", p.pkg, float64(p.size)/(1<<20), float64(p.resident)/(1<<20))
		}
		fmt.Printf("| all | %.2f | %.2f |\n", float64(tot)/(1<<20), float64(res)/(1<<20))
	} else {
		fmt.Printf("\n(no symbol table: a stripped binary; the code by module is not shown)\n")
	}

	var ms float64
	var bytes, allocs int64
	for _, c := range inits {
		ms += c.ms
		bytes += c.bytes
		allocs += c.allocs
	}
	fmt.Printf("\npackage inits: %d, %.1f ms, %.2f MB in %d allocations; the costliest by bytes:\n\n| package | ms | kB | allocs |\n| --- | --- | --- | --- |\n",
		len(inits), ms, float64(bytes)/(1<<20), allocs)
	sort.Slice(inits, func(i, j int) bool { return inits[i].bytes > inits[j].bytes })
	for i, c := range inits {
		if i == top {
			break
		}
		fmt.Printf("| %s | %.3f | %.0f | %d |\n", c.pkg, c.ms, float64(c.bytes)/1024, c.allocs)
	}
	return nil
}

func waitHealth(u string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		resp, err := http.Get(u)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s did not answer within %s", u, wait)
}

// procStatus reads the kB fields of /proc/PID/status.
func procStatus(pid int) (map[string]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || !strings.HasSuffix(strings.TrimSpace(v), " kB") {
			continue
		}
		n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		out[k] = n
	}
	return out, nil
}

type mapping struct {
	start, end uint64
	perm, path string
	rss, anon  int // kB
}

func (m mapping) label() string {
	if m.path == "" {
		return "[anonymous]"
	}
	return m.path
}

func readMaps(pid int) ([]mapping, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return nil, err
	}
	var out []mapping
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 5 && strings.Contains(f[0], "-") && !strings.HasSuffix(f[0], ":") {
			lo, hi, _ := strings.Cut(f[0], "-")
			s, err1 := strconv.ParseUint(lo, 16, 64)
			e, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil {
				m := mapping{start: s, end: e, perm: f[1]}
				if len(f) >= 6 {
					m.path = f[5]
				}
				out = append(out, m)
				continue
			}
		}
		if len(out) == 0 || len(f) < 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "Rss:":
			out[len(out)-1].rss = n
		case "Anonymous:":
			out[len(out)-1].anon = n
		}
	}
	return out, nil
}

// residentPages reads /proc/PID/pagemap for the mappings of the binary
// (and the anonymous one right after it, its .bss) and returns the
// addresses of the pages present in memory.
func residentPages(pid int, maps []mapping, path string) (map[uint64]bool, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/pagemap", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[uint64]bool{}
	abs, _ := filepath.Abs(path)
	for i, m := range maps {
		if m.path != abs && !(m.path == "" && i > 0 && maps[i-1].path == abs && maps[i-1].end == m.start) {
			continue
		}
		n := (m.end - m.start) / pageSize
		buf := make([]byte, n*8)
		if _, err := f.ReadAt(buf, int64(m.start/pageSize*8)); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("pagemap: %w", err)
		}
		for j := uint64(0); j < n; j++ {
			if binary.LittleEndian.Uint64(buf[j*8:])&(1<<63) != 0 {
				out[m.start+j*pageSize] = true
			}
		}
	}
	return out, nil
}

type section struct {
	name       string
	addr, size uint64
}

type function struct {
	pkg        string
	addr, size uint64
}

type image struct {
	path     string
	size     int64
	sections []section
	funcs    []function
}

// readImage reads the allocated ELF sections of the binary and its text
// symbols, each with the module it belongs to.
func readImage(path string) (*image, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	img := &image{path: path, size: fi.Size()}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Size >= 64<<10 {
			img.sections = append(img.sections, section{s.Name, s.Addr, s.Size})
		}
	}
	syms, err := f.Symbols()
	if err != nil {
		return img, nil // stripped
	}
	text := f.Section(".text")
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Size == 0 || text == nil || s.Value < text.Addr || s.Value >= text.Addr+text.Size {
			continue
		}
		img.funcs = append(img.funcs, function{module(s.Name), s.Value, s.Size})
	}
	return img, nil
}

var versionElem = regexp.MustCompile(`^v[0-9]+$`)

// module names a symbol's module: the standard library's packages by
// their first element (runtime, crypto, net, …), others by their path up
// to the third element, plus a major-version element (github.com/a/b/v2).
func module(sym string) string {
	pkg := sym
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		if j := strings.IndexByte(pkg[i:], '.'); j >= 0 {
			pkg = pkg[:i+j]
		}
	} else if j := strings.IndexByte(pkg, '.'); j >= 0 {
		pkg = pkg[:j]
	}
	el := strings.Split(pkg, "/")
	if !strings.Contains(el[0], ".") {
		if el[0] == "vendor" && len(el) > 1 {
			return "vendor/" + el[1]
		}
		return el[0]
	}
	n := min(3, len(el))
	if len(el) > 3 && versionElem.MatchString(el[3]) {
		n = 4
	}
	if el[0] == "github.com" && el[1] == "parsemcp" && len(el) > 2 {
		return strings.Join(el[:n], "/") // our packages, one by one
	}
	return strings.Join(el[:n], "/")
}

type initCost struct {
	pkg           string
	ms            float64
	bytes, allocs int64
}

// parseInit reads a GODEBUG=inittrace=1 line:
// "init PKG @0.5 ms, 0.012 ms clock, 1234 bytes, 12 allocs".
func parseInit(l string) (initCost, bool) {
	f := strings.Fields(l)
	if len(f) < 11 || f[0] != "init" || f[6] != "clock," || f[8] != "bytes," {
		return initCost{}, false
	}
	ms, err1 := strconv.ParseFloat(f[4], 64)
	b, err2 := strconv.ParseInt(f[7], 10, 64)
	a, err3 := strconv.ParseInt(f[9], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return initCost{}, false
	}
	return initCost{f[1], ms, b, a}, true
}
