package main

// End-to-end tests of the built binary: stdio with the official Go SDK
// client, serve --demo over HTTP with the Go and TypeScript SDK clients,
// and the demo, call and version commands.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/internal/testing/npmcache"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	builtin "github.com/parsemcp/parsemcp/tools"
)

// binary is the server's build; llmBinaryPath, beside it, the llm build.
var binary, llmBinaryPath string

// readonlyTools is how many built-in tools a readonly agent sees with every
// operator gate closed (the default): the write tools stay hidden.
func readonlyTools() int {
	return len(builtin.NewRegistry().Allowed(agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), agent.Gates{}, ""))
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "parsemcp-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The server's binary, and beside it parsemcp-llm, which its ask,
	// chat and console run (llmcommands.go): the tests of those commands
	// go through the stand-ins.
	binary = filepath.Join(dir, "parsemcp")
	llmBinaryPath = filepath.Join(dir, llmBinary)
	builds := make(chan error, 2)
	for _, b := range [][]string{{"-o", binary}, {"-tags", "llm", "-o", llmBinaryPath}} {
		go func() {
			args := append([]string{"build"}, b...)
			if raceEnabled {
				args = append(args, "-race")
			}
			out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
			if err != nil {
				err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			builds <- err
		}()
	}
	for range 2 {
		if err := <-builds; err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	code := pgtest.Main(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// run runs the binary and returns stdout, stderr and the exit code.
func run(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runIn(t, "", env, args...)
}

// runIn is run in the directory dir ("": this one).
func runIn(t *testing.T, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runBinaryIn(t, binary, dir, env, args...)
}

// runBinary is run with another binary.
func runBinary(t *testing.T, bin string, env []string, args ...string) (string, string, int) {
	t.Helper()
	return runBinaryIn(t, bin, "", env, args...)
}

func runBinaryIn(t *testing.T, bin, dir string, env []string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

func fixtureDB(t *testing.T) string {
	path := filepath.Join(t.TempDir(), "fixture.sqlite")
	fixture.Store(t, path).Close()
	return path
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out, res.IsError
}

func TestStdio(t *testing.T) {
	db := fixtureDB(t)
	ctx := context.Background()
	for _, version := range []string{"2024-11-05", "2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			cmd := exec.Command(binary, "stdio", "--store", "sqlite:"+db, "--as-user", fixture.Bob)
			client := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated %s", got)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != readonlyTools() {
				t.Fatalf("tools/list: %v %v", tools, err)
			}
			calls := []struct {
				tool string
				args map[string]any
				key  string
				want any
			}{
				{"list_tools", map[string]any{"category": "schema"}, "categories", nil},
				{"get_all_schemas", map[string]any{"prefix": "Pro"}, "total", 1.0},
				{"get_schema", map[string]any{"class_name": "Ticket"}, "class_name", "Ticket"},
				{"query_class", map[string]any{"class_name": "Project"}, "result_count", 2.0}, // bob: public + his own
				{"count_objects", map[string]any{"class_name": "Ticket"}, "count", 4.0},
				{"get_object", map[string]any{"class_name": "Project", "object_id": "pBorealis2"}, "class_name", "Project"},
				{"get_objects", map[string]any{"class_name": "Project", "ids": []string{"pBorealis2", "pComet0003"}}, "found", 1.0},
				{"get_sample_objects", map[string]any{"class_name": "Ticket", "limit": 1}, "sample_count", 1.0},
			}
			for _, c := range calls {
				out, isErr := callTool(t, cs, c.tool, c.args)
				if isErr {
					t.Fatalf("%s: %v", c.tool, out)
				}
				if c.want != nil && out[c.key] != c.want {
					t.Errorf("%s: %s = %v, want %v", c.tool, c.key, out[c.key], c.want)
				}
			}
			out, isErr := callTool(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": "{oops"})
			if !isErr || out["error_code"] != "invalid_argument" {
				t.Fatalf("bad where over stdio: %v", out)
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://Ticket/count"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "explore_database"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCallCommand(t *testing.T) {
	db := fixtureDB(t)
	stdout, stderr, code := run(t, nil, "call", "count_objects", "--store", "sqlite:"+db, "--args", `{"class_name":"Ticket","where":{"status":"open"}}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out["count"] != 3.0 || out["class_name"] != "Ticket" {
		t.Fatalf("output %q (%v)", stdout, err)
	}
	// A tool error exits 1 as the reference guide's tool task does, its
	// result on stdout.
	stdout, _, code = run(t, nil, "call", "get_object", "--store", "sqlite:"+db, "--args", `{"class_name":"Ticket","object_id":"nope000000"}`)
	if code != 1 || !strings.Contains(stdout, `"error_code": "not_found"`) {
		t.Fatalf("tool error: exit %d, %s", code, stdout)
	}
	_, stderr, code = run(t, nil, "call", "no_such_tool", "--store", "sqlite:"+db)
	if code != 1 || !strings.Contains(stderr, "no_such_tool") {
		t.Fatalf("unknown tool: exit %d, %s", code, stderr)
	}
	_, stderr, code = run(t, nil, "call", "count_objects", "--store", "sqlite:"+db, "--args", `{not json`)
	if code != 1 || !strings.Contains(stderr, "not valid JSON") {
		t.Fatalf("bad --args: exit %d, %s", code, stderr)
	}
	_, stderr, code = run(t, nil, "call", "count_objects", "--args", `{}`)
	if code != 1 || !strings.Contains(stderr, "no store") {
		t.Fatalf("no store: exit %d, %s", code, stderr)
	}
	_, stderr, code = run(t, nil, "call", "count_objects", "--store", "mysql://x")
	if code != 1 || !strings.Contains(stderr, "unknown store") {
		t.Fatalf("bad store: exit %d, %s", code, stderr)
	}
	if stdout, _, code := run(t, nil, "call", "--help"); code != 0 || !strings.Contains(stdout, "Exit status: 0 the tool succeeded; 1 the tool answered with an error") {
		t.Fatalf("call --help does not tell the exit status: %s", stdout)
	}
}

func TestVersion(t *testing.T) {
	stdout, _, code := run(t, nil, "version")
	// The count tools/list shows (TestStdio checks readonlyTools against
	// a real tools/list), then the built-in total.
	want := fmt.Sprintf(`^parsemcp \S+ \(go1\.\d+.*MCP Go SDK v1\.\d+\.\d+, %d tools in tools/list for a read-only agent, %d built in\)\n$`, readonlyTools(), len(builtin.Builtin()))
	if code != 0 || !regexp.MustCompile(want).MatchString(stdout) {
		t.Fatalf("version: %d %q", code, stdout)
	}
}

func TestDemoCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo.sqlite")
	_, stderr, code := run(t, nil, "demo", "--rows", "1200", "--out", out)
	if code != 0 || !strings.Contains(stderr, "wrote ") {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	_, stderr, code = run(t, nil, "demo", "--rows", "100", "--out", out)
	if code != 1 || !strings.Contains(stderr, "already exists") {
		t.Fatalf("demo over an existing file: exit %d: %s", code, stderr)
	}
	stdout, _, code := run(t, nil, "call", "get_all_schemas", "--store", "sqlite:"+out)
	var schemas map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &schemas) != nil || len(schemas["custom"].([]any)) < 6 {
		t.Fatalf("demo schemas: %s", stdout)
	}
}

// server is a running `parsemcp serve`.
type server struct {
	url    string
	stderr *bytes.Buffer
	cmd    *exec.Cmd
	// broker is the embedded MQTT broker's URL (serve --federation
	// embedded), read from its log line before the listening line.
	broker string
}

// listeningRE finds the listening line in text and JSON logs;
// brokerRE the embedded broker's line.
var (
	listeningRE = regexp.MustCompile(`"?url"?[=:]"?(http://[^\s"]+/mcp)`)
	brokerRE    = regexp.MustCompile(`embedded MQTT broker listening.*"?url"?[=:]"?(mqtt://[^\s"]+)`)
)

func startServe(t *testing.T, env []string, args ...string) *server {
	t.Helper()
	if !slices.Contains(args, "--config") {
		args = append([]string{"--addr", "127.0.0.1:0"}, args...)
	}
	cmd := exec.Command(binary, append([]string{"serve"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{stderr: &bytes.Buffer{}, cmd: cmd}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			line := sc.Text()
			s.stderr.WriteString(line + "\n")
			if m := brokerRE.FindStringSubmatch(line); m != nil {
				s.broker = m[1]
			}
			if m := listeningRE.FindStringSubmatch(line); m != nil {
				found <- m[1]
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
		pw.Close()
	})
	select {
	case s.url = <-found:
	case <-time.After(90 * time.Second):
		t.Fatalf("server did not start:\n%s", s.stderr.String())
	}
	return s
}

func TestServeDemo(t *testing.T) {
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "HOME=" + cache}
	s := startServe(t, env, "--demo", "--demo-rows", "1500")
	if !strings.Contains(s.stderr.String(), "creating demo dataset") {
		t.Fatalf("first start should create the demo data:\n%s", s.stderr)
	}
	base := strings.TrimSuffix(s.url, "/mcp")
	resp, err := http.Get(base + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	}
	resp.Body.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	out, isErr := callTool(t, cs, "get_all_schemas", map[string]any{})
	if isErr || len(out["custom"].([]any)) < 6 {
		t.Fatalf("demo schemas: %v", out)
	}
	// Every tool works on the demo data, for every class.
	for _, c := range out["custom"].([]any) {
		class := c.(map[string]any)["name"].(string)
		count, _ := callTool(t, cs, "count_objects", map[string]any{"class_name": class})
		if count["count"].(float64) <= 0 {
			t.Errorf("%s is empty", class)
		}
		q, isErr := callTool(t, cs, "query_class", map[string]any{"class_name": class, "limit": 3, "order": "-createdAt"})
		if isErr || len(q["results"].([]any)) == 0 {
			t.Fatalf("query %s: %v", class, q)
		}
		id := q["results"].([]any)[0].(map[string]any)["objectId"]
		if o, isErr := callTool(t, cs, "get_object", map[string]any{"class_name": class, "object_id": id}); isErr {
			t.Fatalf("get_object %s: %v", class, o)
		}
		if o, isErr := callTool(t, cs, "get_objects", map[string]any{"class_name": class, "ids": []any{id}}); isErr || o["found"] != 1.0 {
			t.Fatalf("get_objects %s: %v", class, o)
		}
		if o, isErr := callTool(t, cs, "get_schema", map[string]any{"class_name": class}); isErr {
			t.Fatalf("get_schema %s: %v", class, o)
		}
		if o, isErr := callTool(t, cs, "get_sample_objects", map[string]any{"class_name": class}); isErr {
			t.Fatalf("samples %s: %v", class, o)
		}
	}

	t.Run("typescript client", func(t *testing.T) { typescriptInterop(t, s.url) })
	t.Run("typescript agent session within the budget", func(t *testing.T) { typescriptAgentSession(t, s.url) })
}

// typescriptAgentSession runs interop/ts/agent_session.mjs: schema, query
// paged through next_call, aggregate, export, each result within the
// default response budget, the pages continuing exactly.
func typescriptAgentSession(t *testing.T, url string) {
	stdout := runNode(t, url, "agent_session.mjs")
	var report struct {
		CatalogBytes, Tools, Described, DocBytes, Pages int
		DocMime                                         string
		IDs                                             []string
		OpenCount                                       int
		ExportRows                                      []int
		Calls                                           []struct {
			Tool        string
			Bytes       int
			IsError     bool
			Truncated   bool
			RowsLeftOut int `json:"rows_left_out"`
			Structured  bool
		}
	}
	if err := json.Unmarshal(stdout, &report); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout)
	}
	for _, c := range report.Calls {
		t.Logf("%s: %d bytes, truncated %v, %d rows left out", c.Tool, c.Bytes, c.Truncated, c.RowsLeftOut)
		if c.Bytes > mcpserver.DefaultMaxResponseBytes || c.IsError {
			t.Errorf("%s: %d bytes (budget %d), error %v", c.Tool, c.Bytes, mcpserver.DefaultMaxResponseBytes, c.IsError)
		}
		if !c.Structured {
			t.Errorf("%s: no structuredContent, or not the text's JSON", c.Tool)
		}
	}
	if report.Described != report.Tools {
		t.Errorf("%d of %d tools have a title and an object outputSchema", report.Described, report.Tools)
	}
	t.Logf("tools/list: %d tools, %d bytes; query-language doc %d bytes; %d query pages", report.Tools, report.CatalogBytes, report.DocBytes, report.Pages)
	if report.CatalogBytes > mcpserver.MaxAnalystCatalogBytes || report.DocBytes == 0 || report.DocMime != "text/markdown" {
		t.Errorf("catalog %d bytes, doc %d bytes %q", report.CatalogBytes, report.DocBytes, report.DocMime)
	}
	// Following next_call reads every open ticket once, in order.
	seen := map[string]bool{}
	for _, id := range report.IDs {
		if seen[id] {
			t.Fatalf("ticket %s came twice", id)
		}
		seen[id] = true
	}
	if len(report.IDs) != report.OpenCount || report.Pages < 1 {
		t.Fatalf("paged through %d of %d open tickets in %d pages", len(report.IDs), report.OpenCount, report.Pages)
	}
	if len(report.ExportRows) != 2 || report.ExportRows[0] == 0 || report.ExportRows[1] == 0 {
		t.Fatalf("export pages: %v", report.ExportRows)
	}
}

func TestServeDemoReusesCache(t *testing.T) {
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "HOME=" + cache}
	first := startServe(t, env, "--demo", "--demo-rows", "800")
	first.cmd.Process.Signal(os.Interrupt)
	first.cmd.Wait()
	second := startServe(t, env, "--demo", "--demo-rows", "800")
	if !strings.Contains(second.stderr.String(), "reusing cached demo dataset") {
		t.Fatalf("second start should reuse the cache:\n%s", second.stderr)
	}
	matches, _ := filepath.Glob(filepath.Join(cache, "parsemcp", "*.sqlite"))
	if len(matches) != 1 {
		t.Fatalf("cache holds %v", matches)
	}
}

// typescriptInterop runs the official TypeScript SDK client (interop/ts,
// installed outside the tree by internal/testing/npmcache) against url. It runs in
// CI; elsewhere it skips without node or the npm registry.
func typescriptInterop(t *testing.T, url string) {
	stdout := runNode(t, url, "client.mjs")
	typescriptReport(t, stdout)
}

// runNode runs a script of interop/ts (its packages installed outside the
// tree by internal/testing/npmcache) against url and returns its stdout.
func runNode(t *testing.T, url, script string) []byte {
	t.Helper()
	node, dir := npmcache.Node(t), npmcache.Dir(t, "../../interop/ts")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, url)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	return stdout
}

func typescriptReport(t *testing.T, stdout []byte) {
	var report struct {
		ServerName string
		Tools      []struct{ Name, Category string }
		Query      struct {
			IsError    bool
			Structured map[string]any
		}
		Bad struct {
			IsError bool
			Text    string
		}
	}
	if err := json.Unmarshal(stdout, &report); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout)
	}
	if report.ServerName != "parsemcp" {
		t.Errorf("server name %q", report.ServerName)
	}
	var names []string
	for _, tool := range report.Tools {
		names = append(names, tool.Name)
		if tool.Category == "" {
			t.Errorf("%s has no _meta.category", tool.Name)
		}
	}
	if !slices.Contains(names, "query_class") || len(names) != readonlyTools() {
		t.Fatalf("tools seen by the TS client: %v", names)
	}
	if report.Query.IsError || report.Query.Structured["class_name"] != "Ticket" || len(report.Query.Structured["results"].([]any)) != 2 {
		t.Fatalf("query_class via TS: %+v", report.Query)
	}
	for _, r := range report.Query.Structured["results"].([]any) {
		if r.(map[string]any)["status"] != "open" {
			t.Fatalf("where not applied: %v", r)
		}
	}
	if !report.Bad.IsError || !strings.Contains(report.Bad.Text, `"error_code":"access_denied"`) {
		t.Fatalf("bad class via TS: %+v", report.Bad)
	}
}

// The demo dataset written to PostgreSQL (Parse Server's layout) is served
// by call and serve like the SQLite one.
func TestPostgresStore(t *testing.T) {
	url := pgtest.Schema(t, "e2e_demo")
	_, stderr, code := run(t, nil, "demo", "--rows", "1500", "--out", url, "-q")
	if code != 0 {
		t.Fatalf("demo --out postgres: exit %d: %s", code, stderr)
	}
	_, stderr, code = run(t, nil, "demo", "--rows", "100", "--out", url, "-q")
	if code != 1 || !strings.Contains(stderr, "already holds the demo classes") {
		t.Fatalf("second demo into the same database: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := run(t, nil, "call", "count_objects", "--store", url, "--args", `{"class_name":"Ticket","where":{"status":"open"}}`)
	var out map[string]any
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || out["count"].(float64) <= 0 {
		t.Fatalf("count on postgres: exit %d %s %s", code, stdout, stderr)
	}
	s := startServe(t, nil, "--store", url)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e-pg", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	q, isErr := callTool(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open"}, "order": "-createdAt", "limit": 3, "include": []string{"project"}})
	if isErr || len(q["results"].([]any)) != 3 {
		t.Fatalf("query on postgres: %v", q)
	}
	for _, r := range q["results"].([]any) {
		if r.(map[string]any)["project"].(map[string]any)["__type"] != "Object" {
			t.Fatalf("include on postgres: %v", r)
		}
	}
}

// headerTransport adds a header to every request of an MCP client.
type headerTransport struct{ key, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.key, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// A request carrying a Parse session token acts as that token's user; a bad
// token is refused, whatever the server's default identity.
func TestSessionTokenHeader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "fixture.sqlite")
	st := fixture.Store(t, path)
	if err := st.Create(context.Background(), "_Session", []map[string]any{
		{"sessionToken": "r:bobsession", "user": map[string]any{"__type": "Pointer", "className": "_User", "objectId": fixture.Bob},
			"expiresAt": map[string]any{"__type": "Date", "iso": "2999-01-01T00:00:00.000Z"}},
	}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	s := startServe(t, nil, "--store", "sqlite:"+path) // default identity: master
	connectWith := func(token string) *mcp.ClientSession {
		t.Helper()
		tr := &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: headerTransport{"X-Parse-Session-Token", token}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "session", Version: "1"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	out, isErr := callTool(t, connectWith("r:bobsession"), "count_objects", map[string]any{"class_name": "Project"})
	if isErr || out["count"] != 2.0 {
		t.Fatalf("bob's session sees his projects only: %v", out)
	}
	tr := &mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: &http.Client{Transport: headerTransport{"X-Parse-Session-Token", "r:forged"}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "session", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		cs.Close()
		t.Fatal("a forged token must be refused")
	}
	if !strings.Contains(err.Error(), "Unauthorized") {
		t.Fatalf("a forged token must be refused with 401: %v", err)
	}
}

func TestServeRefusesPublicBindWithoutKey(t *testing.T) {
	db := fixtureDB(t)
	_, stderr, code := run(t, []string{"PARSEMCP_API_KEY="}, "serve", "--store", "sqlite:"+db, "--addr", "0.0.0.0:0")
	if code != 1 || !strings.Contains(stderr, "refusing to listen on a non-loopback address without an API key") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s := startServe(t, []string{"PARSEMCP_API_KEY=k3y"}, "--store", "sqlite:"+db)
	resp, err := http.Get(strings.TrimSuffix(s.url, "/mcp") + "/tools")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/tools without the key: %d", resp.StatusCode)
	}
}

// serve refuses a per-principal in-flight cap that is not below the
// database pool: one agent's slow queries could hold every connection.
func TestServeRefusesInFlightCapAtPoolSize(t *testing.T) {
	db := fixtureDB(t)
	_, stderr, code := run(t, nil, "serve", "--store", "sqlite:"+db, "--addr", "127.0.0.1:0", "--db-max-conns", "4", "--max-inflight", "4")
	if code != 1 || !strings.Contains(stderr, "--max-inflight: one principal may have 4 requests in flight, and the database pool holds 4 connections") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// serve refuses a per-principal cap on listening streams that is not below
// the server's: one principal could take every stream.
func TestServeRefusesListenerShareAtServerCap(t *testing.T) {
	db := fixtureDB(t)
	_, stderr, code := run(t, nil, "serve", "--store", "sqlite:"+db, "--addr", "127.0.0.1:0", "--max-listeners", "10", "--max-listeners-per-principal", "10")
	if code != 1 || !strings.Contains(stderr, "--max-listeners-per-principal: one principal may hold 10 listening streams, and the server holds 10") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
}

// --audit store writes one _AgentAudit object per call, readable with the
// master key only.
func TestAuditToStore(t *testing.T) {
	db := fixtureDB(t)
	for range 2 {
		if _, stderr, code := run(t, nil, "call", "count_objects", "--store", "sqlite:"+db, "--audit", "store", "--args", `{"class_name":"Ticket","where":{"title":"NEEDLE-VALUE"}}`); code != 0 {
			t.Fatalf("call with --audit store: %s", stderr)
		}
	}
	stdout, stderr, code := run(t, nil, "call", "query_class", "--store", "sqlite:"+db, "--args", `{"class_name":"_AgentAudit","order":"createdAt"}`)
	if code != 0 {
		t.Fatalf("read _AgentAudit: %s", stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out["result_count"] != 2.0 {
		t.Fatalf("audit rows: %s", stdout)
	}
	row := out["results"].([]any)[0].(map[string]any)
	if row["tool"] != "count_objects" || row["success"] != true || strings.Contains(stdout, "NEEDLE-VALUE") {
		t.Fatalf("audit row: %v", row)
	}
	if _, _, code := run(t, nil, "call", "count_objects", "--store", "sqlite:"+db, "--anonymous", "--args", `{"class_name":"_AgentAudit"}`); code != 1 { // a tool error: exit 1
		t.Fatalf("_AgentAudit must be hidden from agents without the master key (exit %d)", code)
	}
}
