package redistest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/parsemcp/parsemcp/internal/freeport"
)

// PrivateServer is a redis-server that belongs to one test (Private): its
// own port and directory, so the test may stop and start it without
// disturbing the shared Redis other tests use.
type PrivateServer struct {
	t    testing.TB
	bin  string
	dir  string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
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
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI requires redis-server for a private Redis: %v", err)
		}
		t.Skipf("no private Redis: redis-server not found in PATH (%v); install the Redis server package", err)
	}
	p := &PrivateServer{t: t, bin: bin, dir: t.TempDir()}
	if p.port, err = freeport.Get(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.cmd != nil {
			_ = p.cmd.Process.Kill()
			<-p.done
			p.cmd = nil
		}
	})
	p.Start()
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

// Start starts the server (stopped by Stop) on its port and returns once
// it answers PING. It fails the test when it cannot.
func (p *PrivateServer) Start() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		p.t.Fatal("redistest: Start of a running server")
	}
	cmd := exec.Command(p.bin,
		"--bind", "127.0.0.1", "--port", strconv.Itoa(p.port),
		"--save", "", "--appendonly", "no", "--dir", p.dir,
		"--daemonize", "no", "--logfile", filepath.Join(p.dir, "redis.log"))
	cmd.Dir = p.dir
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		p.t.Fatalf("redistest: start redis-server: %v", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	p.cmd, p.done = cmd, done
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return
		}
		select {
		case <-done:
			p.cmd = nil
			p.t.Fatalf("redistest: redis-server exited at start (%v)\n%s", cmd.ProcessState, p.Log())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("redistest: redis-server does not answer PING: %v\n%s", err, p.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop shuts the server down (SHUTDOWN NOSAVE: every client connection
// is closed, nothing is kept) and returns once the process has exited.
func (p *PrivateServer) Stop() {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		p.t.Fatal("redistest: Stop of a stopped server")
	}
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	_ = c.ShutdownNoSave(ctx).Err() // the reply is the closed connection
	cancel()
	c.Close()
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
	p.cmd = nil
}

// Restart stops the server and starts it again on the same port.
func (p *PrivateServer) Restart() {
	p.t.Helper()
	p.Stop()
	p.Start()
}

// Log returns the server's log so far (for failure messages).
func (p *PrivateServer) Log() string {
	b, err := os.ReadFile(filepath.Join(p.dir, "redis.log"))
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	return string(b)
}
