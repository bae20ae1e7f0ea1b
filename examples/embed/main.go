// Command embed mounts parsemcp's MCP endpoint under /api/mcp of an
// ordinary net/http application, with a bearer-token agent factory.
//
//	go run ./examples/embed -addr 127.0.0.1:8080 -db /tmp/embed.sqlite
//
// Then point an MCP client at http://127.0.0.1:8080/api/mcp with
// "Authorization: Bearer reader-token" (a read-only master agent) or
// "Bearer alice-token" (a read-only agent acting as one demo user).
// Anything else is refused with 401 before the MCP SDK sees the request.
package main

import (
	"context"
	"flag"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	db := flag.String("db", "embed.sqlite", "SQLite file (demo data is generated when it is new)")
	rows := flag.Int("rows", 300, "demo rows")
	flag.Parse()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	_, statErr := os.Stat(*db)
	st, err := sqlite.Open(ctx, *db)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if os.IsNotExist(statErr) {
		if _, err := demo.Generate(ctx, st, demo.Options{Rows: *rows}); err != nil {
			log.Fatal(err)
		}
	}

	// The Server's own factory serves stdio and in-process callers; over
	// HTTP the handler's per-request factory below takes precedence.
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Logger: logger,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return nil, agent.ErrUnauthorized }})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	mcp, err := mcpserver.NewHandler(mcpserver.HandlerOptions{
		Server: srv,
		Agent:  bearerAgent,
		HTTPOptions: mcpserver.HTTPOptions{
			AllowedOrigins: []string{"localhost"},
			// JSONResponse: true, // plain JSON request/response instead of SSE
		},
	})
	if err != nil {
		log.Fatal(err)
	}

	mux := http.NewServeMux()
	mux.Handle("/api/mcp", mcp)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("the application; MCP lives at /api/mcp\n"))
	})
	logger.Info("listening", "url", "http://"+*addr+"/api/mcp")
	log.Fatal(http.ListenAndServe(*addr, mux))
}

// bearerAgent maps a bearer token to an agent. A real application would
// look the token up (a session store, an OAuth introspection, ...).
func bearerAgent(r *http.Request) (*agent.Agent, error) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return nil, agent.ErrUnauthorized
	}
	switch token {
	case "reader-token":
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster}), nil
	case "alice-token":
		return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: "alice"}), nil
	}
	return nil, agent.ErrUnauthorized
}
