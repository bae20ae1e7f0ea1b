package pgtest

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/internal/testing/testproc"
)

// PrivateServer is a PostgreSQL cluster that belongs to one test (Private):
// its own data directory and port, so the test may stop and start it
// without disturbing the shared server other tests use.
type PrivateServer struct {
	t       testing.TB
	bin     string // directory holding initdb and pg_ctl
	dir     string // the cluster's directory (data, log, socket)
	data    string
	sockDir string
	logFile string
	port    int
	asUser  []string // prefix running a command as the postgres OS user (root only)

	mu      sync.Mutex
	running bool
}

// Private starts a throwaway PostgreSQL cluster for t, stopped when t
// ends: initdb in a temporary directory, trust authentication, listening on
// 127.0.0.1 on a free port (and on a Unix socket in its directory), with
// fsync off. The binaries come from /usr/lib/postgresql/*/bin (the newest
// version) or else from PATH. Without them the test skips, except in CI
// (CI=true), where it fails. Run as root, the binaries run as the postgres
// OS user (PostgreSQL refuses root).
func Private(t testing.TB) *PrivateServer {
	t.Helper()
	bin, err := postgresBin()
	if err != nil {
		unavailable(t, err.Error())
	}
	p := &PrivateServer{t: t, bin: bin}
	p.dir = t.TempDir()
	if os.Geteuid() == 0 {
		p.asUser, err = postgresUser(t, p.dir)
		if err != nil {
			unavailable(t, err.Error())
		}
	}
	p.data = filepath.Join(p.dir, "data")
	p.logFile = filepath.Join(p.dir, "postgres.log")
	if p.port, err = freeport.Get(); err != nil {
		t.Fatal(err)
	}
	p.sockDir = p.dir
	// A Unix socket path is limited to about 100 bytes.
	if len(filepath.Join(p.sockDir, ".s.PGSQL.00000.lock")) > 100 {
		short, err := os.MkdirTemp("", "pgs")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(short) })
		if p.asUser != nil {
			if err := chownToPostgres(short); err != nil {
				t.Fatal(err)
			}
		}
		p.sockDir = short
	}
	if out, err := p.command("initdb", "-D", p.data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	conf := fmt.Sprintf(`
# parsemcp test cluster (pgtest.Private)
listen_addresses = '127.0.0.1'
port = %d
unix_socket_directories = '%s'
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 32MB
max_connections = 60
`, p.port, p.sockDir)
	f, err := os.OpenFile(filepath.Join(p.data, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(conf); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.running {
			_, _ = p.command("pg_ctl", "-D", p.data, "-m", "immediate", "-w", "-t", "60", "-s", "stop").CombinedOutput()
			p.running = false
		}
	})
	p.Start()
	return p
}

// URL is the connection URL of the cluster's postgres database over TCP.
func (p *PrivateServer) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", p.port)
}

// SocketURL is the URL of the same database over the cluster's Unix socket
// (which StartSocketOnly leaves as the only way in).
func (p *PrivateServer) SocketURL() string {
	return fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", url.QueryEscape(p.sockDir), p.port)
}

// Start starts the cluster (stopped by Stop) on its port and returns once
// it accepts connections. It fails the test when it cannot.
func (p *PrivateServer) Start() {
	p.t.Helper()
	p.start(nil, p.URL())
}

// StartSocketOnly starts the cluster listening on its Unix socket only: no
// TCP client (such as a server under test connecting to URL) can reach it
// until it is stopped and started again with Start. SocketURL reaches it.
func (p *PrivateServer) StartSocketOnly() {
	p.t.Helper()
	p.start([]string{"-o", "-c listen_addresses=''"}, p.SocketURL())
}

func (p *PrivateServer) start(extra []string, readyURL string) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		p.t.Fatal("pgtest: Start of a running cluster")
	}
	args := append([]string{"-D", p.data, "-l", p.logFile, "-w", "-t", "60", "-s"}, extra...)
	if out, err := p.command("pg_ctl", append(args, "start")...).CombinedOutput(); err != nil {
		p.t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, p.Log())
	}
	p.running = true
	// pg_ctl -w waited for the postmaster; a real connection confirms it.
	testproc.WaitReady(p.t, "the private PostgreSQL cluster", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, readyURL)
		if err == nil {
			err = c.Ping(ctx)
			c.Close(ctx)
		}
		return err
	}, p.Log)
}

// Stop stops the cluster (pg_ctl stop -m fast: sessions are ended, like
// an administrator's restart) and returns once it is down.
func (p *PrivateServer) Stop() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		p.t.Fatal("pgtest: Stop of a stopped cluster")
	}
	if out, err := p.command("pg_ctl", "-D", p.data, "-m", "fast", "-w", "-t", "60", "-s", "stop").CombinedOutput(); err != nil {
		p.t.Fatalf("pg_ctl stop: %v\n%s\n%s", err, out, p.Log())
	}
	p.running = false
}

// Restart stops the cluster and starts it again on the same port.
func (p *PrivateServer) Restart() {
	p.t.Helper()
	p.Stop()
	p.Start()
}

// Log returns the server's log so far (for failure messages).
func (p *PrivateServer) Log() string { return testproc.ReadLog(p.logFile) }

// command runs a PostgreSQL binary, as the postgres OS user when the test
// runs as root.
func (p *PrivateServer) command(name string, args ...string) *exec.Cmd {
	argv := append(slices.Clone(p.asUser), filepath.Join(p.bin, name))
	argv = append(argv, args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = p.dir
	// Settings meant for the shared server must not leak into this one.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PG") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "LC_ALL=C")
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// unavailable skips the test (fails it in CI) when no private cluster can
// be made here.
func unavailable(t testing.TB, why string) {
	t.Helper()
	testproc.Unavailable(t, "no private PostgreSQL cluster: "+why)
}

// postgresBin finds the directory of initdb and pg_ctl.
func postgresBin() (string, error) {
	has := func(dir string) bool {
		for _, b := range []string{"initdb", "pg_ctl", "postgres"} {
			if fi, err := os.Stat(filepath.Join(dir, b)); err != nil || fi.IsDir() {
				return false
			}
		}
		return true
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	version := func(dir string) int {
		n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
		return n
	}
	slices.SortFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if has(d) {
			return d, nil
		}
	}
	if path, err := exec.LookPath("initdb"); err == nil {
		if d := filepath.Dir(path); has(d) {
			return d, nil
		}
	}
	return "", fmt.Errorf("initdb and pg_ctl not found in /usr/lib/postgresql/*/bin nor in PATH (install the PostgreSQL server package)")
}

// postgresUser prepares dir for the postgres OS user and returns the
// command prefix that runs a program as that user (setpriv, or runuser).
func postgresUser(t testing.TB, dir string) ([]string, error) {
	t.Helper()
	if _, err := user.Lookup("postgres"); err != nil {
		return nil, fmt.Errorf("running as root, and there is no postgres OS user to run the server as (PostgreSQL refuses root): %v", err)
	}
	var prefix []string
	if p, err := exec.LookPath("setpriv"); err == nil {
		prefix = []string{p, "--reuid=postgres", "--regid=postgres", "--init-groups", "--"}
	} else if p, err := exec.LookPath("runuser"); err == nil {
		prefix = []string{p, "-u", "postgres", "--"}
	} else {
		return nil, fmt.Errorf("running as root, and neither setpriv nor runuser is there to run the server as the postgres OS user")
	}
	if err := chownToPostgres(dir); err != nil {
		return nil, err
	}
	// The testing package makes the test's temporary root 0700: let the
	// postgres user through it to dir.
	parent := filepath.Dir(dir)
	if fi, err := os.Stat(parent); err == nil && fi.Mode().Perm()&0o001 == 0 {
		if err := os.Chmod(parent, fi.Mode().Perm()|0o711); err != nil {
			return nil, err
		}
	}
	for a := filepath.Dir(parent); ; a = filepath.Dir(a) {
		if fi, err := os.Stat(a); err != nil || fi.Mode().Perm()&0o001 == 0 {
			t.Fatalf("pgtest: the postgres OS user cannot reach %s (no search permission on %s); set TMPDIR to a directory everyone may traverse", dir, a)
		}
		if a == filepath.Dir(a) {
			break
		}
	}
	return prefix, nil
}

func chownToPostgres(dir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(dir, uid, gid)
}
