// Package testproc runs the private servers tests start (a Mosquitto, a
// redis-server): a process that belongs to one test, on a port and in a
// directory of its own, which the test may stop and start again without
// disturbing the shared server other tests use, and which is killed when
// the test ends. It also holds what every private server helper shares
// (pgtest's PostgreSQL cluster included): waiting until the server
// serves, and skipping a test when the server's program is missing.
package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Options describe a private server.
type Options struct {
	// Name names the server in failure messages ("mosquitto").
	Name string
	// Command returns the server's process, run in the foreground; it is
	// called afresh at each Start.
	Command func() *exec.Cmd
	// Ready reports nil once the server serves; Start probes it until then.
	Ready func() error
	// Shutdown asks the running server to stop (default: SIGINT); Stop
	// kills it if it has not exited 10 s later.
	Shutdown func(*os.Process)
	// LogFile is the server's log, shown when it fails.
	LogFile string
}

// Server is a private server of one test.
type Server struct {
	t testing.TB
	o Options

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited

	// stopping is set before the test stops or kills the process;
	// died records how it ended when it ended without that (shown when
	// the test fails: a server killed from outside, or crashed).
	stopping atomic.Bool
	died     atomic.Pointer[string]
}

// Start starts a private server for t (see Server.Start); it is killed
// when t ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	s := &Server{t: t, o: o}
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if d := s.died.Load(); d != nil && t.Failed() {
			t.Log(*d)
		}
		if s.cmd != nil {
			s.stopping.Store(true)
			_ = s.cmd.Process.Kill()
			<-s.done
			s.cmd = nil
		}
	})
	s.Start()
	return s
}

// Start starts the server and returns once it serves. It fails the test
// when the server cannot start.
func (s *Server) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		s.t.Fatalf("%s: Start of a running server", s.o.Name)
	}
	cmd := s.o.Command()
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("%s: start: %v", s.o.Name, err)
	}
	done := make(chan struct{})
	s.stopping.Store(false)
	go func() {
		_ = cmd.Wait()
		if !s.stopping.Load() {
			d := fmt.Sprintf("%s (pid %d) ended on its own at %s: %v", s.o.Name, cmd.Process.Pid, time.Now().UTC().Format("15:04:05.000"), cmd.ProcessState)
			s.died.Store(&d)
		}
		close(done)
	}()
	s.cmd, s.done = cmd, done
	WaitReady(s.t, s.o.Name, func() error {
		select {
		case <-done:
			s.cmd = nil
			s.t.Fatalf("%s exited at start (%v)\n%s", s.o.Name, cmd.ProcessState, s.Log())
		default:
		}
		return s.o.Ready()
	}, s.Log)
}

// Stop stops the server (Options.Shutdown, then a kill after 10 s) and
// returns once it has exited.
func (s *Server) Stop() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		s.t.Fatalf("%s: Stop of a stopped server", s.o.Name)
	}
	s.stopping.Store(true)
	if s.o.Shutdown != nil {
		s.o.Shutdown(s.cmd.Process)
	} else {
		_ = s.cmd.Process.Signal(os.Interrupt)
	}
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Restart stops the server and starts it again (on the same port).
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// Log returns the server's log so far (for failure messages).
func (s *Server) Log() string { return ReadLog(s.o.LogFile) }

// Pid returns the running process's id (0 when it is not running), for a
// benchmark that reads its CPU time.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// ReadLog returns the content of a server's log file, or why there is
// none.
func ReadLog(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no server log: " + err.Error() + ")"
	}
	return string(b)
}

// WaitReady probes ready until it reports nil. Its deadline (three
// minutes) only bounds a hang: past it the test fails with the server's
// log. (One minute was too short for Parse Server to start on the shared
// 2-core machine under a loaded -count=5 run.)
func WaitReady(t testing.TB, name string, ready func() error, log func() string) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := ready()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not serve: %v\n%s", name, err, log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Unavailable skips t because a private server cannot be made here (its
// program is missing): under CI=true, where every test must run, it fails
// t instead.
func Unavailable(t testing.TB, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CI requires it: %s", why)
	}
	t.Skip(why)
}
