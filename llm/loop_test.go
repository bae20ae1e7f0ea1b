package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/llm"
	"github.com/parsemcp/parsemcp/llm/llmtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/policy"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

var (
	demoOnce  sync.Once
	demoStore store.Store
	demoErr   error
	demoDir   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if demoStore != nil {
		demoStore.Close()
	}
	if demoDir != "" {
		os.RemoveAll(demoDir)
	}
	os.Exit(code)
}

// demoServer is a real parsemcp server on a small demo dataset with the
// demo policy: a request without a bearer key acts as the analyst, one
// with a demo key as that key's agent.
func demoServer(t testing.TB) *mcpserver.Server {
	t.Helper()
	srv, err := newDemoServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

func newDemoServer() (*mcpserver.Server, error) {
	ctx := context.Background()
	demoOnce.Do(func() {
		if demoDir, demoErr = os.MkdirTemp("", "llm-demo"); demoErr != nil {
			return
		}
		if demoStore, demoErr = sqlite.Create(ctx, filepath.Join(demoDir, "demo.sqlite")); demoErr != nil {
			return
		}
		_, demoErr = demo.Generate(ctx, demoStore, demo.Options{Rows: 600})
	})
	if demoErr != nil {
		return nil, demoErr
	}
	pol, err := policy.Demo()
	if err != nil {
		return nil, err
	}
	if err := pol.Validate(ctx, demoStore); err != nil {
		return nil, err
	}
	return mcpserver.New(mcpserver.Options{
		Store:  demoStore,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Agents: func(ctx context.Context, r mcpserver.RequestInfo) (*agent.Agent, error) {
			name, err := pol.Select(r.Header)
			if err != nil {
				return nil, err
			}
			return pol.Agent(ctx, name, demoStore, r.Header)
		},
	})
}

// inProcess connects the official SDK client to srv over in-memory
// transports.
func inProcess(t testing.TB, srv *mcpserver.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st); err != nil {
		t.Fatal(err)
	}
	cs, err := llm.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// overHTTP connects to srv's Streamable HTTP handler with a bearer key.
func overHTTP(t testing.TB, srv *mcpserver.Server, key string) *mcp.ClientSession {
	t.Helper()
	hs := httptest.NewServer(srv.Handler(mcpserver.HTTPOptions{}))
	t.Cleanup(hs.Close)
	cs, err := llm.ConnectHTTP(context.Background(), hs.URL+"/mcp", key, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// direct runs a tool without a model, for the ground truth.
func direct(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) map[string]any {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The loop offers the server's tools, runs the model's tool call through
// the MCP session and returns the model's answer, which rests on the real
// count; for both providers, streamed and not, in-process and over HTTP.
func TestToolRoundTrip(t *testing.T) {
	srv := demoServer(t)
	for _, f := range fakes {
		for _, stream := range []bool{false, true} {
			for _, transport := range []string{"in-process", "http"} {
				t.Run(fmt.Sprintf("%s/stream=%v/%s", f.name, stream, transport), func(t *testing.T) {
					var cs *mcp.ClientSession
					if transport == "http" {
						cs = overHTTP(t, srv, "demo-analyst")
					} else {
						cs = inProcess(t, srv)
					}
					want := direct(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})["count"]
					s, cfg := f.start(t, llmtest.Counter("Ticket"))
					var text strings.Builder
					var events []llm.EventKind
					c, err := llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: cs}, Stream: stream,
						Pricing: llm.Pricing{"test-model": {Input: 1, Output: 2}},
						OnEvent: func(e llm.Event) {
							events = append(events, e.Kind)
							if e.Kind == llm.EventText {
								text.WriteString(e.Text)
							}
						}})
					if err != nil {
						t.Fatal(err)
					}
					res, err := c.Ask(context.Background(), "How many tickets are there?")
					if err != nil {
						t.Fatal(err)
					}
					wantAnswer := fmt.Sprintf("There are %v Ticket objects.", want)
					if res.Answer != wantAnswer || res.Stop != llm.StopAnswered || res.Iterations != 2 {
						t.Fatalf("result %+v, want answer %q", res, wantAnswer)
					}
					if stream && text.String() != "Let me count them."+wantAnswer {
						t.Errorf("streamed text %q", text.String())
					}
					if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "count_objects" || string(res.ToolCalls[0].Arguments) != `{"class_name":"Ticket"}` ||
						res.ToolCalls[0].ErrorCode != "" || res.ToolCalls[0].Duration <= 0 || res.ToolCalls[0].Iteration != 1 {
						t.Errorf("tool calls %+v", res.ToolCalls)
					}
					// Usage: per turn and summed, priced from the table.
					if len(res.Turns) != 2 || res.Usage.Turns != 2 || res.Usage.Input != res.Turns[0].Input+res.Turns[1].Input ||
						res.Usage.TotalTokens != res.Usage.Input+res.Usage.Output || res.Usage.Input == 0 {
						t.Errorf("usage %+v turns %+v", res.Usage, res.Turns)
					}
					if wantCost := float64(res.Usage.Input*1+res.Usage.Output*2) / 1e6; diff(res.Usage.CostUSD, wantCost) > 1e-12 {
						t.Errorf("cost %v, want %v", res.Usage.CostUSD, wantCost)
					}
					if c.Usage() != res.Usage || c.LastUsage() != res.Usage {
						t.Errorf("session usage %+v", c.Usage())
					}
					// The model was offered the analyst's tools and got the
					// tool result for its call.
					reqs := s.Requests()
					if len(reqs) != 2 || !contains(reqs[0].Tools, "query_class") || contains(reqs[0].Tools, "describe_agent") {
						t.Fatalf("requests %d, tools %v", len(reqs), reqs[0].Tools)
					}
					if reqs[0].Stream != stream || reqs[0].System != llm.DefaultSystem {
						t.Errorf("stream %v system %q", reqs[0].Stream, reqs[0].System)
					}
					if r := reqs[1].LastResults(); len(r) != 1 || r[0].CallID != "call_count_1" || !strings.Contains(r[0].Content, fmt.Sprint(want)) {
						t.Errorf("tool result sent back: %+v", r)
					}
					if events[0] != llm.EventTurn && events[0] != llm.EventText {
						t.Errorf("events %v", events)
					}
				})
			}
		}
	}
}

func diff(a, b float64) float64 {
	if a > b {
		return a - b
	}
	return b - a
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The model acts as the agent its session resolves to: the analyst counts
// Acme's organization only and is refused another tenant's rows, the admin
// counts every organization.
func TestAgentPolicyApplies(t *testing.T) {
	srv := demoServer(t)
	ask := func(cs *mcp.ClientSession, model llmtest.Model, q string) *llm.Result {
		t.Helper()
		_, cfg := fakes[0].start(t, model)
		c, err := llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: cs}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Ask(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	analyst := ask(inProcess(t, srv), llmtest.Counter("Organization"), "How many organizations?")
	admin := ask(overHTTP(t, srv, "demo-admin"), llmtest.Counter("Organization"), "How many organizations?")
	if analyst.Answer != "There are 1 Organization objects." {
		t.Errorf("analyst: %q", analyst.Answer)
	}
	if admin.Answer == analyst.Answer || !strings.HasPrefix(admin.Answer, "There are ") {
		t.Errorf("admin: %q", admin.Answer)
	}

	// A query naming another tenant: the tool refuses, the record keeps
	// its error code, and the model is told (is_error) and says so.
	other := func(req *llmtest.Request) llmtest.Reply {
		if r := req.LastResults(); len(r) > 0 {
			// OpenAI tool messages carry no error flag: the model reads
			// the error_code in the text.
			if !strings.Contains(r[0].Content, `"error_code":"access_denied"`) || (req.Header.Get("Anthropic-Version") != "" && !r[0].IsError) {
				return llmtest.Reply{Text: "LEAK: " + r[0].Content}
			}
			return llmtest.Reply{Text: "That data is not available to me."}
		}
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "call_1", Name: "query_class", Args: `{"class_name":"Ticket","where":{"org":"` + demo.OrgGlobexID + `"}}`}}}
	}
	res := ask(inProcess(t, srv), other, "Show Globex's tickets")
	if res.Answer != "That data is not available to me." || len(res.ToolCalls) != 1 || res.ToolCalls[0].ErrorCode != "access_denied" || res.ToolCalls[0].Error == "" {
		t.Errorf("result %+v", res)
	}
}

// The loop stops at MaxIterations with a reason, answers the calls it did
// not run so the conversation stays valid, and the next question works.
func TestIterationCap(t *testing.T) {
	srv := demoServer(t)
	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			n := 0
			model := func(req *llmtest.Request) llmtest.Reply {
				// (Anthropic: the unrun calls' results and "thanks" are one
				// user turn.)
				if last := req.Messages[len(req.Messages)-1]; last.Text == "thanks" {
					return llmtest.Reply{Text: "You're welcome."}
				}
				n++
				return llmtest.Reply{Text: "Still looking.", Calls: []llmtest.Call{{ID: fmt.Sprintf("call_%d", n), Name: "count_objects", Args: `{"class_name":"Ticket"}`}}}
			}
			s, cfg := f.start(t, model)
			c, err := llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: inProcess(t, srv)}, MaxIterations: 3})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Ask(context.Background(), "Loop forever")
			if err != nil {
				t.Fatal(err)
			}
			if res.Stop != llm.StopMaxIterations || res.Iterations != 3 || len(res.ToolCalls) != 2 || len(s.Requests()) != 3 {
				t.Fatalf("stop %q after %d iterations, %d tool calls, %d requests", res.Stop, res.Iterations, len(res.ToolCalls), len(s.Requests()))
			}
			if !strings.Contains(res.Reason, "max_iterations 3") || !strings.Contains(res.Reason, "count_objects") {
				t.Errorf("reason %q", res.Reason)
			}
			// The fake refuses a history with an unanswered tool call.
			res, err = c.Ask(context.Background(), "thanks")
			if err != nil || res.Answer != "You're welcome." {
				t.Fatalf("follow-up: %v %+v", err, res)
			}
		})
	}
}

// Default: eight model turns.
func TestIterationCapDefault(t *testing.T) {
	srv := demoServer(t)
	model := func(req *llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Calls: []llmtest.Call{{ID: fmt.Sprintf("c%d", len(req.Messages)), Name: "count_objects", Args: `{"class_name":"Ticket"}`}}}
	}
	_, cfg := fakes[0].start(t, model)
	c, _ := llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: inProcess(t, srv)}})
	res, err := c.Ask(context.Background(), "loop")
	if err != nil || res.Iterations != llm.DefaultMaxIterations || res.Stop != llm.StopMaxIterations {
		t.Fatalf("%v %+v", err, res)
	}
}

const compactMarker = "Summarise our conversation so far"

// summariser answers compaction requests with a summary and questions
// with the number of user questions it can see.
func summariser(req *llmtest.Request) llmtest.Reply {
	if strings.HasPrefix(req.LastUserText(), compactMarker) {
		return llmtest.Reply{Text: "SUMMARY: the person asked two questions.", InputTokens: 900, OutputTokens: 10}
	}
	n := 0
	for _, m := range req.Messages {
		if m.Role == "user" && m.Text != "" {
			n++
		}
	}
	return llmtest.Reply{Text: fmt.Sprintf("I see %d questions; summary in system: %v", n, strings.Contains(req.System, "SUMMARY:")), InputTokens: 500, OutputTokens: 20}
}

// Compact replaces the history with the model's summary, which reaches
// the next turns through the system prompt; CompactAt compacts by itself
// once the context reaches the budget.
func TestCompaction(t *testing.T) {
	srv := demoServer(t)
	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			ctx := context.Background()
			s, cfg := f.start(t, summariser)
			c, _ := llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: inProcess(t, srv)}})
			c.Ask(ctx, "one")
			res, _ := c.Ask(ctx, "two")
			if res.Answer != "I see 2 questions; summary in system: false" {
				t.Fatalf("before compaction: %q", res.Answer)
			}
			before := c.Usage()
			summary, u, err := c.Compact(ctx)
			if err != nil || summary != "SUMMARY: the person asked two questions." || u.Input != 900 {
				t.Fatalf("compact: %q %+v %v", summary, u, err)
			}
			if got := c.Usage(); got.Input != before.Input+900 || got.Turns != before.Turns+1 {
				t.Errorf("compaction usage not counted: %+v", got)
			}
			h := c.History()
			if len(h) != 1 || h[0].Role != llm.RoleSummary {
				t.Fatalf("history after compaction: %+v", h)
			}
			res, _ = c.Ask(ctx, "three")
			if res.Answer != "I see 1 questions; summary in system: true" {
				t.Errorf("after compaction: %q", res.Answer)
			}
			if n := len(s.Requests()); n != 4 {
				t.Errorf("%d requests", n)
			}

			// Automatic: the budget is reached after the first answer
			// (500+20 tokens), so the second question compacts first.
			s, cfg = f.start(t, summariser)
			c, _ = llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: inProcess(t, srv)}, CompactAt: 500})
			if res, _ := c.Ask(ctx, "one"); res.Compacted {
				t.Error("compacted on the first question")
			}
			res, err = c.Ask(ctx, "two")
			if err != nil || !res.Compacted || res.Answer != "I see 1 questions; summary in system: true" {
				t.Fatalf("auto compaction: %v %+v", err, res)
			}
			if reqs := s.Requests(); len(reqs) != 3 || !strings.HasPrefix(reqs[1].LastUserText(), compactMarker) {
				t.Errorf("requests: %d", len(reqs))
			}
		})
	}
}

// Compaction keeps tool calls valid: a history holding tool calls and
// results is sent with its tools declared (Anthropic refuses it otherwise).
func TestCompactionAfterToolCalls(t *testing.T) {
	srv := demoServer(t)
	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			count := llmtest.Counter("Ticket")
			model := func(req *llmtest.Request) llmtest.Reply {
				if strings.HasPrefix(req.LastUserText(), compactMarker) {
					return llmtest.Reply{Text: "SUMMARY: tickets were counted."}
				}
				return count(req)
			}
			_, cfg := f.start(t, model)
			c, _ := llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: inProcess(t, srv)}})
			if _, err := c.Ask(context.Background(), "How many tickets?"); err != nil {
				t.Fatal(err)
			}
			if summary, _, err := c.Compact(context.Background()); err != nil || summary != "SUMMARY: tickets were counted." {
				t.Fatalf("%q %v", summary, err)
			}
		})
	}
}

// A failed model request drops the question from the history: the next
// one goes out on a valid conversation.
func TestErrorKeepsHistoryValid(t *testing.T) {
	srv := demoServer(t)
	first := true
	count := llmtest.Counter("Ticket")
	model := func(req *llmtest.Request) llmtest.Reply {
		if len(req.LastResults()) > 0 && first {
			first = false
			return llmtest.Reply{Status: 500, ErrorType: "api_error", ErrorMessage: "Internal server error"}
		}
		return count(req)
	}
	_, cfg := fakes[1].start(t, model)
	c, _ := llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: inProcess(t, srv)}})
	res, err := c.Ask(context.Background(), "How many tickets?")
	if err == nil || len(res.ToolCalls) != 1 {
		t.Fatalf("want the 500 with the partial result: %v %+v", err, res)
	}
	if len(c.History()) != 0 {
		t.Fatalf("history kept a failed question: %+v", c.History())
	}
	if res, err = c.Ask(context.Background(), "How many tickets?"); err != nil || !strings.HasPrefix(res.Answer, "There are ") {
		t.Fatalf("retry: %v %+v", err, res)
	}
}

// Unknown tools and non-object arguments are tool errors the model reads,
// not failures of the loop.
func TestBadToolCalls(t *testing.T) {
	srv := demoServer(t)
	model := func(req *llmtest.Request) llmtest.Reply {
		if r := req.LastResults(); len(r) > 0 {
			return llmtest.Reply{Text: r[0].Content + " | " + r[1].Content}
		}
		return llmtest.Reply{Calls: []llmtest.Call{{ID: "a", Name: "drop_database", Args: `{}`}, {ID: "b", Name: "count_objects", Args: `[1]`}}}
	}
	_, cfg := fakes[0].start(t, model)
	c, _ := llm.New(llm.Options{Provider: provider(t, cfg), Tools: llm.MCPTools{Session: inProcess(t, srv)}})
	res, err := c.Ask(context.Background(), "break things")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 2 || res.ToolCalls[0].ErrorCode != "unknown_tool" || res.ToolCalls[1].ErrorCode != "invalid_argument" {
		t.Fatalf("%+v", res.ToolCalls)
	}
	if !strings.Contains(res.Answer, `there is no tool "drop_database"`) || !strings.Contains(res.Answer, "must be a JSON object") {
		t.Errorf("answer %q", res.Answer)
	}
}
