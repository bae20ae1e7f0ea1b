package mcpserver_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// bearer adds an Authorization header to every request of a client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// Mount the MCP endpoint in an ordinary net/http application: a server
// over an embedded store, and a handler whose agent factory turns each
// request's bearer token into an agent (here one read-only agent acting
// with the master key; anything else is refused with 401 before the MCP
// SDK sees the request). An MCP client then counts a class's objects.
func ExampleNewHandler() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "parsemcp-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := sqlite.Create(ctx, filepath.Join(dir, "app.sqlite"))
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	ticket := parse.NewSchema("Ticket")
	ticket.Fields["title"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, ticket); err != nil {
		log.Fatal(err)
	}
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "Printer on fire"}, {"title": "Coffee machine empty"}}); err != nil {
		log.Fatal(err)
	}

	srv, err := mcpserver.New(mcpserver.Options{Store: st,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return nil, agent.ErrUnauthorized }})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	h, err := mcpserver.NewHandler(mcpserver.HandlerOptions{Server: srv, Agent: func(r *http.Request) (*agent.Agent, error) {
		if r.Header.Get("Authorization") != "Bearer reader-token" {
			return nil, agent.ErrUnauthorized
		}
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), nil
	}})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/api/mcp", h)
	app := httptest.NewServer(mux)
	defer app.Close()

	req, _ := http.NewRequest(http.MethodPost, app.URL+"/api/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	fmt.Println("without a token:", resp.StatusCode)

	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: app.URL + "/api/mcp",
		HTTPClient: &http.Client{Transport: bearer{"reader-token"}}}, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// without a token: 401
	// {"class_name":"Ticket","count":2}
}
