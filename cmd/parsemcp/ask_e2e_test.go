package main

// End-to-end tests of `parsemcp ask`: the built binary against fake
// provider servers (llm/llmtest) and a real parsemcp server, in-process,
// over HTTP and over stdio.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/llm/llmtest"
)

// llmEnv isolates a run from the machine's LLM and parsemcp settings.
func llmEnv(t *testing.T) []string {
	cache := t.TempDir()
	return []string{"XDG_CACHE_HOME=" + cache, "HOME=" + cache, "PARSEMCP_POLICY=", "PARSEMCP_AGENT=", "PARSEMCP_STORE=",
		"PARSEMCP_LLM_PROVIDER=", "PARSEMCP_LLM_MODEL=", "PARSEMCP_LLM_BASE_URL=", "PARSEMCP_LLM_API_KEY=", "PARSEMCP_LLM_MAX_ITERATIONS=",
		"PARSEMCP_LLM_TIMEOUT=", "PARSEMCP_LLM_MAX_TOKENS=", "PARSEMCP_LLM_COMPACT_AT=", "PARSEMCP_LLM_PRICES=", "PARSEMCP_SERVER_KEY=",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_BASE_URL=", "PARSEMCP_CHAT_TRACE=", "PARSEMCP_SERVER=", "PARSEMCP_ADDR=",
		"LLM_PROVIDER=", "LLM_MODEL=", "LLM_BASE_URL=", "LLM_API_KEY=", "MCP_CHAT_TRACE=", "MCP_AGENT_PERMISSIONS=", "PARSEMCP_PERMISSION="}
}

type askJSON struct {
	Answer    string `json:"answer"`
	Stop      string `json:"stop"`
	Reason    string `json:"reason"`
	ToolCalls []struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		DurationMS float64         `json:"duration_ms"`
		ErrorCode  string          `json:"error_code"`
	} `json:"tool_calls"`
	Turns []struct {
		Input  int64 `json:"input_tokens"`
		Output int64 `json:"output_tokens"`
	} `json:"turns"`
	Usage struct {
		Input   int64   `json:"input_tokens"`
		Output  int64   `json:"output_tokens"`
		Total   int64   `json:"total_tokens"`
		CostUSD float64 `json:"cost_usd"`
	} `json:"usage"`
	Error string `json:"error"`
}

func decodeAsk(t *testing.T, stdout, stderr string) askJSON {
	t.Helper()
	var out askJSON
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("ask output is not JSON: %v\nstdout: %s\nstderr: %s", err, stdout, stderr)
	}
	return out
}

// `ask` with the store in-process and the demo policy: the model acts as
// the analyst and answers from the analyst's count; JSON carries the tool
// call, the turns and the priced usage; the API key reaches the provider
// and nowhere else.
func TestAskInProcess(t *testing.T) {
	env := llmEnv(t)
	fake := llmtest.NewOpenAI(t, llmtest.Counter("Ticket"))
	key := "sk-e2e-secret-key-0123456789"
	stdout, stderr, code := run(t, env, "ask", "--demo", "--demo-rows", "600", "--policy", "demo", "-v",
		"--model", "my-model", "--base-url", fake.BaseURL, "--api-key", key, "--price", "my-model=1000/2000", "-o", "json", "How many tickets are there?")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	out := decodeAsk(t, stdout, stderr)
	want := fmt.Sprintf("There are %d Ticket objects.", analystTicketCount(t))
	if out.Answer != want || out.Stop != "answered" {
		t.Fatalf("answer %q (%s), want %q", out.Answer, out.Stop, want)
	}
	if len(out.ToolCalls) != 1 || out.ToolCalls[0].Name != "count_objects" || out.ToolCalls[0].DurationMS <= 0 || out.ToolCalls[0].ErrorCode != "" {
		t.Errorf("tool calls %+v", out.ToolCalls)
	}
	if len(out.Turns) != 2 || out.Usage.Input != out.Turns[0].Input+out.Turns[1].Input || out.Usage.Total != out.Usage.Input+out.Usage.Output {
		t.Errorf("usage %+v turns %+v", out.Usage, out.Turns)
	}
	if wantCost := float64(out.Usage.Input*1000+out.Usage.Output*2000) / 1e6; out.Usage.CostUSD < wantCost*0.999 || out.Usage.CostUSD > wantCost*1.001 {
		t.Errorf("cost %v, want %v", out.Usage.CostUSD, wantCost)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 || reqs[0].Header.Get("Authorization") != "Bearer "+key || reqs[0].Model != "my-model" {
		t.Fatalf("requests %d, auth %q", len(reqs), reqs[0].Header.Get("Authorization"))
	}
	if strings.Contains(stdout+stderr, key) {
		t.Errorf("the API key was printed:\n%s\n%s", stdout, stderr)
	}
	if !strings.Contains(reqs[0].System, "get_all_schemas") {
		t.Errorf("system prompt %q", reqs[0].System)
	}

	// Text output: the answer on stdout, the usage on stderr.
	fake = llmtest.NewAnthropic(t, llmtest.Counter("Ticket"))
	stdout, stderr, code = run(t, env, "ask", "--demo", "--demo-rows", "600", "--policy", "demo",
		"--provider", "anthropic", "--model", "claude-haiku-4-5", "--base-url", fake.BaseURL, "--api-key", key, "--stream", "--trace", "How many tickets are there?")
	if code != 0 || stdout != "Let me count them.\n"+want+"\n" {
		t.Fatalf("exit %d, stdout %q\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, `-> count_objects {"class_name":"Ticket"}`) || !strings.Contains(stderr, "1 tool calls, 2 model turns:") || !strings.Contains(stderr, "tokens $") {
		t.Errorf("stderr %s", stderr)
	}
	// Nothing is wrong, so nothing is warned of (the demo policy's admin
	// acts with the master key: a notice for serve, not for ask).
	if strings.Contains(stderr, "level=WARN") {
		t.Errorf("ask warned though nothing is wrong:\n%s", stderr)
	}
	if !fake.Requests()[0].Stream {
		t.Error("--stream did not stream")
	}
}

// `ask --server` reaches a running parsemcp over HTTP; the bearer key
// picks the agent, so the admin and the analyst get different answers.
func TestAskServer(t *testing.T) {
	env := llmEnv(t)
	s := startServe(t, env, "--demo", "--demo-rows", "600", "--policy", "demo")
	for _, c := range []struct {
		key  string
		want int
	}{{"demo-admin", allTicketCount(t)}, {"demo-analyst", analystTicketCount(t)}} {
		fake := llmtest.NewOpenAI(t, llmtest.Counter("Ticket"))
		stdout, stderr, code := run(t, env, "ask", "--server", s.url, "--server-key", c.key, "--model", "m", "--base-url", fake.BaseURL, "-o", "json", "How many tickets?")
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s\n%s", c.key, code, stdout, stderr)
		}
		if out := decodeAsk(t, stdout, stderr); out.Answer != fmt.Sprintf("There are %d Ticket objects.", c.want) {
			t.Errorf("%s: %q, want %d", c.key, out.Answer, c.want)
		}
	}
	// A wrong key is refused by the server.
	fake := llmtest.NewOpenAI(t, llmtest.Counter("Ticket"))
	_, stderr, code := run(t, env, "ask", "--server", s.url, "--server-key", "wrong", "--model", "m", "--base-url", fake.BaseURL, "q")
	if code != 1 || !strings.Contains(stderr, "Unauthorized") || len(fake.Requests()) != 0 {
		t.Errorf("wrong key: exit %d, %s", code, stderr)
	}
	// Store flags make no sense with --server.
	_, stderr, code = run(t, env, "ask", "--server", s.url, "--demo", "--model", "m", "--base-url", fake.BaseURL, "q")
	if code != 1 || !strings.Contains(stderr, "--demo configure the server in this process") {
		t.Errorf("--server with --demo: exit %d, %s", code, stderr)
	}
}

// `ask --server-command` starts parsemcp over stdio.
func TestAskServerCommand(t *testing.T) {
	env := llmEnv(t)
	fake := llmtest.NewOpenAI(t, llmtest.Counter("Organization"))
	stdout, stderr, code := run(t, env, "ask", "--server-command", binary+" stdio --demo --demo-rows 600 --policy demo",
		"--model", "m", "--base-url", fake.BaseURL, "-o", "json", "How many organizations?")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	if out := decodeAsk(t, stdout, stderr); out.Answer != "There are 1 Organization objects." {
		t.Errorf("answer %q", out.Answer)
	}
}

// The --server-command child's log stays out of ask's output: stderr
// holds ask's own usage line only; --server-log FILE keeps the child's
// log; a child that fails to start is explained by its last log lines.
func TestAskServerCommandLog(t *testing.T) {
	env := llmEnv(t)
	fake := llmtest.NewOpenAI(t, llmtest.Counter("Organization"))
	server := binary + " stdio --demo --demo-rows 600 --policy demo"
	stdout, stderr, code := run(t, env, "ask", "--server-command", server, "--model", "m", "--base-url", fake.BaseURL, "How many organizations?")
	if code != 0 || stdout != "There are 1 Organization objects.\n" || !strings.HasPrefix(stderr, "1 tool calls, 2 model turns:") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	log := filepath.Join(t.TempDir(), "server.log")
	if _, stderr, code := run(t, env, "ask", "--server-command", server, "--server-log", log, "--model", "m", "--base-url", fake.BaseURL, "How many organizations?"); code != 0 || strings.Contains(stderr, "level=") {
		t.Errorf("--server-log: exit %d, stderr:\n%s", code, stderr)
	}
	if b, err := os.ReadFile(log); err != nil || !strings.Contains(string(b), `msg="store opened"`) {
		t.Errorf("--server-log file: %q %v", b, err)
	}
	missing := filepath.Join(t.TempDir(), "missing", "app.sqlite")
	_, stderr, code = run(t, env, "ask", "--server-command", binary+" stdio --store sqlite:"+missing, "--model", "m", "--base-url", fake.BaseURL, "q")
	if code != 1 || !strings.Contains(stderr, "the server's last log lines:") || !strings.Contains(stderr, missing) {
		t.Errorf("a server that fails: exit %d, stderr:\n%s", code, stderr)
	}
}

// A model that never stops calling tools ends at --max-iterations with
// exit status 3 and the reason; a provider error is exit 1 with a clear
// message; a missing model or key is refused before anything starts.
func TestAskStops(t *testing.T) {
	env := llmEnv(t)
	loop := func(req *llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Calls: []llmtest.Call{{ID: fmt.Sprintf("c%d", len(req.Messages)), Name: "count_objects", Args: `{"class_name":"Ticket"}`}}}
	}
	fake := llmtest.NewOpenAI(t, loop)
	stdout, stderr, code := run(t, env, "ask", "--demo", "--demo-rows", "600", "--model", "m", "--base-url", fake.BaseURL, "--max-iterations", "2", "-o", "json", "loop")
	out := decodeAsk(t, stdout, stderr)
	if code != 3 || out.Stop != "max_iterations" || !strings.Contains(out.Reason, "max_iterations 2") || len(fake.Requests()) != 2 {
		t.Errorf("exit %d, %+v", code, out)
	}
	t.Setenv("X", "")
	fake = llmtest.NewOpenAI(t, llmtest.Script(llmtest.Reply{Status: 429, ErrorType: "requests", ErrorMessage: "Rate limit reached", Header: map[string]string{"Retry-After": "30"}}))
	_, stderr, code = run(t, env, "ask", "--demo", "--demo-rows", "600", "--model", "m", "--base-url", fake.BaseURL, "--max-retries", "0", "q")
	if code != 1 || !strings.Contains(stderr, "429 Too Many Requests") || !strings.Contains(stderr, "retry after 30s") {
		t.Errorf("429: exit %d, %s", code, stderr)
	}
	_, stderr, code = run(t, env, "ask", "--demo", "q")
	if code != 1 || !strings.Contains(stderr, "no API key for openai") {
		t.Errorf("no key: exit %d, %s", code, stderr)
	}
}

// With neither a server nor a store named, ask uses the local `parsemcp
// serve` (PARSEMCP_ADDR); PARSEMCP_SERVER names another.
func TestAskDefaultServer(t *testing.T) {
	env := llmEnv(t)
	s := startServe(t, env, "--demo", "--demo-rows", "600", "--policy", "demo")
	addr := strings.TrimSuffix(strings.TrimPrefix(s.url, "http://"), "/mcp")
	fake := llmtest.NewOpenAI(t, llmtest.Counter("Organization"))
	for _, e := range [][]string{{"PARSEMCP_ADDR=" + addr}, {"PARSEMCP_SERVER=" + s.url, "PARSEMCP_ADDR=127.0.0.1:1"}} {
		stdout, stderr, code := run(t, append(env, e...), "ask", "--model", "m", "--base-url", fake.BaseURL, "How many organizations?")
		if code != 0 || stdout != "There are 1 Organization objects.\n" {
			t.Errorf("%v: exit %d, %q\n%s", e, code, stdout, stderr)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	_, stderr, code := run(t, append(env, "PARSEMCP_ADDR="+closed), "ask", "--model", "m", "--base-url", fake.BaseURL, "q")
	if code != 1 || !strings.Contains(stderr, "start one with `parsemcp serve --demo`") {
		t.Errorf("no server: exit %d, %s", code, stderr)
	}
}
