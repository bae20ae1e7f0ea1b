package main

// `parsemcp chat` in a real terminal: tmux runs the built binary, the test
// types with send-keys and reads the screen with capture-pane.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/llm/llmtest"
)

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
	p.keys("C-c")
	p.waitFor(at, "(stopped)")
	at = p.send("/reset")
	p.waitFor(at, "The conversation is cleared.")
	at = p.send("/exit")
	t.Logf("the session:\n%s", p.waitFor(at, "bye"))
	p.waitEnd()
	if h, err := os.ReadFile(filepath.Join(dir, "history")); err != nil || !strings.Contains(string(h), "How many tickets are there?") {
		t.Errorf("history file: %q %v", h, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "history")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history file mode: %v %v, want 0600", fi.Mode(), err)
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
	p.waitEnd()
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("the empty line went to the model (%d requests)", n)
	}
}
