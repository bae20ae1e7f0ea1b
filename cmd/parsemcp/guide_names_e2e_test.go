package main

// The reference guide's names at the command line: its environment
// variables as weaker aliases of ours, a .env file, and the behaviours
// whose difference was fixed (no cost without a rate, flags that did
// nothing refused).

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/llm/llmtest"
)

// guideEnv clears every variable these tests set, so the developer's own
// environment cannot decide them.
func guideEnv(more ...string) []string {
	env := []string{"PARSEMCP_ENV_FILE=", "PARSEMCP_CONFIG=", "PARSEMCP_STORE=", "PARSEMCP_POLICY=", "PARSEMCP_AGENT=",
		"MCP_API_KEY=", "PARSEMCP_API_KEY=", "MCP_AGENT_PERMISSIONS=", "PARSEMCP_PERMISSION=", "PARSEMCP_MAX_INFLIGHT=", "PARSEMCP_RATE_LIMIT=",
		"PARSEMCP_AUDIT=", "PARSEMCP_COST_PER_MTOK="}
	for _, g := range []string{"WRITE_TOOLS", "SCHEMA_OPS", "RAW_CRUD", "RAW_SCHEMA"} {
		env = append(env, "PARSEMCP_ALLOW_"+g+"=", "PARSE_AGENT_ALLOW_"+g+"=")
	}
	return append(env, more...)
}

// `parsemcp config` tells which variable gave each value: the guide's
// name when only it is set, ours when both are, the flag over both; a
// secret given by any of them is masked.
func TestConfigShowsGuideVariables(t *testing.T) {
	const secret = "guide-api-key-0123456789"
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want []string
	}{
		{"the guide's names alone", []string{"MCP_API_KEY=" + secret, "PARSE_AGENT_ALLOW_WRITE_TOOLS=yes", "PARSE_AGENT_ALLOW_RAW_CRUD=1", "MCP_AGENT_PERMISSIONS=write"}, nil,
			[]string{"api-key: '********' # env MCP_API_KEY", "allow-write-tools: true # env PARSE_AGENT_ALLOW_WRITE_TOOLS", "allow-raw-crud: true # env PARSE_AGENT_ALLOW_RAW_CRUD",
				"allow-schema-ops: false # default",
				// serve's tier is the operator's: the guide's variable is for one local client.
				"permission: readonly # default"}},
		{"ours win", []string{"MCP_API_KEY=" + secret, "PARSEMCP_API_KEY=ours-" + secret, "PARSE_AGENT_ALLOW_WRITE_TOOLS=true", "PARSEMCP_ALLOW_WRITE_TOOLS=false"}, nil,
			[]string{"api-key: '********' # env PARSEMCP_API_KEY", "allow-write-tools: false # env PARSEMCP_ALLOW_WRITE_TOOLS"}},
		{"the flag wins", []string{"MCP_API_KEY=" + secret, "PARSEMCP_API_KEY=ours-" + secret, "PARSEMCP_ALLOW_WRITE_TOOLS=false"}, []string{"--api-key", "flag-" + secret, "--allow-write-tools"},
			[]string{"api-key: '********' # flag", "allow-write-tools: true # flag"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := run(t, guideEnv(c.env...), append([]string{"config"}, c.args...)...)
			if code != 0 {
				t.Fatalf("config: exit %d\n%s", code, stderr)
			}
			for _, want := range c.want {
				if !strings.Contains(stdout, want+"\n") {
					t.Errorf("config output lacks %q:\n%s", want, stdout)
				}
			}
			if strings.Contains(stdout+stderr, secret) {
				t.Errorf("config printed the API key:\n%s", stdout)
			}
		})
	}
}

// The guide's gate and tier variables open a write for call; ours win
// over them (PARSEMCP_ALLOW_RAW_CRUD=0 closes what the guide's opens), and
// the flag over both.
func TestCallGuideGatesAndPermission(t *testing.T) {
	db := fixtureDB(t)
	create := []string{"call", "create_object", "--store", "sqlite:" + db, "--args", `{"class_name":"Ticket","object":{"title":"from the guide's names"}}`}
	guide := []string{"PARSE_AGENT_ALLOW_WRITE_TOOLS=true", "PARSE_AGENT_ALLOW_RAW_CRUD=true", "MCP_AGENT_PERMISSIONS=write"}
	stdout, stderr, code := run(t, guideEnv(guide...), create...)
	if code != 0 || !strings.Contains(stdout, `"objectId"`) {
		t.Fatalf("create_object with the guide's variables: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, code = run(t, guideEnv(append(guide, "PARSEMCP_ALLOW_RAW_CRUD=0")...), create...)
	if code != 1 || !strings.Contains(stdout, "PARSEMCP_ALLOW_RAW_CRUD=true") {
		t.Fatalf("our gate variable did not win over the guide's: exit %d\n%s", code, stdout)
	}
	stdout, _, code = run(t, guideEnv(append(guide, "PARSEMCP_PERMISSION=readonly")...), create...)
	if code != 1 || !strings.Contains(stdout, `"error_code"`) {
		t.Fatalf("PARSEMCP_PERMISSION=readonly did not win over MCP_AGENT_PERMISSIONS=write: exit %d\n%s", code, stdout)
	}
	stdout, _, code = run(t, guideEnv(append(guide, "PARSEMCP_PERMISSION=write")...), append(create, "--permission", "readonly")...)
	if code != 1 || !strings.Contains(stdout, `"error_code"`) {
		t.Fatalf("--permission readonly did not win over the variables: exit %d\n%s", code, stdout)
	}
}

// A .env file in the current directory is read; a variable of the
// environment wins over the file's; PARSEMCP_ENV_FILE names another file
// or turns it off.
func TestDotEnvFile(t *testing.T) {
	const secret = "dotenv-api-key-0123456789"
	db := fixtureDB(t)
	dir := t.TempDir()
	body := "# as the guide's .env.sample\nMCP_API_KEY=" + secret + "\nPARSEMCP_MAX_INFLIGHT=5\nPARSEMCP_RATE_LIMIT=9/s\nPARSEMCP_STORE=sqlite:" + db + "\n"
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runIn(t, dir, guideEnv(), "config")
	if code != 0 {
		t.Fatalf("config: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"api-key: '********' # .env MCP_API_KEY", "max-inflight: 5 # .env PARSEMCP_MAX_INFLIGHT", "rate-limit: 9/s # .env PARSEMCP_RATE_LIMIT"} {
		if !strings.Contains(stdout, want+"\n") {
			t.Errorf("config output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout+stderr, secret) {
		t.Errorf("config printed the API key from .env:\n%s", stdout)
	}
	// The environment wins; the variables the environment holds empty
	// (guideEnv) count as unset, so the file's still apply.
	stdout, _, _ = runIn(t, dir, guideEnv("PARSEMCP_MAX_INFLIGHT=6"), "config")
	if !strings.Contains(stdout, "max-inflight: 6 # env PARSEMCP_MAX_INFLIGHT\n") {
		t.Errorf("the environment did not win over .env:\n%s", stdout)
	}
	// What the file sets reaches the command: call opens its store.
	if stdout, stderr, code := runIn(t, dir, guideEnv(), "call", "count_objects", "--args", `{"class_name":"Ticket"}`); code != 0 || !strings.Contains(stdout, `"count"`) {
		t.Errorf("call with the store from .env: exit %d\n%s\n%s", code, stdout, stderr)
	}

	other := filepath.Join(t.TempDir(), "parsemcp.env")
	if err := os.WriteFile(other, []byte("PARSEMCP_MAX_INFLIGHT=7\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if stdout, _, _ := runIn(t, dir, guideEnv("PARSEMCP_ENV_FILE="+other), "config"); !strings.Contains(stdout, "max-inflight: 7 # "+other+" PARSEMCP_MAX_INFLIGHT\n") || strings.Contains(stdout, "MCP_API_KEY") {
		t.Errorf("PARSEMCP_ENV_FILE did not replace .env:\n%s", stdout)
	}
	if stdout, _, _ := runIn(t, dir, guideEnv("PARSEMCP_ENV_FILE=off"), "config"); !strings.Contains(stdout, "max-inflight: 8 # default\n") {
		t.Errorf("PARSEMCP_ENV_FILE=off still read .env:\n%s", stdout)
	}
	if _, stderr, code := runIn(t, dir, guideEnv("PARSEMCP_ENV_FILE="+other+".missing"), "config"); code != 1 || !strings.Contains(stderr, other+".missing") {
		t.Errorf("a missing PARSEMCP_ENV_FILE: exit %d\n%s", code, stderr)
	}
}

// The audit event carries est_cost_usd only when the operator set a rate;
// the token estimate is always there.
func TestAuditCostNeedsRate(t *testing.T) {
	db := fixtureDB(t)
	event := func(args ...string) map[string]any {
		t.Helper()
		_, stderr, code := run(t, guideEnv(), append([]string{"call", "count_objects", "--store", "sqlite:" + db, "--audit", "stderr", "--args", `{"class_name":"Ticket"}`}, args...)...)
		if code != 0 {
			t.Fatalf("call: exit %d\n%s", code, stderr)
		}
		for _, line := range strings.Split(stderr, "\n") {
			var e map[string]any
			if json.Unmarshal([]byte(line), &e) == nil && e["msg"] == "tool_call" {
				return e
			}
		}
		t.Fatalf("no tool_call event:\n%s", stderr)
		return nil
	}
	e := event()
	if _, has := e["est_cost_usd"]; has || e["est_input_tokens"].(float64) <= 0 {
		t.Errorf("without a rate: %v, want est_input_tokens and no est_cost_usd", e)
	}
	e = event("--cost-per-mtok", "3")
	if cost, ok := e["est_cost_usd"].(float64); !ok || cost != e["est_input_tokens"].(float64)*3/1e6 {
		t.Errorf("with --cost-per-mtok 3: %v", e)
	}
}

// Flags that did nothing are gone: --heartbeat on call (no progress token
// there) and --tokens on stdio (tokens are checked on HTTP requests).
func TestNoOpFlagsRefused(t *testing.T) {
	db := fixtureDB(t)
	for _, args := range [][]string{
		{"call", "count_objects", "--store", "sqlite:" + db, "--heartbeat", "1s"},
		{"stdio", "--store", "sqlite:" + db, "--tokens", "store"},
	} {
		_, stderr, code := run(t, guideEnv(), args...)
		if flag := args[len(args)-2]; code != 1 || !strings.Contains(stderr, "unknown flag: "+flag) {
			t.Errorf("%v: exit %d\n%s", args, code, stderr)
		}
	}
	// demo --help names every output it writes.
	if stdout, _, _ := run(t, nil, "demo", "--help"); !strings.Contains(stdout, "PostgreSQL database") || !strings.Contains(stdout, "Parse Server") {
		t.Errorf("demo --help:\n%s", stdout)
	}
}

// The guide's LLM_* names set ask's model; ours win over them, the flag
// over both. A model with no price shows no cost.
func TestAskGuideLLMVariables(t *testing.T) {
	fake := llmtest.NewOpenAI(t, llmtest.Counter("Ticket"))
	const key = "sk-guide-llm-key-0123456789"
	guide := append(llmEnv(t), "LLM_PROVIDER=openai", "LLM_MODEL=guide-model", "LLM_BASE_URL="+fake.BaseURL, "LLM_API_KEY="+key)
	ask := []string{"ask", "--demo", "--demo-rows", "600", "How many tickets are there?"}
	for i, c := range []struct {
		env   []string
		args  []string
		model string
	}{
		{nil, []string{"-o", "json"}, "guide-model"},
		{[]string{"PARSEMCP_LLM_MODEL=our-model"}, nil, "our-model"},
		{[]string{"PARSEMCP_LLM_MODEL=our-model"}, []string{"--model", "flag-model"}, "flag-model"},
	} {
		before := len(fake.Requests())
		stdout, stderr, code := run(t, append(guide, c.env...), append(ask, c.args...)...)
		if code != 0 {
			t.Fatalf("%d: exit %d\n%s\n%s", i, code, stdout, stderr)
		}
		reqs := fake.Requests()[before:]
		if len(reqs) == 0 {
			t.Fatalf("%d: no request reached the model", i)
		}
		if reqs[0].Model != c.model || reqs[0].Header.Get("Authorization") != "Bearer "+key {
			t.Errorf("%d: model %q, want %q with the guide's key", i, reqs[0].Model, c.model)
		}
		if strings.Contains(stdout, "cost_usd") || strings.Contains(stderr, "$") || strings.Contains(stdout+stderr, key) {
			t.Errorf("%d: an unpriced model shows a cost, or the key:\n%s\n%s", i, stdout, stderr)
		}
	}
}
