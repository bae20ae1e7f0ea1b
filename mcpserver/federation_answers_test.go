package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/federation"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// rawProvider is an agent that serves its tool list and answers as they
// are, unchecked: what a hostile or careless agent written in any
// language can send. Without tools it lists one read-only tool, "answer";
// without a result every call answers "called".
type rawProvider struct {
	tools  []federation.Tool
	result json.RawMessage
}

func (p rawProvider) ListTools(context.Context) ([]federation.Tool, error) {
	if p.tools != nil {
		return p.tools, nil
	}
	return []federation.Tool{{Name: "answer", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &federation.Annotations{ReadOnlyHint: federation.Bool(true)}}}, nil
}

func (p rawProvider) CallTool(context.Context, federation.ToolCall) (json.RawMessage, error) {
	if p.result != nil {
		return p.result, nil
	}
	return json.Marshal(federation.TextResult("called"))
}

// TestFederationBadAnswersFailAtOnce: an answer over the platform's
// payload limit (from an agent allowed more, or refused by the agent
// itself) is too_large; an answer that is not a tool result is
// remote_error; neither waits for the time limit.
func TestFederationBadAnswersFailAtOnce(t *testing.T) {
	w := newFedWorld(t)
	big := json.RawMessage(`{"content":[{"type":"text","text":"` + strings.Repeat("x", 2<<20) + `"}]}`)
	roomy := w.conn
	roomy.MaxPayload = 4 << 20
	w.serveWith(t, roomy, federation.Entity{Type: "evil", ID: "roomy"}, rawProvider{result: big})
	w.serve(t, federation.Entity{Type: "evil", ID: "big"}, rawProvider{result: big})
	w.serve(t, federation.Entity{Type: "evil", ID: "odd"}, rawProvider{result: json.RawMessage(`{"text":"not a tool result"}`)})
	w.waitTools(t, 8)
	cs := connect(t, fedServer(t, w, mcpserver.Options{}, withToken(agent.Readonly, nil)), "")
	for _, name := range []string{"evil-roomy__answer", "evil-big__answer"} {
		out := fails(t, cs, name, map[string]any{}, "too_large")
		if msg, _ := out["error"].(string); !strings.Contains(msg, "limit") {
			t.Errorf("%s: message %q", name, msg)
		}
	}
	out := fails(t, cs, "evil-odd__answer", map[string]any{}, "remote_error")
	if msg, _ := out["error"].(string); !strings.Contains(msg, "not a valid answer") || !strings.Contains(msg, "evil/odd") {
		t.Errorf("message %q", msg)
	}
}
