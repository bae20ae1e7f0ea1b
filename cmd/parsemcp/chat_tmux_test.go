package main

// `parsemcp chat` in a real terminal: tmux runs the built binary, the test
// types with send-keys and reads the screen with capture-pane.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/llm/llmtest"
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
	if line != "" {
		p.tmux("send-keys", "-t", "chat", "-l", line)
	}
	p.tmux("send-keys", "-t", "chat", "Enter")
	return n
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// startChat runs `parsemcp chat ARGS…` in a new tmux session (with the
// LLM environment of llmEnv), which stays on the screen after chat ends.
// Without tmux the test is skipped, except in CI.
func startChat(t *testing.T, args ...string) *tmuxPane {
	t.Helper()
	return startChatEnv(t, nil, args...)
}

// startChatEnv is startChat with more environment variables.
func startChatEnv(t *testing.T, env []string, args ...string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("tmux is required in CI (.ci/run installs it)")
		}
		t.Skip("tmux is not installed (apt-get install tmux); skipping the terminal test of parsemcp chat")
	}
	p := &tmuxPane{t: t, socket: filepath.Join(t.TempDir(), "tmux.sock")}
	var cmd []string
	for _, e := range append(llmEnv(t), env...) {
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

// A person chats as the demo analyst: types a question, sees the streamed
// answer with a line for the tool call, checks /cost, /tools, /trace and
// /history, and leaves with /exit.
func TestChatInTmux(t *testing.T) {
	count := llmtest.Counter("Ticket")
	fake := llmtest.NewOpenAI(t, func(req *llmtest.Request) llmtest.Reply {
		if req.LastUserText() == "never mind" {
			return llmtest.Reply{Hang: true}
		}
		return count(req)
	})
	dir := t.TempDir()
	p := startChat(t, "--demo", "--demo-rows", "600", "--policy", "demo",
		"--model", "gpt-4o-mini", "--base-url", fake.BaseURL, "--history-file", filepath.Join(dir, "history"))

	p.waitFor(0, "parsemcp chat: openai / gpt-4o-mini", "agent analyst", "Type a question.")
	at := p.send("How many tickets are there?")
	want := fmt.Sprintf("There are %d Ticket objects.", analystTicketCount(t))
	s := p.waitFor(at, `-> count_objects {"class_name":"Ticket"} (`, want)
	if strings.Index(s[at:], "-> count_objects") > strings.Index(s[at:], want) {
		t.Errorf("the tool-call line comes after the answer:\n%s", s[at:])
	}
	if !fake.Requests()[0].Stream {
		t.Error("chat did not stream")
	}

	at = p.send("/cost")
	p.waitFor(at, "session: ", " tokens $", "last:    ")
	at = p.send("/tools")
	p.waitFor(at, "count_objects", "query_class", "tools (in-process")
	at = p.send("/trace")
	p.waitFor(at, "trace: on")
	at = p.send("/history")
	p.waitFor(at, "user:      How many tickets are there?", "[calls count_objects]", "assistant: "+want)
	// Ctrl-C stops an answer that does not come, and the session goes on.
	at = p.send("never mind")
	for len(fake.Requests()) < 3 {
		time.Sleep(50 * time.Millisecond) // bounded by the test's timeout: the request is on its way
	}
	p.tmux("send-keys", "-t", "chat", "C-c")
	p.waitFor(at, "(stopped)")
	at = p.send("/reset")
	p.waitFor(at, "The conversation is cleared.")
	at = p.send("/exit")
	t.Logf("the session:\n%s", p.waitFor(at, "bye"))
	p.paneEnds("/exit")
	if h, err := os.ReadFile(filepath.Join(dir, "history")); err != nil || !strings.Contains(string(h), "How many tickets are there?") {
		t.Errorf("history file: %q %v", h, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "history")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode: %v %v, want 0600", fi.Mode(), err)
	}
}

// paneEnds waits until chat has ended in the pane.
func (p *tmuxPane) paneEnds(after string) {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.TrimSpace(p.tmux("display-message", "-p", "-t", "chat", "#{pane_dead}")) != "1" {
		if time.Now().After(deadline) {
			p.t.Fatalf("chat did not end after %s:\n%s", after, p.screen())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// An empty line ends chat, as in the reference guide's chat; the guide's
// MCP_CHAT_TRACE starts it with the trace on.
func TestChatEmptyLineEndsInTmux(t *testing.T) {
	fake := llmtest.NewOpenAI(t, llmtest.Counter("Ticket"))
	p := startChatEnv(t, []string{"MCP_CHAT_TRACE=true"}, "--demo", "--demo-rows", "600", "--policy", "demo",
		"--model", "gpt-4o-mini", "--base-url", fake.BaseURL, "--history-file", "")
	p.waitFor(0, "trace: on", "Type a question.")
	at := p.send("/trace")
	p.waitFor(at, "trace: off")
	at = p.send("")
	p.waitFor(at, "bye")
	p.paneEnds("an empty line")
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("the empty line went to the model (%d requests)", n)
	}
}
