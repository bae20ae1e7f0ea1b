package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parsemcp/parsemcp/internal/testing/freeport"
	"github.com/parsemcp/parsemcp/internal/testing/testproc"
)

// PrivateServer is a redis-server that belongs to one test (Private): its
// own port and directory, so the test may stop and start it without
// disturbing the shared Redis other tests use. Start, Stop, Restart and
// Log come from testproc.Server.
type PrivateServer struct {
	*testproc.Server
	t    testing.TB
	port int
}

// Private starts a throwaway redis-server for t on a free 127.0.0.1 port,
// with nothing persisted (--save "" --appendonly no) and its working
// directory in t.TempDir(); it is stopped when t ends. Without
// redis-server (PATH) the test skips, except in CI (CI=true), where it
// fails.
func Private(t testing.TB) *PrivateServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		testproc.Unavailable(t, fmt.Sprintf("no private Redis: redis-server not found in PATH (%v); install the Redis server package", err))
	}
	dir := t.TempDir()
	p := &PrivateServer{t: t}
	if p.port, err = freeport.Get(); err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(dir, "redis.log")
	p.Server = testproc.Start(t, testproc.Options{
		Name: "redis-server",
		Command: func() *exec.Cmd {
			cmd := exec.Command(bin,
				"--bind", "127.0.0.1", "--port", strconv.Itoa(p.port),
				"--save", "", "--appendonly", "no", "--dir", dir,
				"--daemonize", "no", "--logfile", logFile)
			cmd.Dir = dir
			return cmd
		},
		Ready: func() error {
			c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DialTimeout: time.Second})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			return c.Ping(ctx).Err()
		},
		// SHUTDOWN NOSAVE: every client connection is closed, nothing is
		// kept (the reply is the closed connection).
		Shutdown: func(*os.Process) {
			c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = c.ShutdownNoSave(ctx).Err()
		},
		LogFile: logFile,
	})
	return p
}

// Addr is the server's address, HOST:PORT (the same after every Start).
func (p *PrivateServer) Addr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port))
}

// URL is the server's redis:// URL for database 0.
func (p *PrivateServer) URL() string { return "redis://" + p.Addr() + "/0" }

// Client returns a client of the server, closed when the test ends.
func (p *PrivateServer) Client() *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: p.Addr()})
	p.t.Cleanup(func() { c.Close() })
	return c
}
