package main

// `parsemcp console` in a real terminal (the harness: tmux_test.go).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/llm/llmtest"
	"github.com/parsemcp/parsemcp/prompts"
)

const consolePrompt = "parsemcp> "

// consoleEnter types line at the console's prompt once it shows (keys
// typed before would meet a terminal not yet in raw mode), and returns
// the screen's length before it.
func consoleEnter(p *tmuxPane, line string) int {
	p.t.Helper()
	p.waitPrompt(consolePrompt)
	return p.send(line)
}

// jsonText is v as the console prints it inside a result (no HTML
// escaping).
func jsonText(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(b.String())
}

// A person explores the demo data in the console as the default agent
// (the master key, read-only): lists the tools, classes and prompts,
// renders a prompt, counts, queries with a where, reads a schema, sends a
// raw tools/list, mistypes JSON and goes on, completes names with Tab, is
// refused a write tool, and after a restart recalls the last command with
// Up.
func TestConsoleInTmux(t *testing.T) {
	tickets := demoTickets(t)
	first := tickets[0]
	open := 0
	for _, r := range tickets {
		if r["status"] == "open" {
			open++
		}
	}
	if open == 0 {
		t.Fatal("no open ticket in the ground truth")
	}
	args := []string{"--demo", "--demo-rows", "600", "--history-file", filepath.Join(t.TempDir(), "history")}
	p := startTmux(t, "console", args...)
	p.waitFor(0, "parsemcp console: in-process, demo data, master key, readonly | ", "Type help for the helpers.")

	at := consoleEnter(p, "tools")
	p.waitFor(at, "\ncount_objects\n", "\nquery_class\n", fmt.Sprintf("\n%d tools", readonlyTools()))

	at = consoleEnter(p, "schemas")
	p.waitFor(at, "\ncustom:   Comment, ", ", Ticket\n", "\nbuilt-in: _Role, _User\n", " classes")

	at = consoleEnter(p, "prompts")
	p.waitFor(at, "\nclass_overview\n", "\nparse_conventions\n", fmt.Sprintf("\n%d prompts", len(prompts.Builtin())))
	at = consoleEnter(p, `render_prompt class_overview {"class_name":"Ticket"}`)
	p.waitFor(at, `"description": "Overview of the class Ticket."`, `"messages": [`)

	at = consoleEnter(p, "count Ticket")
	p.waitFor(at, `"class_name": "Ticket"`, fmt.Sprintf(`"count": %d`, len(tickets)))

	at = consoleEnter(p, fmt.Sprintf(`q Ticket {"where":{"key":%s},"keys":"key,title"}`, jsonText(t, first["key"])))
	p.waitFor(at, `"result_count": 1`, `"key": `+jsonText(t, first["key"]), `"title": `+jsonText(t, first["title"]),
		`"objectId": `+jsonText(t, first["objectId"]))

	at = consoleEnter(p, "schema Ticket")
	p.waitFor(at, `"class_name": "Ticket"`, `"name": "title"`, `"type": "custom"`)

	at = consoleEnter(p, "dispatch tools/list")
	p.waitFor(at, `"tools": [`, `"name": "query_class"`, `"inputSchema": {`)

	// A mistake prints one line, and the console goes on.
	at = consoleEnter(p, `q Ticket {"limit":`)
	p.waitFor(at, "error: invalid JSON {\"limit\":: ")
	at = consoleEnter(p, "count Project")
	p.waitFor(at, `"class_name": "Project"`, `"count": `)
	at = consoleEnter(p, "frobnicate")
	p.waitFor(at, `error: unknown helper "frobnicate"; help lists them`)
	at = consoleEnter(p, "ask how many?")
	p.waitFor(at, "error: ask needs a language model")

	// Tab completes a tool name after t, and a class name after count (the
	// screen is read from the prompt on; its trailing blanks are cut).
	at = p.waitPrompt(consolePrompt)
	p.keys("-l", "t count_ob")
	p.keys("Tab")
	p.waitFor(at, "t count_objects")
	p.keys("-l", `{"class_name":"Ticket","where":{"status":"open"}}`)
	p.waitFor(at, `t count_objects {"class_name"`)
	p.keys("Enter")
	p.waitFor(at, fmt.Sprintf(`"count": %d`, open))
	at = p.waitPrompt(consolePrompt)
	p.keys("-l", "count Tick")
	p.keys("Tab")
	p.waitFor(at, "count Ticket")
	p.keys("Enter")
	p.waitFor(at, fmt.Sprintf(`"count": %d`, len(tickets)))

	// A read-only agent may not write: the server refuses.
	at = consoleEnter(p, `t create_object {"class_name":"Ticket","fields":{"title":"from the console"}}`)
	p.waitFor(at, "error: permission_denied: tool create_object needs write permission; this agent is readonly")

	at = consoleEnter(p, `count Ticket {"status":"open"}`)
	p.waitFor(at, fmt.Sprintf(`"count": %d`, open))
	at = consoleEnter(p, "exit")
	p.waitFor(at, "bye")
	p.waitEnd()

	// Up recalls the history of the last session: exit, then the count.
	p = startTmux(t, "console", args...)
	p.waitFor(0, "Type help for the helpers.")
	at = p.waitPrompt(consolePrompt)
	p.keys("Up")
	p.waitFor(at, "exit")
	p.keys("Up")
	p.waitFor(at, `count Ticket {"status":"open"}`)
	p.keys("Enter")
	p.waitFor(at, fmt.Sprintf(`"count": %d`, open))
	p.keys("C-d")
	t.Logf("the second session:\n%s", p.waitFor(at, "bye"))
	p.waitEnd()
}

// With a model, ask starts a conversation in which the model calls the
// tools, reply goes on with it, and the next ask starts afresh.
func TestConsoleAskReplyInTmux(t *testing.T) {
	count := llmtest.Counter("Ticket")
	fake := llmtest.NewOpenAI(t, func(req *llmtest.Request) llmtest.Reply {
		if req.LastUserText() == "How many tickets are there?" {
			return count(req)
		}
		return llmtest.Reply{Text: fmt.Sprintf("This conversation had %d turns before.", req.AssistantTurns())}
	})
	p := startTmux(t, "console", "--demo", "--demo-rows", "600", "--policy", "demo",
		"--model", "gpt-4o-mini", "--base-url", fake.BaseURL, "--history-file", "")
	p.waitFor(0, "agent analyst", "model: openai / gpt-4o-mini at ", "Type help for the helpers.")

	at := consoleEnter(p, "ask How many tickets are there?")
	p.waitFor(at, `-> count_objects {"class_name":"Ticket"} (`, fmt.Sprintf("There are %d Ticket objects.", analystTicketCount(t)))
	at = consoleEnter(p, "reply Are you sure?")
	p.waitFor(at, "This conversation had 2 turns before.")
	at = consoleEnter(p, "ask Are you sure?")
	p.waitFor(at, "This conversation had 0 turns before.")
	at = consoleEnter(p, "exit")
	p.waitFor(at, "bye")
}
