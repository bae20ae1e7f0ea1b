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
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/coverage"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/rawmcp"
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

	c, err := rawmcp.ConnectAt(ctx, http.DefaultClient, ts.URL+"/mcp", nil, "2025-06-18")
	if err != nil {
		return err
	}
	const tool, args = "query_class", `{"class_name":"Ticket","where":{"status":"open"}}`
	if err := c.Call(ctx, tool, args); err != nil { // warms caches and schemas
		return err
	}
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("build with -cover -covermode=atomic -coverpkg=./...: %w", err)
	}
	if err := c.Call(ctx, tool, args); err != nil {
		return err
	}
	if err := coverage.WriteCountersDir(out); err != nil {
		return err
	}
	if err := coverage.WriteMetaDir(out); err != nil {
		return err
	}
	return nil
}
