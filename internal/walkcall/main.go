// Command walkcall runs one query_class call and records which code of
// this module it ran: built with coverage (-cover -covermode=atomic
// -coverpkg=./...), it serves the demo dataset on the embedded store over
// Streamable HTTP (a 2025-06-18 session, the master key), makes the call
// once to warm what is made once, clears the coverage counters, makes it
// again and writes the counters to -o. scripts/walk-call.sh builds and
// runs it and lists the files and functions the call entered
// (docs/ARCHITECTURE.md, "One query_class call, file by file").
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/coverage"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

func main() {
	out := flag.String("o", "", "directory the coverage counters and meta-data are written to")
	flag.Parse()
	if *out == "" {
		log.Fatal("walkcall: -o DIR is required")
	}
	if err := run(*out); err != nil {
		log.Fatalf("walkcall: %v", err)
	}
}

func run(out string) error {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "walkcall")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	st, err := sqlite.Create(ctx, filepath.Join(tmp, "demo.sqlite"))
	if err != nil {
		return err
	}
	defer st.Close()
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: 500}); err != nil {
		return err
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), nil
	}})
	if err != nil {
		return err
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Mux(mcpserver.HTTPOptions{}))
	defer ts.Close()

	session, _, err := post(ts.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"walk","version":"1"}}}`)
	if err != nil {
		return err
	}
	if _, _, err := post(ts.URL, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return err
	}
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"query_class","arguments":{"class_name":"Ticket","where":{"status":"open"}}}}`
	if _, _, err := post(ts.URL, session, call); err != nil { // warms caches and schemas
		return err
	}
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("build with -cover -covermode=atomic -coverpkg=./...: %w", err)
	}
	_, body, err := post(ts.URL, session, call)
	if err != nil {
		return err
	}
	if err := coverage.WriteCountersDir(out); err != nil {
		return err
	}
	if err := coverage.WriteMetaDir(out); err != nil {
		return err
	}
	if !strings.Contains(body, `"results"`) || strings.Contains(body, `"isError":true`) {
		return fmt.Errorf("the walked call did not answer its rows: %.300s", body)
	}
	return nil
}

// post sends one JSON-RPC message and returns the session id the answer
// carries and its body.
func post(url, session, body string) (string, string, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	if err != nil {
		return "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", "", err
	}
	if resp.StatusCode >= 300 {
		return "", "", fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return resp.Header.Get("Mcp-Session-Id"), string(b), nil
}
