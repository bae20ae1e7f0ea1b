package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/parsemcp/parsemcp/bench"
)

// dbConns is the database pool of parsemcp and of the pgx baseline: below
// the 32 clients of the largest cell, so the database, not the pool,
// limits them alike, and small enough for a shared server's
// max_connections.
const dbConns = 20

// A target is one server under load (or the database alone).
type target struct {
	name string
	// pid is the server process whose CPU and memory are read; 0 for the
	// in-process pgx baseline.
	pid       int
	idleRSSKB int
	// protocol is the MCP protocol version the server chose for this
	// run's client ("" for a target that is not MCP); version is the
	// peer's release, when known.
	protocol, version string
	newWorker         func(ctx context.Context) (worker, error)
	stop              func()
}

// proc is a server started as a child process, its output in a log file.
type proc struct {
	cmd *exec.Cmd
	log string
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// startProc starts cmd and waits until ready answers (any HTTP status
// below 500) or wait passes.
func startProc(ctx context.Context, name string, cmd *exec.Cmd, ready string, wait time.Duration) (*proc, error) {
	f, err := os.CreateTemp("", "parsemcp-peers-"+name+"-*.log")
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	f.Close()
	p := &proc{cmd: cmd, log: f.Name()}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return nil, fmt.Errorf("%s exited at start; its log: %s\n%s", name, p.log, tailFile(p.log, 1500))
		case <-ctx.Done():
			p.stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return p, nil
			}
		}
	}
	p.stop()
	return nil, fmt.Errorf("%s did not answer %s within %s; its log: %s\n%s", name, ready, wait, p.log, tailFile(p.log, 1500))
}

func (p *proc) stop() {
	if p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for p.cmd.ProcessState == nil {
			time.Sleep(50 * time.Millisecond)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func tailFile(path string, n int) string {
	b, _ := os.ReadFile(path)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func cacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil || d == "" {
		d = os.TempDir()
	}
	return filepath.Join(d, "parsemcp")
}

// mcpClient is the MCP client of a run: the official go-sdk one (sdk) or
// the raw one, asking for protocol version protocol ("": the client's
// default).
type mcpClient struct {
	sdk      bool
	protocol string
}

// mcpTarget builds the workers of an MCP server at url.
func mcpTarget(name string, p *proc, url string, headers map[string]string, calls map[string]call, cl mcpClient) *target {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	return &target{name: name, pid: p.cmd.Process.Pid, stop: p.stop,
		newWorker: func(ctx context.Context) (worker, error) {
			if cl.sdk {
				return newSDKMCP(ctx, hc, url, headers, calls, cl.protocol)
			}
			return newRawMCP(ctx, hc, url, headers, calls, cl.protocol)
		}}
}

// parsemcpTarget runs `parsemcp serve` on the database with the master key,
// with the per-principal rate limit lifted (one principal makes every call
// here) and its in-flight cap just below the database pool, as serve
// requires: past it, clients wait in admission, as they would in a
// deployment. Its response budget is lifted (bench.BenchBudget): a find
// sends all its 100 rows, as the peers do, instead of the first 16 KB.
// resultContent, when set, is passed as --result-content (both, text or
// structured).
func parsemcpTarget(ctx context.Context, name, bin, dbURL string, sp map[string]*spec, cl mcpClient, resultContent string) (*target, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "serve", "--store", dbURL, "--addr", addr,
		"--rate-limit", "0", "--preauth-limit", "0", "--max-inflight", strconv.Itoa(dbConns-1), "--db-max-conns", strconv.Itoa(dbConns),
		"--max-response-bytes", strconv.Itoa(bench.BenchBudget))
	if resultContent != "" {
		cmd.Args = append(cmd.Args, "--result-content", resultContent)
	}
	p, err := startProc(ctx, name, cmd, "http://"+addr+"/health", 60*time.Second)
	if err != nil {
		return nil, err
	}
	calls := map[string]call{}
	for op, s := range sp {
		calls[op] = call{s.tool, s.args}
	}
	return mcpTarget(name, p, "http://"+addr+"/mcp", nil, calls, cl), nil
}

// pgxTarget runs parsemcp's SQL straight through pgx in this process and
// reads every value of every row: the database's own rate.
func pgxTarget(ctx context.Context, dbURL string, sp map[string]*spec) (*target, error) {
	cfg, err := pgxpool.ParseConfig(dbURL)
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = dbConns
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, err
	}
	w := &pgxWorker{pool: pool, sp: sp}
	return &target{name: "pgx", stop: pool.Close,
		newWorker: func(context.Context) (worker, error) { return w, nil }}, nil
}

type pgxWorker struct {
	pool *pgxpool.Pool
	sp   map[string]*spec
}

func (w *pgxWorker) do(ctx context.Context, op string) error {
	s := w.sp[op]
	rows, err := w.pool.Query(ctx, s.sql, s.sqlArgs...)
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		if _, err := rows.Values(); err != nil {
			return err
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n == 0 {
		return errors.New("no rows")
	}
	return nil
}

func (w *pgxWorker) close() {}

// parseServerTarget starts Parse Server 9 (scripts/parse-server, installed
// by its install.sh into the cache) on the same database with the master
// key; the REST API answers the same four operations.
func parseServerTarget(ctx context.Context, dir, dbURL string, sp map[string]*spec) (*target, string, error) {
	script := filepath.Join(dir, "server.js")
	if _, err := os.Stat(script); err != nil {
		return nil, script + " is absent (scripts/parse-server, or -parse-server-dir)", nil
	}
	mods, _ := filepath.Glob(filepath.Join(cacheDir(), "parse-server", "*", "node_modules"))
	var nodeModules string
	for _, m := range mods {
		if _, err := os.Stat(filepath.Join(m, "parse-server")); err == nil {
			nodeModules = m
		}
	}
	if nodeModules == "" {
		return nil, "Parse Server is not installed (run scripts/parse-server/install.sh)", nil
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, "node is not on PATH", nil
	}
	if err := parseServerColumns(ctx, dbURL); err != nil {
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	logs, err := os.MkdirTemp("", "parsemcp-peers-parse-logs-*")
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command("node", script)
	cmd.Dir = logs
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodeModules, "PARSE_PORT="+strconv.Itoa(port),
		"PARSE_DATABASE_URI="+dbURL, "PARSE_APP_ID=bench", "PARSE_MASTER_KEY=bench-master",
		"PARSE_LIVEQUERY_CLASSES=NoLiveQueryInTheBenchmark", "PARSE_LOGS_FOLDER="+logs, "NODE_ENV=production")
	base := "http://127.0.0.1:" + strconv.Itoa(port) + "/parse"
	p, err := startProc(ctx, "parse-server", cmd, base+"/health", 120*time.Second)
	if err != nil {
		return nil, "", err
	}
	paths := map[string]string{}
	for op, s := range sp {
		paths[op] = s.rest
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	w := &restWorker{hc: hc, base: base, paths: paths, headers: map[string]string{"X-Parse-Application-Id": "bench", "X-Parse-Master-Key": "bench-master"}}
	return &target{name: "parse-server", pid: p.cmd.Process.Pid, stop: func() { p.stop(); os.RemoveAll(logs) },
		newWorker: func(context.Context) (worker, error) { return w, nil }}, "", nil
}

// parseServerColumns adds the _User token columns Parse Server indexes at
// start-up (it refuses to start without them) when the demo data lacks
// them; they stay empty, and no measured query reads _User.
func parseServerColumns(ctx context.Context, dbURL string) error {
	pool, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	_, err = pool.Exec(ctx, `ALTER TABLE "_User" ADD COLUMN IF NOT EXISTS "_email_verify_token" text, ADD COLUMN IF NOT EXISTS "_perishable_token" text`)
	return err
}

// dbhubTarget runs dbhub (bench/peers/install-dbhub.sh) on the database;
// its execute_sql tool runs parsemcp's SQL with the arguments inlined. A
// preload keeps it on loopback (it listens on every interface otherwise).
func dbhubTarget(ctx context.Context, repo, dbURL string, sp map[string]*spec, cl mcpClient) (*target, string, error) {
	entries, _ := filepath.Glob(filepath.Join(cacheDir(), "dbhub", "*", "node_modules", "@bytebase", "dbhub", "dist", "index.js"))
	if len(entries) == 0 {
		return nil, "dbhub is not installed (run bench/peers/install-dbhub.sh)", nil
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command("node", "--require", filepath.Join(repo, "bench", "peers", "loopback.cjs"), entries[len(entries)-1],
		"--transport", "http", "--port", strconv.Itoa(port), "--dsn", strings.Replace(dbURL, "postgres://", "postgres://", 1))
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	p, err := startProc(ctx, "dbhub", cmd, base+"/healthz", 60*time.Second)
	if err != nil {
		return nil, "", err
	}
	calls := map[string]call{}
	for op, s := range sp {
		calls[op] = call{"execute_sql", fmt.Sprintf(`{"sql":%q}`, s.literal)}
	}
	t := mcpTarget("dbhub", p, base+"/mcp", nil, calls, cl)
	// …/dbhub/<version>/node_modules/@bytebase/dbhub/dist/index.js
	t.version = filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(entries[len(entries)-1]))))))
	return t, "", nil
}

// toolboxTarget runs MCP Toolbox for Databases (bench/peers/install-toolbox.sh,
// the prebuilt binary from npm) with one postgres-sql tool per operation,
// each parsemcp's SQL with the arguments inlined.
func toolboxTarget(ctx context.Context, dbURL string, sp map[string]*spec, cl mcpClient) (*target, string, error) {
	bin, version, why := toolboxBinary()
	if bin == "" {
		return nil, why, nil
	}
	cfgFile, err := os.CreateTemp("", "parsemcp-peers-toolbox-*.yaml")
	if err != nil {
		return nil, "", err
	}
	defer cfgFile.Close()
	if _, err := cfgFile.WriteString(toolboxConfig(dbURL, sp)); err != nil {
		os.Remove(cfgFile.Name())
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(bin, toolboxArgs(cfgFile.Name(), port)...)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	p, err := startProc(ctx, "toolbox", cmd, base+"/", 120*time.Second)
	if err != nil {
		os.Remove(cfgFile.Name())
		return nil, "", err
	}
	calls := map[string]call{}
	for op := range sp {
		calls[op] = call{"bench_" + op, `{}`}
	}
	t := mcpTarget("toolbox", p, base+"/mcp", nil, calls, cl)
	t.version = version
	t.stop = func() { p.stop(); os.Remove(cfgFile.Name()) }
	return t, "", nil
}
