package llm_test

import (
	"context"
	"fmt"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/llm"
	"github.com/parsemcp/parsemcp/llm/llmtest"
)

// Ask a model a question about the data of a parsemcp server. Here the
// server is the demo dataset in this process, acting as the demo policy's
// analyst, and the model a fake OpenAI-compatible server that counts; a
// real one is a base URL away (Ollama: http://localhost:11434/v1).
func Example() {
	ctx := context.Background()
	srv, err := newDemoServer()
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	// The MCP side: the official SDK client, in memory (llm.ConnectHTTP
	// reaches a running server, llm.ConnectCommand one over stdio).
	ct, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st); err != nil {
		log.Fatal(err)
	}
	cs, err := llm.Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	// The model side.
	model := llmtest.NewOpenAI(nil, llmtest.Counter("Organization"))
	defer model.Close()
	p, err := llm.NewProvider(llm.Config{Model: "gpt-4o-mini", BaseURL: model.BaseURL})
	if err != nil {
		log.Fatal(err)
	}
	c, err := llm.New(llm.Options{Provider: p, Tools: llm.MCPTools{Session: cs}})
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Ask(ctx, "How many organizations can I see?")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Answer)
	for _, call := range res.ToolCalls {
		fmt.Println(call.Name, string(call.Arguments), call.ErrorCode == "")
	}
	fmt.Println(res.Stop, res.Iterations, len(res.Turns))
	// Output:
	// There are 1 Organization objects.
	// count_objects {"class_name":"Organization"} true
	// answered 2 2
}
