package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/internal/testing/mqtttest"
)

// everythingBin finds @modelcontextprotocol/server-everything, installed
// by .ci/run (or by hand) into the cache directory outside the tree.
func everythingBin(t *testing.T) string {
	if p := os.Getenv("PARSEMCP_EVERYTHING_BIN"); p != "" {
		return p
	}
	home, _ := os.UserHomeDir()
	p := filepath.Join(home, ".cache", "parsemcp", "everything", "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI requires @modelcontextprotocol/server-everything at %s (.ci/run installs it)", p)
		}
		t.Skipf("@modelcontextprotocol/server-everything not installed at %s: run `npm install --prefix ~/.cache/parsemcp/everything @modelcontextprotocol/server-everything` (or set PARSEMCP_EVERYTHING_BIN)", p)
	}
	return p
}

// startAgentProcess runs `parsemcp agent …` until the test ends and waits
// until it announced itself.
func startAgentProcess(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"agent"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	announced := make(chan struct{}, 1)
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "federation agent: announced") {
				select {
				case announced <- struct{}{}:
				default:
				}
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		pw.Close()
	})
	select {
	case <-announced:
	case <-time.After(90 * time.Second):
		t.Fatalf("agent %v never announced itself:\n%s", args, log.String())
	}
	return cmd
}

func tokenCreate(t *testing.T, file string, args ...string) string {
	t.Helper()
	out, errOut, code := run(t, nil, append([]string{"token", "create", "--tokens", file}, args...)...)
	if code != 0 {
		t.Fatalf("token create %v: %s", args, errOut)
	}
	bearer := strings.TrimSpace(out)
	if !federation.IsToken(bearer) {
		t.Fatalf("token create printed %q", out)
	}
	return bearer
}

// httpClient connects to url with bearer ("" sends no Authorization).
func httpClient(t *testing.T, url, bearer string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url}
	if bearer != "" {
		tr.HTTPClient = &http.Client{Transport: headerTransport{"Authorization", "Bearer " + bearer}}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// listTools waits until tools/list holds every name of want and returns
// the result.
func listTools(t *testing.T, cs *mcp.ClientSession, want ...string) *mcp.ListToolsResult {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		missing := ""
		for _, w := range want {
			found := false
			for _, tool := range res.Tools {
				found = found || tool.Name == w
			}
			if !found {
				missing = w
			}
		}
		if missing == "" {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/list never held %s", missing)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func toolNames(res *mcp.ListToolsResult) map[string]bool {
	out := map[string]bool{}
	for _, tool := range res.Tools {
		out[tool.Name] = true
	}
	return out
}

func toolText(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// The done-when of the federation: a real MCP client sees and calls a
// bridged stdio MCP server's tools through parsemcp, under token scopes,
// over a Mosquitto whose ACL confines every party to its own topics.
func TestFederationBridgesStdioServerUnderTokenScopes(t *testing.T) {
	everything := everythingBin(t)
	topics := federation.Topics{Prefix: federation.DefaultPrefix, Platform: "e2e"}
	everythingE := federation.Entity{Type: "mcp", ID: "everything", Team: "acme"}
	thermo := federation.Entity{Type: "device", ID: "thermo", Team: "globex"}
	m := mqtttest.StartMosquitto(t, mqtttest.Config{
		Users: map[string]string{"platform": "pw-p", "agent-everything": "pw-e", "agent-thermo": "pw-t"},
		ACL:   federation.MosquittoACL(topics, "platform", map[string]federation.Entity{"agent-everything": everythingE, "agent-thermo": thermo}),
	})
	tokens := filepath.Join(t.TempDir(), "tokens.json")
	readAcme := tokenCreate(t, tokens, "--name", "reader", "--scope", "read", "--team", "acme")
	writer := tokenCreate(t, tokens, "--name", "writer", "--scope", "write")
	revoked := tokenCreate(t, tokens, "--name", "gone")
	out, _, _ := run(t, nil, "token", "list", "--tokens", tokens)
	id := strings.Fields(strings.Split(out, "\n")[1])[0] // newest first: "gone"
	if _, errOut, code := run(t, nil, "token", "revoke", "--tokens", tokens, id); code != 0 {
		t.Fatal(errOut)
	}
	if out, _, _ := run(t, nil, "token", "list", "--tokens", tokens); !strings.Contains(out, "revoked") || strings.Contains(out, readAcme[len(readAcme)-20:]) {
		t.Fatalf("token list:\n%s", out)
	}

	srv := startServe(t, []string{"PARSEMCP_FEDERATION_PASSWORD=pw-p", "PARSEMCP_ALLOW_WRITE_TOOLS=true", "PARSEMCP_ALLOW_RAW_CRUD=true"}, "--store", "sqlite:"+fixtureDB(t), "--permission", "write",
		"--federation", m.URL(), "--federation-platform", "e2e", "--federation-username", "platform", "--tokens", tokens)
	startAgentProcess(t, []string{"PARSEMCP_AGENT_PASSWORD=pw-e"}, "--broker", m.URL(), "--platform", "e2e", "--entity", "mcp/everything", "--team", "acme",
		"--username", "agent-everything", "--", everything, "stdio")
	thermoCmd := startAgentProcess(t, []string{"PARSEMCP_AGENT_PASSWORD=pw-t"}, "--broker", m.URL(), "--platform", "e2e", "--entity", "device/thermo", "--team", "globex",
		"--username", "agent-thermo", "--demo")

	// No token, a malformed one, a revoked one: 401.
	for _, bad := range []string{"", "demo-analyst", revoked} {
		if _, err := httpClient(t, srv.url, bad); err == nil {
			t.Errorf("connected with token %q", bad)
		}
	}

	// Both agents have joined once the unscoped writer token lists a tool
	// of each (the acme token below must not see the thermostat's, so it
	// cannot wait for it itself).
	joined, err := httpClient(t, srv.url, writer)
	if err != nil {
		t.Fatal(err)
	}
	listTools(t, joined, "mcp-everything__echo", "device-thermo__read_temperature")

	// The read-only acme token: the bridged server's read-only tools, not
	// its writing ones, not the other team's agent.
	ro, err := httpClient(t, srv.url, readAcme)
	if err != nil {
		t.Fatal(err)
	}
	names := toolNames(listTools(t, ro, "mcp-everything__echo", "mcp-everything__get-sum", "query_class"))
	for _, absent := range []string{"mcp-everything__toggle-simulated-logging", "device-thermo__read_temperature", "create_object"} {
		if names[absent] {
			t.Errorf("the read-only acme token lists %s", absent)
		}
	}
	if got, isErr := toolText(t, ro, "mcp-everything__echo", map[string]any{"message": "hello federation"}); isErr || !strings.Contains(got, "hello federation") {
		t.Fatalf("echo = %q (error %v)", got, isErr)
	}
	if got, isErr := toolText(t, ro, "mcp-everything__get-sum", map[string]any{"a": 2, "b": 40}); isErr || !strings.Contains(got, "42") {
		t.Fatalf("get-sum = %q (error %v)", got, isErr)
	}
	if got, isErr := toolText(t, ro, "mcp-everything__toggle-simulated-logging", map[string]any{}); !isErr || !strings.Contains(got, "token_scope") {
		t.Fatalf("read-only token calling a writing tool: %q", got)
	}
	if got, isErr := toolText(t, ro, "device-thermo__read_temperature", map[string]any{}); !isErr || !strings.Contains(got, "token_team") {
		t.Fatalf("acme token calling a globex agent: %q", got)
	}
	if got, isErr := toolText(t, ro, "count_objects", map[string]any{"class_name": "Ticket"}); isErr || !strings.Contains(got, "count") {
		t.Fatalf("local tool: %q", got)
	}

	// The write token reaches every team and writing tools.
	rw, err := httpClient(t, srv.url, writer)
	if err != nil {
		t.Fatal(err)
	}
	listTools(t, rw, "device-thermo__set_target", "mcp-everything__toggle-simulated-logging", "create_object")
	if got, isErr := toolText(t, rw, "device-thermo__set_target", map[string]any{"celsius": 19.5}); isErr || !strings.Contains(got, "19.5") {
		t.Fatalf("set_target = %q", got)
	}

	// The thermostat dies: its will marks it offline, its tools leave the
	// list with a warning, and ours keep working.
	if err := thermoCmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		res, err := rw.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		fm, _ := res.Meta["federation"].(map[string]any)
		ws, _ := fm["warnings"].([]any)
		if len(ws) == 1 && strings.Contains(ws[0].(string), "device/thermo is offline") && !toolNames(res)["device-thermo__set_target"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no offline warning: %v\n%s", res.Meta, srv.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, isErr := toolText(t, rw, "mcp-everything__echo", map[string]any{"message": "still here"}); isErr || !strings.Contains(got, "still here") {
		t.Fatalf("echo after the thermostat died = %q", got)
	}
}
