package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// `parsemcp serve --demo --policy demo` over HTTP: the three demo agents of
// README's "Demo agents", selected by their bearer keys through the Go SDK
// client, each doing what the README says it does.
func TestServeDemoPolicyAgents(t *testing.T) {
	cache := t.TempDir()
	env := []string{"XDG_CACHE_HOME=" + cache, "HOME=" + cache, "PARSEMCP_POLICY=", "PARSEMCP_AGENT=", "PARSEMCP_API_KEY=",
		"PARSEMCP_ALLOW_WRITE_TOOLS=", "PARSEMCP_ALLOW_SCHEMA_OPS=", "PARSEMCP_ALLOW_RAW_CRUD=", "PARSEMCP_ALLOW_RAW_SCHEMA="}
	s := startServe(t, env, "--demo", "--demo-rows", "600", "--policy", "demo")
	ctx := context.Background()

	connect := func(token string) (*mcp.ClientSession, error) {
		tr := &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}
		if token != "" {
			tr.HTTPClient = &http.Client{Transport: headerTransport{"Authorization", "Bearer " + token}}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "policy-e2e", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err == nil {
			t.Cleanup(func() { cs.Close() })
		}
		return cs, err
	}
	mustConnect := func(token string) *mcp.ClientSession {
		t.Helper()
		cs, err := connect(token)
		if err != nil {
			t.Fatalf("connect with %q: %v", token, err)
		}
		return cs
	}
	toolNames := func(cs *mcp.ClientSession) []string {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
	acmeTickets := analystTicketCount(t)

	t.Run("analyst", func(t *testing.T) {
		cs := mustConnect("demo-analyst")
		out, isErr := callTool(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
		if isErr || out["count"] != float64(acmeTickets) {
			t.Fatalf("analyst count of Ticket: %v, want the %d Acme tickets its roles may read", out, acmeTickets)
		}
		out, isErr = callTool(t, cs, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{"org": demo.OrgGlobexID}})
		if !isErr || out["error_code"] != "access_denied" {
			t.Fatalf("analyst asking for Globex's tickets: %v", out)
		}
		out, isErr = callTool(t, cs, "get_object", map[string]any{"class_name": "Ticket", "object_id": demo.TicketMasterOnlyID})
		if !isErr || out["error_code"] != "not_found" {
			t.Fatalf("analyst reading the master-only ticket: %v", out)
		}
		names := toolNames(cs)
		if !slices.Contains(names, "export_data") || slices.Contains(names, "create_object") || slices.Contains(names, "describe_agent") {
			t.Fatalf("analyst tools: %v", names)
		}
	})

	t.Run("no token is the default agent (analyst)", func(t *testing.T) {
		out, isErr := callTool(t, mustConnect(""), "count_objects", map[string]any{"class_name": "Ticket"})
		if isErr || out["count"] != float64(acmeTickets) {
			t.Fatalf("count without a token: %v, want %d", out, acmeTickets)
		}
	})

	t.Run("support", func(t *testing.T) {
		cs := mustConnect("demo-support")
		names := toolNames(cs)
		if slices.Contains(names, "export_data") || slices.Contains(names, "describe_agent") || !slices.Contains(names, "call_method") {
			t.Fatalf("support tools: %v", names)
		}
		out, isErr := callTool(t, cs, "export_data", map[string]any{"class_name": "Ticket"})
		if !isErr || out["error_code"] != "tool_filtered" || out["error"] != "tool export_data is not available to this agent" {
			t.Fatalf("support export_data: %v", out)
		}
		// Writes stay off until the operator opens a gate.
		out, isErr = callTool(t, cs, "call_method", map[string]any{"class_name": "Ticket", "method_name": "close", "object_id": demo.TicketOrgID})
		if !isErr || out["error"] != "method Ticket.close is disabled by the operator. Required: PARSEMCP_ALLOW_WRITE_TOOLS=true." {
			t.Fatalf("support call_method without the gate: %v", out)
		}
		out, isErr = callTool(t, cs, "count_objects", map[string]any{"class_name": "Order"})
		if !isErr || out["error_code"] != "access_denied" {
			t.Fatalf("support reading Order (outside its classes): %v", out)
		}
	})

	t.Run("admin", func(t *testing.T) {
		cs := mustConnect("demo-admin")
		names := toolNames(cs)
		if !slices.Contains(names, "describe_agent") || !slices.Contains(names, "would_permit") {
			t.Fatalf("admin tools: %v", names)
		}
		out, isErr := callTool(t, cs, "describe_agent", map[string]any{})
		if isErr || out["profile"] != "admin" || out["permission"] != "admin" {
			t.Fatalf("describe_agent: %v", out)
		}
		out, isErr = callTool(t, cs, "count_objects", map[string]any{"class_name": "Ticket"})
		if isErr || out["count"] != float64(allTicketCount(t)) {
			t.Fatalf("admin count of Ticket: %v", out)
		}
	})

	t.Run("wrong token", func(t *testing.T) {
		// docs/POLICY.md: a token that matches no key is refused with 401.
		if cs, err := connect("not-a-demo-key"); err == nil {
			_, callErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "count_objects", Arguments: map[string]any{"class_name": "Ticket"}})
			t.Errorf("a wrong token connected (the tool call then got %v); want the connection refused with 401", callErr)
		} else if !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("wrong token: %v", err)
		}
		req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`))
		req.Header.Set("Authorization", "Bearer not-a-demo-key")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var msg struct {
			Error struct{ Code int } `json:"error"`
		}
		if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(body, &msg) != nil || msg.Error.Code != -32001 {
			t.Errorf("POST initialize with a wrong token: HTTP %d %.200s; want 401 with a JSON-RPC -32001 error", resp.StatusCode, body)
		}
	})
}

// analystTicketCount is the ground truth of the analyst's Ticket count,
// computed from a separately generated copy of the same demo dataset: the
// Acme tickets whose ACL admits one of the analyst's entries (roles
// Manager and org-acme, and Support and Sales, which Manager inherits).
func analystTicketCount(t *testing.T) int {
	n := 0
	for _, r := range demoTickets(t) {
		if org, _ := r["org"].(map[string]any); org["objectId"] != demo.OrgAcmeID {
			continue
		}
		acl, ok := r[parse.FieldACL].(map[string]any)
		if !ok {
			n++ // no ACL: public
			continue
		}
		for _, e := range []string{"*", "role:Manager", "role:org-acme", "role:Support", "role:Sales"} {
			if p, _ := acl[e].(map[string]any); p["read"] == true {
				n++
				break
			}
		}
	}
	if n == 0 {
		t.Fatal("no Acme ticket in the ground truth")
	}
	return n
}

func allTicketCount(t *testing.T) int { return len(demoTickets(t)) }

var demoTicketRows []parse.Object

func demoTickets(t *testing.T) []parse.Object {
	t.Helper()
	if demoTicketRows != nil {
		return demoTicketRows
	}
	ctx := context.Background()
	st, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "truth.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := demo.Generate(ctx, st, demo.Options{Rows: 600}); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: demo.ClassTicket, Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	demoTicketRows = rows
	return rows
}
