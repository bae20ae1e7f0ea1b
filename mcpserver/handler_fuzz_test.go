package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
)

var sessionIDRef = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// FuzzHandlerEnvelope sends arbitrary requests (method, content type,
// protocol version, token, session id, body) through the hardened handler
// and the SDK behind it. Invariants: no panic; only the documented
// statuses; our own refusals are JSON-RPC error bodies; a malformed
// session id is 400; a session owned by another principal is never
// served; and nothing is answered 500.
func FuzzHandlerEnvelope(f *testing.F) {
	srv, err := New(Options{Store: fixture.Store(f, filepath.Join(f.TempDir(), "f.sqlite")), Agents: func(context.Context, RequestInfo) (*agent.Agent, error) {
		return nil, agent.ErrUnauthorized
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(srv.Close)
	users := map[string]*agent.Agent{
		"Bearer a": agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: fixture.Alice}),
		"Bearer b": agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: fixture.Bob}),
	}
	h, err := NewHandler(HandlerOptions{Server: srv, Agent: func(r *http.Request) (*agent.Agent, error) {
		if a, ok := users[r.Header.Get("Authorization")]; ok {
			return a, nil
		}
		return nil, agent.ErrUnauthorized
	}})
	if err != nil {
		f.Fatal(err)
	}
	serve := func(method, ctype, version, token, sid, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, "http://localhost/mcp", strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		if version != "" {
			req.Header.Set("Mcp-Protocol-Version", version)
		}
		if token != "" {
			req.Header.Set("Authorization", token)
		}
		if sid != "" {
			req.Header["Mcp-Session-Id"] = []string{sid}
		}
		ctx, cancel := context.WithCancel(req.Context())
		defer cancel()
		rec := httptest.NewRecorder()
		if method == http.MethodGet {
			// A listening stream stays open: end it at once.
			cancel()
		}
		h.ServeHTTP(rec, req.WithContext(ctx))
		return rec
	}
	// alice's session, which bob must never reach.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"1"}}}`
	victim := serve(http.MethodPost, "application/json", "", "Bearer a", "", init).Header().Get("Mcp-Session-Id")
	if victim == "" {
		f.Fatal("no session")
	}
	serve(http.MethodPost, "application/json", "2025-06-18", "Bearer a", victim, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	for _, s := range []struct {
		method, ctype, version string
		token, sess            uint8
		sid, body              string
	}{
		{"POST", "application/json", "2025-06-18", 2, 1, "", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{"POST", "application/json", "2025-06-18", 1, 1, "", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"count_objects","arguments":{"class_name":"Ticket"}}}`},
		{"POST", "application/json", "", 1, 0, "", init},
		{"POST", "application/json", "2025-06-18", 1, 2, "../../etc", `{"jsonrpc":"2.0","id":2,"method":"ping"}`},
		{"POST", "text/plain", "", 1, 0, "", init},
		{"POST", "application/json", "1999-01-01", 1, 0, "", init},
		{"POST", "application/json", "", 0, 0, "", `[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]`},
		{"POST", "application/json", "", 1, 0, "", `{"jsonrpc":"1.0","id":{},"method":5}`},
		{"DELETE", "", "2025-06-18", 2, 1, "", ""},
		{"GET", "", "2025-06-18", 2, 1, "", ""},
		{"PUT", "application/json", "", 1, 0, "", "{}"},
		{"POST", "application/json", "2026-07-28", 1, 2, "x", `{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`},
	} {
		f.Add(s.method, s.ctype, s.version, s.token, s.sess, s.sid, s.body)
	}
	f.Fuzz(func(t *testing.T, method, ctype, version string, token, sess uint8, sid, body string) {
		switch method {
		case "POST", "GET", "DELETE", "PUT", "PATCH", "OPTIONS":
		default:
			method = "POST"
		}
		tok := []string{"", "Bearer a", "Bearer b", "Bearer zzz"}[token%4]
		switch sess % 3 {
		case 0:
			sid = ""
		case 1:
			sid = victim
		}
		if strings.ContainsAny(sid, "\r\n\x00") || strings.ContainsAny(version, "\r\n\x00") || strings.ContainsAny(ctype, "\r\n\x00") {
			return // not representable in HTTP/1.1 headers
		}
		rec := serve(method, ctype, version, tok, sid, body)
		code := rec.Code
		switch code {
		case 200, 202, 204, 400, 401, 403, 404, 405, 406, 413, 415, 503:
		default:
			t.Fatalf("status %d for %s %q (version %q, token %q, session %q): %s", code, method, body, version, tok, sid, rec.Body)
		}
		stateless := version >= statelessVersion
		if sid != "" && !stateless && !sessionIDRef.MatchString(sid) && method != "PUT" && method != "PATCH" && method != "OPTIONS" && code != 415 && code != 413 && code != 403 {
			// Malformed ids are refused before anything looks them up
			// (or earlier, by a check that comes first).
			if code != 400 && code != 401 {
				t.Fatalf("malformed session id %q: status %d", sid, code)
			}
		}
		if sid == victim && tok != "Bearer a" && !stateless && code < 300 {
			t.Fatalf("alice's session served to %q: %d %s", tok, code, rec.Body)
		}
		if code >= 400 && strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			var m struct {
				JSONRPC string              `json:"jsonrpc"`
				Error   *struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil || m.JSONRPC != "2.0" || m.Error == nil || m.Error.Code == 0 {
				t.Fatalf("refusal %d is not a JSON-RPC error: %s", code, rec.Body)
			}
		}
	})
}

// FuzzSessionID checks the session id sanitiser against its definition.
func FuzzSessionID(f *testing.F) {
	for _, s := range []string{"", "abc", "a.b_c-d", strings.Repeat("x", 128), strings.Repeat("x", 129), "a b", "é", "../x", "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validSessionID(s), sessionIDRef.MatchString(s); got != want {
			t.Fatalf("validSessionID(%q) = %v, want %v", s, got, want)
		}
	})
}
