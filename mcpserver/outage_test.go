package mcpserver_test

import (
	"context"
	"database/sql"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// TestPostgresOutageIsUnavailable: while its PostgreSQL is down, a call is
// refused as "unavailable" (retryable, with a retry_after hint), never as
// "internal_error"; once the database is back the same call succeeds.
func TestPostgresOutageIsUnavailable(t *testing.T) {
	pg := pgtest.Private(t)
	st, err := postgres.Create(context.Background(), pg.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fixture.Populate(t, st)
	srv := newServer(t, st, agent.Write, master)
	cs := connect(t, srv, "")
	ts := httpServer(t, srv)
	ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
	wantHealth(t, ts.URL, http.StatusOK, "ok", "", "")

	pg.Stop()
	// The schema cache still answers; /health asks PostgreSQL itself.
	wantHealth(t, ts.URL, http.StatusServiceUnavailable, "unavailable", "database", "PostgreSQL does not answer")
	for _, call := range []struct {
		tool string
		args map[string]any
	}{
		{"count_objects", map[string]any{"class_name": "Ticket"}},
		{"query_class", map[string]any{"class_name": "Ticket", "limit": 2}},
	} {
		out := fails(t, cs, call.tool, call.args, "unavailable")
		msg, _ := out["error"].(string)
		details, _ := out["details"].(map[string]any)
		if !strings.Contains(msg, "try again") || details["retry_after"] == nil || strings.Contains(msg, "127.0.0.1") {
			t.Errorf("%s during the outage: %v", call.tool, out)
		}
	}

	pg.Start()
	ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
	wantHealth(t, ts.URL, http.StatusOK, "ok", "", "")
}

// TestSQLiteLockedIsUnavailable: a write that finds the database file
// locked by another process past busy_timeout is "unavailable", not an
// internal error; nothing was written.
func TestSQLiteLockedIsUnavailable(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out SQLite's 10 s busy_timeout")
	}
	path := filepath.Join(t.TempDir(), "locked.sqlite")
	st := fixture.Store(t, path)
	srv, err := mcpserver.New(mcpserver.Options{Store: st, ToolConfig: mcpserverToolConfig(agent.Gates{WriteTools: true, RawCRUD: true}),
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Write, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cs := connect(t, srv, "")
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	fails(t, cs, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "locked out"}}, "unavailable")
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	out := ok(t, cs, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "locked out"}})
	if out["count"] != float64(0) {
		t.Fatalf("the refused write is there: %v", out)
	}
}
