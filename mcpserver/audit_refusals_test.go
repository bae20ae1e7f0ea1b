package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/audit"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/ratelimit"
	"github.com/parsemcp/parsemcp/tools"
)

// brokenFor is a limiter that cannot decide for one key (its Redis down
// for that shard) and defers to the local one for the others.
type brokenFor struct {
	key  string
	next ratelimit.Limiter
}

func (b brokenFor) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	if key == b.key {
		return false, 0, errors.New("redis: connection refused")
	}
	return b.next.Allow(ctx, key)
}

// Every place a call can be refused leaves exactly one audit event, with
// the refusal's error_code (and denial kind), the agent and the tool; and
// no argument value or credential reaches the audit stream. Each case is
// its own principal over the real HTTP handler (a bearer key per agent);
// the rate limiter allows one call per principal.
func TestAuditEveryRefusal(t *testing.T) {
	var out lockedBuffer
	reg := tools.NewRegistry()
	obj := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"note": {Type: "string"}}}
	for _, tl := range []*tools.Tool{
		{Name: "note_test", Description: "writes, needs no gate", Category: "write", Permission: agent.Write, Input: obj,
			Handler: func(context.Context, *tools.Call) (any, error) { return map[string]any{"ok": true}, nil }},
		{Name: "panic_test", Description: "panics", Category: "query", Permission: agent.Readonly, ReadOnly: true, Input: obj,
			Handler: func(context.Context, *tools.Call) (any, error) { panic("tool bug") }},
		{Name: "big_test", Description: "answers more than its budget", Category: "query", Permission: agent.Readonly, ReadOnly: true, Input: obj,
			Handler: func(context.Context, *tools.Call) (any, error) {
				return map[string]any{"blob": strings.Repeat("x", 4096)}, nil
			}},
	} {
		if err := reg.Register(tl); err != nil {
			t.Fatal(err)
		}
	}
	local, err := ratelimit.NewLocal(1, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), Tools: reg, Audit: audit.NewJSONSink(&out),
		RateLimit: brokenFor{key: "acl_user:u-broken", next: local}, ResponseBudgets: map[string]int{"big_test": 256},
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) { return nil, agent.ErrUnauthorized }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	// The bearer key "key-<name>-s3cr3t" is the agent <name>, user u-<name>.
	agents := func(r *http.Request) (*agent.Agent, error) {
		key, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		name, ok := strings.CutSuffix(strings.TrimPrefix(key, "key-"), "-s3cr3t")
		if !ok || name == "" {
			return nil, agent.ErrUnauthorized
		}
		perm := agent.Readonly
		if strings.HasPrefix(name, "w") {
			perm = agent.Write
		}
		a := agent.New(perm, agent.Identity{Mode: agent.AuthUser, UserID: "u-" + name})
		a.ID = name
		switch name {
		case "filtered":
			a.Policy.Tools = agent.NameFilter{Except: []string{"query_class"}}
		case "wtoken":
			a.Token = &agent.TokenScope{ID: "pat-1"} // read-only token
		}
		return a, nil
	}
	url := mount(t, mcpserver.HandlerOptions{Server: srv, Agent: agents})
	client := func(t *testing.T, name string) *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "audit", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: &bearerTransport{token: "key-" + name + "-s3cr3t"}}, DisableStandaloneSSE: true}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	secret := func(name string) map[string]any { return map[string]any{"note": "SECRET-" + name} }
	type want struct{ tool, code, kind string }
	cases := []struct {
		agent string
		tool  string
		args  map[string]any
		want  []want // the agent's events, in order
	}{
		{"reader", "create_object", map[string]any{"class_name": "Ticket", "object": secret("reader")}, []want{{"create_object", "permission_denied", "permission_tier"}}},
		{"filtered", "query_class", map[string]any{"class_name": "Ticket", "where": secret("filtered")}, []want{{"query_class", "tool_filtered", "tool_filtered"}}},
		{"wgated", "create_object", map[string]any{"class_name": "Ticket", "object": secret("wgated")}, []want{{"create_object", "access_denied", "env_gate"}}},
		{"wtoken", "note_test", secret("wtoken"), []want{{"note_test", "permission_denied", "token_scope"}}},
		{"args", "query_class", map[string]any{"class_name": 42, "where": secret("args")}, []want{{"query_class", "invalid_argument", ""}}},
		{"unknown", "no_such_tool", secret("unknown"), []want{{"no_such_tool", "not_found", ""}}},
		{"broken", "query_class", map[string]any{"class_name": "Ticket", "where": secret("broken")}, []want{{"query_class", "unavailable", "rate_limiter"}}},
		{"panic", "panic_test", secret("panic"), []want{{"panic_test", "internal_error", ""}}},
		{"big", "big_test", secret("big"), []want{{"big_test", "too_large", ""}}},
		{"fields", "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, []want{{"query_class", "access_denied", "field_denied"}}},
		{"storage", "aggregate", map[string]any{"class_name": "Ticket", "pipeline": []any{map[string]any{"$group": map[string]any{"_id": "$_p_project"}}}}, []want{{"aggregate", "access_denied", "storage_form_field_ref"}}},
		{"limited", "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "SECRET-limited"}}, []want{{"count_objects", "", ""}, {"count_objects", "rate_limited", ""}}},
	}
	for _, tc := range cases {
		cs := client(t, tc.agent)
		for range tc.want {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if tc.tool == "no_such_tool" {
				if err == nil {
					t.Fatalf("an unknown tool answered %+v", res)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.agent, err)
			}
		}
	}
	// Every call has been answered, and its event recorded before.
	byAgent := map[string][]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		id, _ := m["agent_id"].(string)
		byAgent[id] = append(byAgent[id], m)
	}
	for _, tc := range cases {
		got := byAgent[tc.agent]
		if len(got) != len(tc.want) {
			t.Errorf("%s: %d events, want %d: %v", tc.agent, len(got), len(tc.want), got)
			continue
		}
		for i, w := range tc.want {
			e := got[i]
			code, _ := e["error_code"].(string)
			kind, _ := e["denial_kind"].(string)
			if e["msg"] != "tool_call" || e["tool"] != w.tool || code != w.code || kind != w.kind || e["success"] != (w.code == "") || e["auth_type"] != "acl_user" {
				t.Errorf("%s: event %d: %v, want tool %s, error_code %q, denial_kind %q", tc.agent, i, e, w.tool, w.code, w.kind)
			}
		}
		delete(byAgent, tc.agent)
	}
	if len(byAgent) != 0 {
		t.Errorf("events of no call: %v", byAgent)
	}
	for _, leak := range []string{"SECRET-", "s3cr3t", "Ticket\"", "pat-1\"}"} {
		if strings.Contains(out.String(), leak) {
			t.Fatalf("the audit stream contains %q:\n%s", leak, out.String())
		}
	}
}
