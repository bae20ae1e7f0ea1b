package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// inspectorVersion is the MCP Inspector .ci/run installs.
const inspectorVersion = "0.21.1"

// inspector returns MCP Inspector's command, installed outside the tree in
// $HOME/.cache/parsemcp/inspector. Without it the test skips, except in CI
// (where it installs it).
func inspector(t *testing.T) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".cache", "parsemcp", "inspector")
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if os.Getenv("CI") != "true" {
		t.Skipf("MCP Inspector is not installed (npm install --prefix %s @modelcontextprotocol/inspector@%s)", dir, inspectorVersion)
	}
	npm := exec.Command("npm", "install", "--prefix", dir, "--no-audit", "--no-fund", "--loglevel=error", "@modelcontextprotocol/inspector@"+inspectorVersion)
	if out, err := npm.CombinedOutput(); err != nil {
		t.Fatalf("installing MCP Inspector: %v\n%s", err, out)
	}
	return bin
}

// inspectorCalls set every argument of every read-only tool, as a person
// types them into MCP Inspector's CLI (--tool-arg key=value).
var inspectorCalls = []struct {
	tool string
	args []string
}{
	{"list_tools", []string{"category=query"}},
	{"get_all_schemas", []string{`names=["Ticket"]`, "prefix=T"}},
	{"get_schema", []string{"class_name=Ticket"}},
	{"query_class", []string{"class_name=Ticket", `where={"status":"open"}`, "limit=2", "skip=1", "order=-createdAt", `keys=["title","project.name"]`, `include=["project"]`, "apply_canonical_filter=true"}},
	{"query_class", []string{"class_name=Ticket", `keys=["title","status"]`, "format=markdown"}},
	{"count_objects", []string{"class_name=Ticket", `where={"priority":{"$gte":2}}`, "apply_canonical_filter=false"}},
	{"get_object", []string{"class_name=Ticket", "object_id=t000000001", `include=["project"]`}},
	{"get_objects", []string{"class_name=Ticket", `ids=["t000000001","t000000002"]`, `include=["project"]`}},
	{"get_sample_objects", []string{"class_name=Ticket", "limit=2"}},
	{"explain_query", []string{"class_name=Ticket", `where={"objectId":"t000000001"}`, "order=createdAt", "limit=5"}},
	{"text_search", []string{"class_name=Ticket", "field=title", "term=leak | survey", "language=english", `where={"status":"open"}`, `keys=["title"]`, "limit=5", "skip=0"}},
	{"autocomplete", []string{"class_name=Ticket", "field=status", "prefix=op", `where={"priority":{"$gte":1}}`, "limit=3"}},
	{"faceted_search", []string{"class_name=Ticket", "field=title", "term=leak | survey", "language=simple", `facets=["status","priority"]`, `where={"status":"open"}`, "limit=2", "facet_limit=5"}},
	{"aggregate", []string{"class_name=Ticket", `pipeline=[{"$group":{"_id":"$status","n":{"$sum":1}}}]`, "dry_run=false", "apply_canonical_filter=true", "compact_pointers=false"}},
	{"group_by", []string{"class_name=Ticket", "field=status", "operation=max", "value_field=priority", `where={"priority":{"$gte":1}}`, "sort=key_asc", "limit=2", "skip=0", "dry_run=false", "flatten_arrays=true"}},
	{"group_by_date", []string{"class_name=Ticket", "field=createdAt", "interval=day", "timezone=+05:30", "operation=sum", "value_field=priority", `where={"status":"open"}`, "sort=value_desc", "limit=3", "skip=1", "dry_run=false"}},
	{"distinct", []string{"class_name=Ticket", "field=status", `where={"priority":{"$gte":1}}`, "sort=desc", "limit=2", "skip=1", "dry_run=false"}},
	{"export_data", []string{"class_name=Ticket", `where={"status":"open"}`, "order=title", `columns=["title",{"field":"project.name","as":"Project"}]`, `include=["project"]`, "format=markdown", "limit=2", "skip=0"}},
	{"export_data", []string{"class_name=Ticket", `keys=["title","status"]`, "format=table"}},
	{"export_data", []string{"class_name=Ticket", `pipeline=[{"$group":{"_id":"$status","n":{"$sum":1}}}]`, "format=csv"}},
	// No methods are declared on the fixture: the call is refused by name,
	// after every argument arrived with its type.
	{"call_method", []string{"class_name=Ticket", "method_name=close", "object_id=t000000001", `arguments={"reason":"done"}`, "dry_run=true"}},
}

// Every argument of every tool can be set from MCP Inspector's CLI, over
// stdio and over HTTP: each arrives with its declared type.
func TestInspectorCLI(t *testing.T) {
	bin := inspector(t)
	db := fixtureDB(t)
	s := startServe(t, nil, "--store", "sqlite:"+db)

	// Every argument of every tool tools/list shows is set at least once.
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "inspector-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	cs.Close()
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, c := range inspectorCalls {
		for _, a := range c.args {
			name, _, _ := strings.Cut(a, "=")
			set[c.tool+"."+name] = true
		}
	}
	for _, tool := range list.Tools {
		b, _ := json.Marshal(tool.InputSchema)
		var schema struct{ Properties map[string]any }
		_ = json.Unmarshal(b, &schema)
		for name := range schema.Properties {
			if !set[tool.Name+"."+name] {
				t.Errorf("no Inspector call sets %s.%s", tool.Name, name)
			}
		}
	}

	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			for _, c := range inspectorCalls {
				args := []string{"--cli"}
				if transport == "http" {
					args = append(args, s.url, "--transport", "http")
				} else {
					args = append(args, binary, "stdio", "--store", "sqlite:"+db)
				}
				args = append(args, "--method", "tools/call", "--tool-name", c.tool)
				for _, a := range c.args {
					args = append(args, "--tool-arg", a)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
				cancel()
				if err != nil {
					t.Fatalf("%s: %v\n%s", c.tool, err, out)
				}
				var res struct {
					IsError bool
					Content []struct{ Text string }
				}
				if err := json.Unmarshal(out, &res); err != nil || len(res.Content) == 0 {
					t.Fatalf("%s: %v\n%s", c.tool, err, out)
				}
				text := res.Content[0].Text
				if c.tool == "call_method" {
					if !res.IsError || strings.Contains(text, "must be") || !strings.Contains(text, "close") {
						t.Errorf("call_method: %s", text)
					}
					continue
				}
				if res.IsError {
					t.Errorf("%s %v: %s", c.tool, c.args, text)
				}
			}
		})
	}
}
