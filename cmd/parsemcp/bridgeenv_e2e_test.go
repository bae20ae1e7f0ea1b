package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A bridged stdio MCP server starts with a clean environment: what
// server-everything's get-env tool reports, called by a client through
// the platform, holds the minimal base and what the operator passed with
// --env and --env-file, and none of the agent's credentials nor anything
// else of the agent's environment.
func TestAgentBridgedCommandEnvironment(t *testing.T) {
	everything := everythingBin(t)
	env := llmEnv(t)
	srv := startServe(t, env, "--demo", "--demo-rows", "600", "--federation", "embedded", "--federation-broker-addr", "127.0.0.1:0")
	if srv.broker == "" {
		t.Fatalf("no embedded broker URL in the log:\n%s", srv.stderr.String())
	}
	envFile := filepath.Join(t.TempDir(), "bridge.env")
	if err := os.WriteFile(envFile, []byte("# for the bridged server\nFROM_FILE=\"hello file\"\nexport OVERRIDDEN=from-file\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agentEnv := append(env, "PARSEMCP_AGENT_PASSWORD=broker-secret-pw", "PARSEMCP_AGENT_USERNAME=agent-everything",
		"UNPASSED_SECRET=do-not-leak", "PASSED_BY_NAME=copied", "LANG=C.UTF-8")
	startAgentProcess(t, agentEnv, "--broker", srv.broker, "--entity", "mcp/everything",
		"--env", "PASSED_BY_NAME", "--env", "OVERRIDDEN=from-flag", "--env", "WITH_VALUE=a=b c", "--env-file", envFile,
		"--", everything, "stdio")

	cs, err := httpClient(t, srv.url, "")
	if err != nil {
		t.Fatal(err)
	}
	listTools(t, cs, "mcp-everything__get-env")
	text, isErr := toolText(t, cs, "mcp-everything__get-env", map[string]any{})
	if isErr {
		t.Fatalf("get-env failed: %s", text)
	}
	var got map[string]string
	if err := json.Unmarshal([]byte(text), &got); err != nil {
		t.Fatalf("get-env answered %q: %v", text, err)
	}
	for name, want := range map[string]string{"PASSED_BY_NAME": "copied", "OVERRIDDEN": "from-flag", "WITH_VALUE": "a=b c",
		"FROM_FILE": "hello file", "PATH": os.Getenv("PATH"), "LANG": "C.UTF-8"} {
		if got[name] != want {
			t.Errorf("the bridged server's %s = %q, want %q", name, got[name], want)
		}
	}
	for name, v := range got {
		if strings.HasPrefix(name, "PARSEMCP_") || name == "UNPASSED_SECRET" || strings.Contains(v, "broker-secret-pw") {
			t.Errorf("the bridged server sees %s=%q", name, v)
		}
	}
}

// What --env and --env-file cannot pass is refused before anything
// starts, with the flag or the file's line.
func TestAgentEnvFlagsRefused(t *testing.T) {
	env := append(llmEnv(t), "PARSEMCP_AGENT_PASSWORD=broker-secret-pw")
	bad := filepath.Join(t.TempDir(), "bad.env")
	if err := os.WriteFile(bad, []byte("# ok\nGOOD=1\nnot a line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--env", "PARSEMCP_AGENT_PASSWORD"}, "the agent's broker password is never handed to the bridged command"},
		{[]string{"--env", "PARSEMCP_AGENT_PASSWORD=x"}, "the agent's broker password is never handed to the bridged command"},
		{[]string{"--env", "SURELY_UNSET_VARIABLE_42"}, "SURELY_UNSET_VARIABLE_42 is not set in this environment"},
		{[]string{"--env", "1BAD=x"}, `"1BAD" is not an environment variable name`},
		{[]string{"--env-file", bad}, bad + ":3: want NAME=VALUE"},
	} {
		args := append([]string{"agent", "--broker", "mqtt://127.0.0.1:1", "--entity", "mcp/x"}, c.args...)
		_, stderr, code := run(t, env, append(args, "--", "true")...)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
}
