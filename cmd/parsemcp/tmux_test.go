package main

// The terminal tests' harness: tmux runs the built binary, a test types
// with send-keys and reads the screen with capture-pane.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tmuxPane is one tmux session on a private server socket.
type tmuxPane struct {
	t      *testing.T
	socket string
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is the pane's text, scrollback included.
// Trailing blank lines are cut, so the text only grows as the session
// goes on.
func (p *tmuxPane) screen() string {
	return strings.TrimRight(p.tmux("capture-pane", "-p", "-J", "-S", "-1000", "-t", "chat"), " \n")
}

// waitFor waits until the screen holds every one of want, after the
// screen's first `after` bytes. The deadline only bounds a hang.
func (p *tmuxPane) waitFor(after int, want ...string) string {
	p.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		s := p.screen()
		rest := ""
		if len(s) > after {
			rest = s[after:]
		}
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(rest, w)
		}
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %q:\n%s", want, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *tmuxPane) send(line string) int {
	p.t.Helper()
	n := len(p.screen())
	p.tmux("send-keys", "-t", "chat", "-l", line)
	p.tmux("send-keys", "-t", "chat", "Enter")
	return n
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startChat runs `parsemcp chat ARGS…` in a new tmux session (with the
// LLM environment of llmEnv), which stays on the screen after chat ends.
// Without tmux the test is skipped, except in CI.
func startChat(t *testing.T, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is required in CI (.ci/run installs it)")
		}
		t.Skip("tmux is not installed (apt-get install tmux); skipping the terminal test of parsemcp chat")
	}
	p := &tmuxPane{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	var cmd []string
	for _, e := range llmEnv(t) {
		cmd = append(cmd, shellQuote(e))
	}
	cmd = append(cmd, "TERM=xterm", shellQuote(binary), "chat")
	for _, a := range args {
		cmd = append(cmd, shellQuote(a))
	}
	p.tmux("new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", "env "+strings.Join(cmd, " "))
	t.Cleanup(func() { exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	p.tmux("set-option", "-t", "chat", "remain-on-exit", "on")
	return p
}
