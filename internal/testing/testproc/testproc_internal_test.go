package testproc

import (
	"os/exec"
	"strings"
	"testing"
)

// A server killed from outside is recorded with how it ended (shown when
// the test fails); one the test stops is not.
func TestDiedOnItsOwn(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep command")
	}
	s := Start(t, Options{Name: "sleeper", Command: func() *exec.Cmd { return exec.Command("sleep", "600") }, Ready: func() error { return nil }})
	s.Stop()
	if d := s.died.Load(); d != nil {
		t.Fatalf("a stop recorded as a death: %s", *d)
	}
	s.Start()
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	_ = cmd.Process.Kill() // as another process would
	<-done
	d := s.died.Load()
	if d == nil || !strings.Contains(*d, "sleeper (pid ") || !strings.Contains(*d, "signal: killed") {
		t.Fatalf("recorded: %v", d)
	}
}
