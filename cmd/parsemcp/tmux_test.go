package main

// The terminal tests' harness: tmux runs the built binary, a test types
// with send-keys and reads the screen with capture-pane.

import (
	"fmt"
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
	target string // the session's name: the command it runs
}

func (p *tmuxPane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// screen is the pane's text, the whole scrollback included.
// Trailing blank lines are cut, so the text only grows as the session
// goes on.
func (p *tmuxPane) screen() string {
	return strings.TrimRight(p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", p.target), " \n")
}

// waitFor waits until the screen holds every one of want, after the
// screen's first `after` bytes.
func (p *tmuxPane) waitFor(after int, want ...string) string {
	p.t.Helper()
	return p.poll(fmt.Sprintf("showed %q", want), func(s string) bool {
		rest := ""
		if len(s) > after {
			rest = s[after:]
		}
		for _, w := range want {
			if !strings.Contains(rest, w) {
				return false
			}
		}
		return true
	})
}

// waitPrompt waits until the screen ends with prompt (its trailing
// blanks cut): the command waits for input. It returns the screen's
// length.
func (p *tmuxPane) waitPrompt(prompt string) int {
	p.t.Helper()
	return len(p.poll(fmt.Sprintf("ended with the prompt %q", prompt), func(s string) bool {
		return strings.HasSuffix(s, strings.TrimRight(prompt, " "))
	}))
}

// poll reads the screen until ok says yes, and returns it. The deadline
// only bounds a hang.
func (p *tmuxPane) poll(what string, ok func(screen string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		s := p.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never %s:\n%s", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *tmuxPane) send(line string) int {
	p.t.Helper()
	n := len(p.screen())
	p.keys("-l", line)
	p.keys("Enter")
	return n
}

// keys sends keys by their tmux names (C-c, Tab, Up, Enter …).
func (p *tmuxPane) keys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", p.target}, keys...)...)
}

// waitEnd waits until the command in the pane has ended. The deadline
// only bounds a hang.
func (p *tmuxPane) waitEnd() {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.TrimSpace(p.tmux("display-message", "-p", "-t", p.target, "#{pane_dead}")) != "1" {
		if time.Now().After(deadline) {
			p.t.Fatalf("%s did not end:\n%s", p.target, p.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startTmux runs `parsemcp COMMAND ARGS…` in a new tmux session named
// after the command (with the clean environment of llmEnv), which stays
// on the screen after the command ends. Without tmux the test is
// skipped, except in CI.
func startTmux(t *testing.T, command string, args ...string) *tmuxPane {
	t.Helper()
	return startTmuxEnv(t, nil, command, args...)
}

// startTmuxEnv is startTmux with more environment variables.
func startTmuxEnv(t *testing.T, env []string, command string, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is required in CI (.ci/run installs it)")
		}
		t.Skip("tmux is not installed (apt-get install tmux); skipping the terminal test of parsemcp " + command)
	}
	p := &tmuxPane{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock"), target: command}
	var cmd []string
	for _, e := range append(llmEnv(t), env...) {
		cmd = append(cmd, shellQuote(e))
	}
	cmd = append(cmd, "TERM=xterm", shellQuote(binary), command)
	for _, a := range args {
		cmd = append(cmd, shellQuote(a))
	}
	// The scrollback holds the whole session (screen reads it all).
	p.tmux("start-server", ";", "set-option", "-g", "history-limit", "100000", ";",
		"new-session", "-d", "-s", command, "-x", "200", "-y", "50", "env "+strings.Join(cmd, " "))
	t.Cleanup(func() { exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	p.tmux("set-option", "-t", command, "remain-on-exit", "on")
	return p
}

// startChat runs `parsemcp chat ARGS…` in a new tmux session.
func startChat(t *testing.T, args ...string) *tmuxPane {
	t.Helper()
	return startTmux(t, "chat", args...)
}

// startChatEnv is startChat with more environment variables.
func startChatEnv(t *testing.T, env []string, args ...string) *tmuxPane {
	t.Helper()
	return startTmuxEnv(t, env, "chat", args...)
}
