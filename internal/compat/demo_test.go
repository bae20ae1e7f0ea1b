package compat

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// demoDB writes the demo dataset into a new database, as `parsemcp demo
// --out postgres://…` does, and starts Parse Server on it.
func demoDB(t *testing.T, rows int) (string, *parseserver.Server) {
	t.Helper()
	ctx := context.Background()
	db := pgtest.Database(t, "demo")
	st, err := postgres.Create(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: rows}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	return db, parseserver.Start(t, parseserver.Options{DatabaseURL: db})
}

// login logs a demo user in through Parse Server and returns the session
// token.
func login(t *testing.T, ps *parseserver.Server, username string) string {
	t.Helper()
	code, body := ps.Request(http.MethodPost, "/login", map[string]any{"username": username, "password": demo.Password}, "", false)
	if code != http.StatusOK {
		t.Fatalf("login %s through Parse Server: %d %s", username, code, body)
	}
	var out struct {
		SessionToken string `json:"sessionToken"`
		ObjectID     string `json:"objectId"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.SessionToken == "" {
		t.Fatalf("login %s: %s (%v)", username, body, err)
	}
	return out.SessionToken
}

// The demo's PostgreSQL output is a database Parse Server 9 starts on and
// serves: users log in with the documented password, and queries answer.
func TestDemoServedByParseServer(t *testing.T) {
	_, ps := demoDB(t, 300)
	tok := login(t, ps, demo.SupportUsername)
	where, _ := json.Marshal(map[string]any{"status": "open"})
	code, body := ps.Request(http.MethodGet, "/classes/Ticket?count=1&limit=3&where="+url.QueryEscape(string(where)), nil, tok, false)
	if code != http.StatusOK {
		t.Fatalf("find Ticket as support through Parse Server: %d %s", code, body)
	}
	var res struct {
		Results []map[string]any `json:"results"`
		Count   int              `json:"count"`
	}
	if err := json.Unmarshal(body, &res); err != nil || res.Count == 0 || len(res.Results) == 0 {
		t.Fatalf("find Ticket as support: %s (%v)", body, err)
	}
	code, body = ps.Request(http.MethodGet, "/users/me", nil, tok, false)
	if code != http.StatusOK {
		t.Fatalf("users/me: %d %s", code, body)
	}
	// A wrong password is refused.
	if code, body := ps.Request(http.MethodPost, "/login", map[string]any{"username": demo.SupportUsername, "password": "wrong"}, "", false); code == http.StatusOK {
		t.Fatalf("a wrong password logged in: %s", body)
	}
	// Parse Server can write to it too (sign-up uses the unique indexes).
	code, body = ps.Request(http.MethodPost, "/users", map[string]any{"username": demo.SupportUsername, "password": "x"}, "", false)
	if code == http.StatusCreated {
		t.Fatalf("a second user named %s was created: %s", demo.SupportUsername, body)
	}
	code, body = ps.Request(http.MethodPost, "/users", map[string]any{"username": "newcomer", "password": "x", "email": "newcomer@example.com"}, "", false)
	if code != http.StatusCreated {
		t.Fatalf("sign-up through Parse Server on the demo database: %d %s", code, body)
	}
}
