package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
)

// `parsemcp serve` under a PostgreSQL role that may only SELECT: every
// read tool answers, and a resource subscription is refused with a clear
// message (the change feed is not installed, and nothing could be
// reported).
func TestServeReadOnlyRole(t *testing.T) {
	url := pgtest.Schema(t, "e2e_readonly")
	if _, stderr, code := run(t, nil, "demo", "--rows", "300", "--out", url, "-q"); code != 0 {
		t.Fatalf("demo: %s", stderr)
	}
	ro := pgtest.ReadOnlyRole(t, url)
	s := startServe(t, nil, "--store", ro, "--rate-limit", "0", "--permission", "admin")
	if !strings.Contains(s.stderr.String(), "resource subscriptions are refused") {
		t.Errorf("serve does not warn that subscriptions are refused:\n%s", s.stderr)
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "readonly", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	open := map[string]any{"status": "open"}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"get_all_schemas", map[string]any{}},
		{"get_schema", map[string]any{"class_name": "Ticket"}},
		{"query_class", map[string]any{"class_name": "Ticket", "where": open, "order": "-createdAt", "limit": 3, "include": []string{"project"}}},
		{"count_objects", map[string]any{"class_name": "Ticket", "where": open}},
		{"get_sample_objects", map[string]any{"class_name": "Ticket"}},
		{"distinct", map[string]any{"class_name": "Ticket", "field": "status"}},
		{"group_by", map[string]any{"class_name": "Ticket", "field": "status"}},
		{"group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "month"}},
		{"aggregate", map[string]any{"class_name": "Ticket", "pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$status", "n": map[string]any{"$sum": 1}}}}}},
		{"explain_query", map[string]any{"class_name": "Ticket", "where": open}},
		{"export_data", map[string]any{"class_name": "Ticket", "limit": 5}},
		{"list_tools", map[string]any{}},
	}
	// describe_agent and would_permit are operator-side unless a policy
	// exposes them: refused to this session, whatever its tier.
	for _, tool := range []string{"describe_agent", "would_permit"} {
		if out, isErr := callTool(t, cs, tool, map[string]any{"tool": "query_class"}); !isErr || out["error_code"] != "tool_filtered" {
			t.Errorf("%s without introspection: %v", tool, out)
		}
	}
	var id string
	for _, c := range calls {
		out, isErr := callTool(t, cs, c.tool, c.args)
		if isErr {
			t.Errorf("%s under a SELECT-only role: %v", c.tool, out)
		}
		if c.tool == "query_class" && !isErr {
			rows, _ := out["results"].([]any)
			if len(rows) == 0 {
				t.Fatalf("query_class found nothing: %v", out)
			}
			id, _ = rows[0].(map[string]any)["objectId"].(string)
		}
	}
	for tool, args := range map[string]map[string]any{
		"get_object":  {"class_name": "Ticket", "object_id": id},
		"get_objects": {"class_name": "Ticket", "ids": []string{id}},
	} {
		if out, isErr := callTool(t, cs, tool, args); isErr {
			t.Errorf("%s under a SELECT-only role: %v", tool, out)
		}
	}
	r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "parse://Ticket/count"})
	if err != nil || len(r.Contents) == 0 {
		t.Fatalf("read parse://Ticket/count: %v", err)
	}
	err = cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "parse://Ticket/count"})
	if err == nil || !strings.Contains(err.Error(), "change feed is not installed") || !strings.Contains(err.Error(), "parsemcp migrate") {
		t.Fatalf("subscribe under a SELECT-only role without the change feed = %v, want a clear refusal", err)
	}
	// The same through a 2026-07-28 subscriptions/listen request (raw:
	// the SDK client opens the listen stream in the background).
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"resourceSubscriptions":["parse://Ticket/count"]}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(raw), "change feed is not installed") {
		t.Fatalf("subscriptions/listen under a SELECT-only role: %d %s", resp.StatusCode, raw)
	}
}

// serve, call and stdio never create a store: a mistyped SQLite path or a
// PostgreSQL database that holds no Parse classes is a clear error, and
// nothing is created.
func TestOpenNeverCreates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mistyped", "parse.sqlite")
	_, stderr, code := run(t, nil, "call", "get_all_schemas", "--store", "sqlite:"+path)
	if code == 0 || !strings.Contains(stderr, "no such database file") {
		t.Fatalf("call on a missing SQLite file: exit %d: %s", code, stderr)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("call created %s (%v)", path, err)
	}
	url := pgtest.Schema(t, "e2e_notsetup")
	_, stderr, code = run(t, nil, "call", "get_all_schemas", "--store", url)
	if code == 0 || !strings.Contains(stderr, "no _SCHEMA table") || !strings.Contains(stderr, "parsemcp migrate") {
		t.Fatalf("call on an empty PostgreSQL schema: exit %d: %s", code, stderr)
	}
	// migrate sets it up; then it serves.
	if _, stderr, code = run(t, nil, "migrate", "--store", url); code != 0 {
		t.Fatalf("migrate: %s", stderr)
	}
	if stdout, stderr, code := run(t, nil, "call", "get_all_schemas", "--store", url); code != 0 || !strings.Contains(stdout, "_User") {
		t.Fatalf("call after migrate: exit %d: %s %s", code, stdout, stderr)
	}
}

// `parsemcp serve --store postgres://<read-only role>@…` serves a database
// Parse Server created (its classes made through Parse Server's schema
// API, its rows through REST), as it is: no migration, no DDL; a session
// token Parse Server issued acts as that user.
func TestServeParseServerDatabaseReadOnly(t *testing.T) {
	ps := parseserver.Start(t, parseserver.Options{})
	do := func(method, path string, body any, token string) map[string]any {
		t.Helper()
		code, out := ps.Request(method, path, body, token, token == "")
		var m map[string]any
		if code >= 300 || json.Unmarshal(out, &m) != nil {
			t.Fatalf("Parse Server %s %s: %d %s", method, path, code, out)
		}
		return m
	}
	do(http.MethodPost, "/users", map[string]any{"username": "ann", "password": "pw"}, "")
	code, body := ps.Request(http.MethodPost, "/login", map[string]any{"username": "ann", "password": "pw"}, "", false)
	var login struct {
		SessionToken string
		ObjectID     string
	}
	if code != http.StatusOK || json.Unmarshal(body, &login) != nil {
		t.Fatalf("login: %d %s", code, body)
	}
	do(http.MethodPost, "/schemas/Note", map[string]any{"className": "Note", "fields": map[string]any{"text": map[string]any{"type": "String"}},
		"classLevelPermissions": map[string]any{"find": map[string]any{"requiresAuthentication": true}, "get": map[string]any{"requiresAuthentication": true},
			"count": map[string]any{"requiresAuthentication": true}, "create": map[string]any{"*": true}}}, "")
	do(http.MethodPost, "/classes/Note", map[string]any{"text": "for everyone"}, "")
	do(http.MethodPost, "/classes/Note", map[string]any{"text": "for ann", "ACL": map[string]any{login.ObjectID: map[string]any{"read": true}}}, "")
	do(http.MethodPost, "/classes/Note", map[string]any{"text": "for nobody", "ACL": map[string]any{}}, "")

	ro := pgtest.ReadOnlyRole(t, ps.DatabaseURL())
	s := startServe(t, nil, "--store", ro, "--anonymous", "--rate-limit", "0")
	ctx := context.Background()
	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		tr := &mcp.StreamableClientTransport{Endpoint: s.url}
		if token != "" {
			tr.HTTPClient = &http.Client{Transport: headerTransport{"X-Parse-Session-Token", token}}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "ro", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	ann := connect(login.SessionToken)
	out, isErr := callTool(t, ann, "query_class", map[string]any{"class_name": "Note", "order": "text"})
	if isErr {
		t.Fatalf("ann's query: %v", out)
	}
	var texts []string
	for _, r := range out["results"].([]any) {
		texts = append(texts, r.(map[string]any)["text"].(string))
	}
	if strings.Join(texts, "|") != "for ann|for everyone" {
		t.Fatalf("ann reads %v, want her note and the public one", texts)
	}
	// Anonymous: the CLP asks for a session, as Parse Server answers.
	if out, isErr := callTool(t, connect(""), "query_class", map[string]any{"class_name": "Note"}); !isErr || out["error_code"] != "permission_denied" {
		t.Fatalf("anonymous query of a requiresAuthentication class: %v", out)
	}
}
