package llm_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/llm"
	"github.com/parsemcp/parsemcp/llm/llmtest"
)

// countingTools counts the listings of an MCPTools.
type countingTools struct {
	llm.MCPTools
	lists *atomic.Int32
}

func (c countingTools) Tools(ctx context.Context) ([]llm.Tool, error) {
	c.lists.Add(1)
	return c.MCPTools.Tools(ctx)
}

// A Client following a server's notifications/tools/list_changed offers
// each model turn the server's current tools: a tool added between two
// questions is offered to the next, one removed during a question (by the
// tool the model called) is gone from its next turn; without a change the
// tools are listed once.
func TestToolListChangesReachTheNextTurn(t *testing.T) {
	ctx := context.Background()
	server := mcp.NewServer(&mcp.Implementation{Name: "changing", Version: "1"}, nil)
	type noArgs struct{}
	text := func(s string) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}, nil, nil
	}
	received := make(chan struct{}, 10) // the client heard a list change
	mcp.AddTool(server, &mcp.Tool{Name: "first"}, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
		return text("first ran")
	})
	mcp.AddTool(server, &mcp.Tool{Name: "drop_second"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, any, error) {
		server.RemoveTools("second")
		select { // answer once the client has heard of the change
		case <-received:
		case <-ctx.Done():
		}
		return text("second dropped")
	})
	ct, st := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	opts, changes := llm.FollowToolChanges(&mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		received <- struct{}{}
	}})
	cs, err := llm.Connect(ctx, ct, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	model := llmtest.NewOpenAI(t, func(req *llmtest.Request) llmtest.Reply {
		if req.LastUserText() == "drop it" && len(req.LastResults()) == 0 {
			return llmtest.Reply{Calls: []llmtest.Call{{ID: "c1", Name: "drop_second", Args: "{}"}}}
		}
		return llmtest.Reply{Text: "ok"}
	})
	p, err := llm.NewProvider(llm.Config{Model: "m", BaseURL: model.BaseURL})
	if err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int32
	var events []llm.Event
	c, err := llm.New(llm.Options{Provider: p, Tools: countingTools{llm.MCPTools{Session: cs, Changes: changes}, &lists}, OnEvent: func(e llm.Event) {
		if e.Kind == llm.EventToolsChanged {
			events = append(events, e)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	offered := func(i int) []string {
		names := slices.Clone(model.Requests()[i].Tools)
		slices.Sort(names)
		return names
	}
	ask := func(q string) {
		t.Helper()
		if _, err := c.Ask(ctx, q); err != nil {
			t.Fatal(err)
		}
	}

	ask("one")
	ask("two")
	if got := offered(1); !slices.Equal(got, []string{"drop_second", "first"}) || lists.Load() != 1 {
		t.Fatalf("before any change: offered %v, listed %d times", got, lists.Load())
	}
	mcp.AddTool(server, &mcp.Tool{Name: "second"}, func(context.Context, *mcp.CallToolRequest, noArgs) (*mcp.CallToolResult, any, error) {
		return text("second ran")
	})
	<-received
	ask("three")
	if got := offered(2); !slices.Equal(got, []string{"drop_second", "first", "second"}) {
		t.Fatalf("after second was added: offered %v", got)
	}
	ask("drop it")
	if got := offered(3); !slices.Equal(got, []string{"drop_second", "first", "second"}) {
		t.Fatalf("first turn of drop it: offered %v", got)
	}
	if got := offered(4); !slices.Equal(got, []string{"drop_second", "first"}) {
		t.Fatalf("the turn after second was removed: offered %v", got)
	}
	if lists.Load() != 3 {
		t.Errorf("listed %d times for 2 changes", lists.Load())
	}
	if len(events) != 2 || !slices.Equal(events[0].Added, []string{"second"}) || events[0].Tools != 3 ||
		!slices.Equal(events[1].Removed, []string{"second"}) || events[1].Tools != 2 {
		t.Errorf("tools-changed events: %+v", events)
	}
}
