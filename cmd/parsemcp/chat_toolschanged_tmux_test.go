package main

import (
	"os"
	"slices"
	"testing"

	"github.com/parsemcp/parsemcp/llm/llmtest"
)

// chat follows the server's notifications/tools/list_changed: a remote
// agent that joins during the session is offered to the model from the
// next question on (and its tool answers), and once it has left its tool
// is no longer offered; the person at the prompt is told each time.
func TestChatFollowsToolListChanges(t *testing.T) {
	const thermo = "device-thermo__read_temperature"
	const notice = "(the server's tools changed: the next question is offered the new list)"
	fake := llmtest.NewOpenAI(t, func(req *llmtest.Request) llmtest.Reply {
		switch res := req.LastResults(); {
		case len(res) > 0:
			return llmtest.Reply{Text: "The thermostat says " + res[0].Content}
		case slices.Contains(req.Tools, thermo):
			return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_t1", Name: thermo, Args: "{}"}}}
		}
		return llmtest.Reply{Text: "There is no thermostat."}
	})
	offered := func(i int) bool { return slices.Contains(fake.Requests()[i].Tools, thermo) }
	srv := startServe(t, llmEnv(t), "--demo", "--demo-rows", "600", "--policy", "demo", "--federation", "embedded", "--federation-broker-addr", "127.0.0.1:0")
	p := startChat(t, "--server", srv.url, "--model", "gpt-4o-mini", "--base-url", fake.BaseURL, "--history-file", "")
	p.waitFor(0, "Type a question.")

	// Positions on the screen are taken before a question is typed: a
	// notice at the prompt rewrites the prompt's line.
	at := p.send("What is the temperature?")
	p.waitFor(at, "There is no thermostat.")
	if offered(0) {
		t.Fatalf("the thermostat's tool was offered before it joined")
	}

	agent := startAgentProcess(t, llmEnv(t), "--broker", srv.broker, "--entity", "device/thermo", "--demo")
	p.waitFor(at, notice)
	at = p.send("What is the temperature?")
	p.waitFor(at, "(the server's tools changed: +"+thermo+";", "-> "+thermo+" {} (", `The thermostat says {"current":20.5`)
	if n := len(fake.Requests()); n != 3 || !offered(1) {
		t.Fatalf("after the thermostat joined: %d requests, offered %v", n, offered(1))
	}

	if err := agent.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	p.waitFor(at, notice)
	at = p.send("What is the temperature?")
	s := p.waitFor(at, "(the server's tools changed: -"+thermo+";", "There is no thermostat.")
	if n := len(fake.Requests()); n != 4 || offered(3) {
		t.Fatalf("after the thermostat left: %d requests, offered %v\n%s", n, offered(3), s)
	}
}
