// Command embed mounts parsemcp's MCP endpoint under /api/mcp of an
// ordinary net/http application, with a bearer-token agent factory.
//
//	go run ./examples/embed -addr 127.0.0.1:8080 -db /tmp/embed.sqlite
//
// Then point an MCP client at http://127.0.0.1:8080/api/mcp with
// "Authorization: Bearer reader-token" (a read-only master agent),
// "Bearer alice-token" (a read-only agent acting as one demo user) or
// "Bearer admin-token" (an admin that may write and delete: every deletion
// is put to the person at the client through elicitation first).
// Anything else is refused with 401 before the MCP SDK sees the request.
//
// The application also shows the rest of the embedding API:
//   - the tool "rebuild_report" reports its own progress
//     (mcpserver.ReportProgress); other long calls get heartbeats;
//   - POST /api/notify?session=ID&text=... sends a log message to one MCP
//     session (mcpserver.Server.Notify), as an application would when
//     something the agent watches changes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/tools"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	db := flag.String("db", "embed.sqlite", "SQLite file (demo data is generated when it is new)")
	rows := flag.Int("rows", 300, "demo rows")
	flag.Parse()
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	_, statErr := os.Stat(*db)
	open := sqlite.Open
	if os.IsNotExist(statErr) {
		open = sqlite.Create // a new file: set it up, then fill it
	}
	st, err := open(ctx, *db)
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if os.IsNotExist(statErr) {
		if _, err := demo.Generate(ctx, st, demo.Options{Rows: *rows}); err != nil {
			log.Fatal(err)
		}
	}
	mux, srv, err := newApp(st, logger, time.Second)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	logger.Info("listening", "url", "http://"+*addr+"/api/mcp")
	log.Fatal(http.ListenAndServe(*addr, mux))
}

// newApp builds the application: its own routes, and the MCP endpoint at
// /api/mcp. step paces rebuild_report.
func newApp(st store.Store, logger *slog.Logger, step time.Duration) (*http.ServeMux, *mcpserver.Server, error) {
	reg := tools.NewRegistry()
	if err := reg.Register(&tools.Tool{
		Name:        "rebuild_report",
		Description: "Rebuild the weekly report (takes a few seconds; reports its progress).",
		Permission:  agent.Readonly,
		ReadOnly:    true,
		Input:       &jsonschema.Schema{Type: "object"},
		Handler: func(ctx context.Context, c *tools.Call) (any, error) {
			for i := 1; i <= 4; i++ {
				select {
				case <-time.After(step):
				case <-ctx.Done(): // cancelled by the client, or its session ended
					return nil, ctx.Err()
				}
				mcpserver.ReportProgress(ctx, float64(i), 4, fmt.Sprintf("section %d of 4", i))
			}
			return map[string]any{"report": "ready"}, nil
		},
	}); err != nil {
		return nil, nil, err
	}
	cfg := tools.DefaultConfig
	cfg.Gates = agent.Gates{WriteTools: true, RawCRUD: true} // create/update/delete_object

	// The Server's own factory serves stdio and in-process callers; over
	// HTTP the handler's per-request factory below takes precedence.
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Logger: logger, Tools: reg, ToolConfig: &cfg,
		ApprovalTimeout: 2 * time.Minute, // how long a person has to approve a deletion
		Agents:          func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return nil, agent.ErrUnauthorized }})
	if err != nil {
		return nil, nil, err
	}
	endpoint, err := mcpserver.NewHandler(mcpserver.HandlerOptions{
		Server: srv,
		Agent:  bearerAgent,
		HTTPOptions: mcpserver.HTTPOptions{
			AllowedOrigins: []string{"localhost"},
			// JSONResponse: true, // plain JSON request/response instead of SSE
		},
	})
	if err != nil {
		srv.Close()
		return nil, nil, err
	}

	mux := http.NewServeMux()
	mux.Handle("/api/mcp", endpoint)
	mux.HandleFunc("POST /api/notify", func(w http.ResponseWriter, r *http.Request) {
		err := srv.Notify(r.Context(), r.URL.Query().Get("session"), "notifications/message",
			map[string]any{"level": "info", "logger": "embed", "data": r.URL.Query().Get("text")})
		switch {
		case errors.Is(err, mcpserver.ErrUnknownSession):
			http.Error(w, "no such session", http.StatusNotFound)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("the application; MCP lives at /api/mcp\n"))
	})
	return mux, srv, nil
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
	case "admin-token":
		return agent.New(agent.Admin, agent.Identity{Mode: agent.AuthMaster}), nil
	}
	return nil, agent.ErrUnauthorized
}
