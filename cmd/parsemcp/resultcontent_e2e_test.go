package main

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/mcpserver"
)

// --result-content, from the flag or PARSEMCP_RESULT_CONTENT, reaches the
// server: text declares no output schema and sends no structuredContent;
// structured sends the note as text and the result as structuredContent.
// A bad value is refused at start, naming the accepted ones.
func TestResultContentFlag(t *testing.T) {
	db := fixtureDB(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		args []string
		env  []string
		want mcpserver.ResultContent
	}{
		{"default", nil, nil, mcpserver.ResultBoth},
		{"flag", []string{"--result-content", "text"}, nil, mcpserver.ResultText},
		{"env", nil, []string{"PARSEMCP_RESULT_CONTENT=structured"}, mcpserver.ResultStructured},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(binary, append([]string{"stdio", "--store", "sqlite:" + db}, c.args...)...)
			cmd.Env = append(cmd.Environ(), c.env...)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "result-content", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			lr, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, tl := range lr.Tools {
				if (tl.OutputSchema != nil) != (c.want != mcpserver.ResultText) {
					t.Fatalf("%s: outputSchema %v under %s", tl.Name, tl.OutputSchema != nil, c.want)
				}
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}})
			if err != nil || res.IsError {
				t.Fatalf("%v %+v", err, res)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			switch c.want {
			case mcpserver.ResultText:
				if res.StructuredContent != nil || !strings.Contains(text, `"count"`) {
					t.Fatalf("text: %q %v", text, res.StructuredContent)
				}
			case mcpserver.ResultStructured:
				if text != mcpserver.StructuredOnlyNote || res.StructuredContent.(map[string]any)["count"] == nil {
					t.Fatalf("structured: %q %v", text, res.StructuredContent)
				}
			default:
				if res.StructuredContent == nil || !strings.Contains(text, `"count"`) {
					t.Fatalf("both: %q %v", text, res.StructuredContent)
				}
			}
		})
	}
	for _, c := range []struct {
		args []string
		env  []string
	}{
		{[]string{"serve", "--demo", "--addr", "127.0.0.1:0", "--result-content", "json"}, nil},
		{[]string{"stdio", "--store", "sqlite:" + db}, []string{"PARSEMCP_RESULT_CONTENT=none"}},
	} {
		_, stderr, code := run(t, c.env, c.args...)
		if code == 0 || !strings.Contains(stderr, "want both, text or structured") {
			t.Errorf("%v %v: exit %d\n%s", c.args, c.env, code, stderr)
		}
	}
}
