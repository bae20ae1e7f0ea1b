package mcpserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/tools"
)

// structuredCalls is one successful call of every read tool an analyst
// has (call_method needs a declared method: see TestStructuredCustomTool).
var structuredCalls = []struct {
	tool string
	args map[string]any
}{
	{"list_tools", map[string]any{}},
	{"get_all_schemas", map[string]any{}},
	{"get_schema", map[string]any{"class_name": "Ticket"}},
	{"query_class", map[string]any{"class_name": "Ticket", "limit": 2}},
	{"count_objects", map[string]any{"class_name": "Ticket"}},
	{"get_object", map[string]any{"class_name": "Ticket", "object_id": "t000000001"}},
	{"get_objects", map[string]any{"class_name": "Ticket", "ids": []string{"t000000001", "t000000002"}}},
	{"get_sample_objects", map[string]any{"class_name": "Ticket", "limit": 1}},
	{"explain_query", map[string]any{"class_name": "Ticket", "where": map[string]any{"status": "open"}}},
	{"export_data", map[string]any{"class_name": "Ticket", "limit": 2, "format": "markdown"}},
	{"aggregate", map[string]any{"class_name": "Ticket", "pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$status", "n": map[string]any{"$sum": 1}}}}}},
	{"aggregate", map[string]any{"class_name": "Ticket", "dry_run": true, "pipeline": []any{map[string]any{"$match": map[string]any{"status": "open"}}}}},
	{"group_by", map[string]any{"class_name": "Ticket", "field": "status"}},
	{"group_by", map[string]any{"class_name": "Ticket", "field": "status", "dry_run": true}},
	{"group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "day"}},
	{"distinct", map[string]any{"class_name": "Ticket", "field": "status", "limit": 2}},
}

// Every tool has a title and an output schema; every result the budget
// lets through comes as structuredContent too, the same JSON as its text,
// and it validates against the tool's outputSchema as a client validates
// it (the official TypeScript SDK refuses a result that does not: see
// TestTypeScriptStructuredContent). Sessions older than 2025-06-18, which
// know neither, get neither: their catalog and results are unchanged.
func TestStructuredContent(t *testing.T) {
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	for _, v := range protocolVersions {
		t.Run(v, func(t *testing.T) {
			cs := connect(t, srv, v)
			legacy := v < "2025-06-18"
			lr, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			schemas := map[string]*jsonschema.Resolved{}
			for _, tl := range lr.Tools {
				if tl.Title == "" {
					t.Errorf("%s: no title", tl.Name)
				}
				if legacy {
					if tl.OutputSchema != nil {
						t.Errorf("%s: outputSchema sent at %s", tl.Name, v)
					}
					continue
				}
				schemas[tl.Name] = resolveSchema(t, tl.Name, tl.OutputSchema)
			}
			for _, c := range structuredCalls {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
				if err != nil || res.IsError {
					t.Fatalf("%s %v: %v %v", c.tool, c.args, err, res)
				}
				if legacy {
					if res.StructuredContent != nil {
						t.Errorf("%s: structuredContent sent at %s", c.tool, v)
					}
					continue
				}
				text := decodeText(t, res)
				if d := cmp.Diff(text, res.StructuredContent); d != "" {
					t.Fatalf("%s: structuredContent differs from the text (-text +structured):\n%s", c.tool, d)
				}
				if err := schemas[c.tool].Validate(res.StructuredContent); err != nil {
					t.Fatalf("%s: structuredContent does not match the outputSchema: %v", c.tool, err)
				}
			}
		})
	}
}

// A result cut to the response budget is still structured, and an error
// result (too_large, invalid_argument) is not: clients skip validation of
// errors.
func TestStructuredContentWithinBudget(t *testing.T) {
	cs := connect(t, analystServer(t, mcpserver.Options{MaxResponseBytes: 1800}), "")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query_class", Arguments: map[string]any{"class_name": "Ticket"}})
	if err != nil || res.IsError {
		t.Fatalf("%v %v", err, res)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["truncated"] != true || sc["next_call"] == nil {
		t.Fatalf("cut page: %v", sc)
	}
	if d := cmp.Diff(decodeText(t, res), res.StructuredContent); d != "" {
		t.Fatalf("structuredContent differs from the text:\n%s", d)
	}
	bad, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "query_class", Arguments: map[string]any{"class_name": "Ticket", "limit": 0}})
	if err != nil || !bad.IsError || bad.StructuredContent != nil {
		t.Fatalf("error result: %v %+v", err, bad)
	}
}

// An application's tool may declare its own output schema: its results
// are checked against it before they are sent (the SDK does not check
// results of tools added as ours are), and one that does not match is
// refused as an internal error rather than sent to a client that would
// reject it. A tool without one sends text only.
func TestStructuredCustomTool(t *testing.T) {
	reg := tools.NewRegistry()
	out := &jsonschema.Schema{Type: "object", Required: []string{"n"}, Properties: map[string]*jsonschema.Schema{"n": {Type: "integer"}}}
	result := map[string]any{"n": 1}
	for _, tl := range []*tools.Tool{
		{Name: "counted", Title: "Counted", Permission: agent.Readonly, ReadOnly: true, Output: out,
			Handler: func(context.Context, *tools.Call) (any, error) { return result, nil }},
		{Name: "plain", Permission: agent.Readonly, ReadOnly: true,
			Handler: func(context.Context, *tools.Call) (any, error) { return []int{1, 2}, nil }},
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	cs := connect(t, analystServer(t, mcpserver.Options{Tools: reg}), "")
	lr, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lr.Tools {
		switch tl.Name {
		case "counted":
			if got, _ := json.Marshal(tl.OutputSchema); !strings.Contains(string(got), `"required":["n"]`) {
				t.Fatalf("counted's outputSchema: %s", got)
			}
		case "plain":
			if tl.OutputSchema != nil {
				t.Fatalf("plain has an outputSchema: %v", tl.OutputSchema)
			}
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "counted"})
	if err != nil || res.IsError || res.StructuredContent.(map[string]any)["n"] != 1.0 {
		t.Fatalf("matching result: %v %+v", err, res)
	}
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "plain"})
	if err != nil || res.IsError || res.StructuredContent != nil || res.Content[0].(*mcp.TextContent).Text != "[1,2]" {
		t.Fatalf("tool without an output schema: %v %+v", err, res)
	}
	result = map[string]any{"n": "one"}
	e := fails(t, cs, "counted", nil, tools.CodeInternal)
	if !strings.Contains(e["error"].(string), "correlation id") {
		t.Fatalf("mismatching result: %v", e)
	}
}

// analystServer is a server over opts.Store (default: the fixture), with
// opts, whose agents are read-only with the master key.
func analystServer(t *testing.T, opts mcpserver.Options) *mcpserver.Server {
	t.Helper()
	if opts.Store == nil {
		opts.Store = fixtureStore(t)
	}
	opts.Agents = func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		return agent.New(agent.Readonly, master), nil
	}
	srv, err := mcpserver.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func resolveSchema(t *testing.T, tool string, v any) *jsonschema.Resolved {
	t.Helper()
	if v == nil {
		t.Fatalf("%s: no outputSchema", tool)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: outputSchema %s: %v", tool, b, err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: outputSchema %s: %v", tool, b, err)
	}
	return r
}

func decodeText(t *testing.T, res *mcp.CallToolResult) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// The official TypeScript SDK client, which validates structuredContent
// against the outputSchema it read from tools/list and refuses a result
// that lacks it, accepts every read tool's result over Streamable HTTP.
func TestTypeScriptStructuredContent(t *testing.T) {
	node, dir := tsClient(t)
	srv := newServer(t, fixtureStore(t), agent.Readonly, master)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, Agent: func(*http.Request) (*agent.Agent, error) { return agent.New(agent.Readonly, master), nil }})
	type toolCall struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	var calls []toolCall
	for _, c := range structuredCalls {
		calls = append(calls, toolCall{c.tool, c.args})
	}
	arg, _ := json.Marshal(calls)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "structured.mjs", url, string(arg))
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node client: %v\n%s", err, stderr.String())
	}
	var report struct {
		ProtocolVersion string
		Tools           []struct{ Name, Title, OutputType string }
		Calls           []struct {
			Tool                            string
			IsError, Structured, SameAsText bool
			Refused                         string
		}
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	t.Logf("TypeScript client at protocol %s", report.ProtocolVersion)
	for _, tl := range report.Tools {
		if tl.Title == "" || tl.OutputType != "object" {
			t.Errorf("%s as the TS client reads it: title %q, outputSchema type %q", tl.Name, tl.Title, tl.OutputType)
		}
	}
	if len(report.Calls) != len(structuredCalls) {
		t.Fatalf("%d calls reported, want %d", len(report.Calls), len(structuredCalls))
	}
	for _, c := range report.Calls {
		if c.Refused != "" || c.IsError || !c.Structured || !c.SameAsText {
			t.Errorf("%s: %+v", c.Tool, c)
		}
	}
}
