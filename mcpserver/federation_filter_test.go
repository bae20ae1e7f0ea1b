package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// A policy's tool filter names remote tools as clients see them, one by
// one ("device-d1__set_point") or all of an agent's ("device-d2__*"). A
// remote tool the filter denies is in no listing (tools/list, the
// list_tools and describe_agent tools, GET /tools) and its calls are
// refused before they reach the agent; the tools it allows answer.
func TestFederationToolFilterNamesRemoteTools(t *testing.T) {
	w := newFedWorld(t)
	for _, c := range []struct {
		name            string
		filter          agent.NameFilter
		visible, hidden []string
	}{
		{"except", agent.NameFilter{Except: []string{"device-d2__*", "device-d1__set_point"}},
			[]string{"query_class", "list_tools", "device-d1__read_sensor"}, []string{"device-d2__ping", "device-d1__set_point"}},
		{"only", agent.NameFilter{Only: []string{"list_tools", "describe_agent", "would_permit", "device-d1__*"}},
			[]string{"list_tools", "device-d1__read_sensor", "device-d1__set_point"}, []string{"query_class", "device-d2__ping"}},
		{"only an agent's prefix, except one", agent.NameFilter{Only: []string{"list_tools", "describe_agent", "would_permit", "device-*"}, Except: []string{"device-d1__set_point"}},
			[]string{"device-d1__read_sensor", "device-d2__ping"}, []string{"count_objects", "device-d1__set_point"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := fedServer(t, w, mcpserver.Options{}, func() *agent.Agent {
				a := agent.New(agent.Admin, master) // describe_agent needs admin
				a.Policy.Tools = c.filter
				a.Policy.Introspection = true
				return a
			})
			cs := connect(t, srv, "")
			listings := map[string][]string{"tools/list": listed(t, cs)}
			for _, tool := range ok(t, cs, "list_tools", map[string]any{})["tools"].([]any) {
				listings["list_tools"] = append(listings["list_tools"], tool.(map[string]any)["name"].(string))
			}
			for _, tool := range ok(t, cs, "list_tools", map[string]any{"category": "remote"})["tools"].([]any) {
				if name := tool.(map[string]any)["name"].(string); !strings.Contains(name, "__") {
					t.Errorf("list_tools of category remote lists %s", name)
				} else {
					listings["list_tools remote"] = append(listings["list_tools remote"], name)
				}
			}
			for _, name := range ok(t, cs, "describe_agent", map[string]any{})["tools"].(map[string]any)["effective"].([]any) {
				listings["describe_agent"] = append(listings["describe_agent"], name.(string))
			}
			hs := httptest.NewServer(srv.Mux(mcpserver.HTTPOptions{}))
			defer hs.Close()
			resp, err := http.Get(hs.URL + "/tools")
			if err != nil {
				t.Fatal(err)
			}
			var catalog struct{ Tools []struct{ Name string } }
			err = json.NewDecoder(resp.Body).Decode(&catalog)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("GET /tools: %d %v", resp.StatusCode, err)
			}
			for _, tool := range catalog.Tools {
				listings["GET /tools"] = append(listings["GET /tools"], tool.Name)
			}
			for where, names := range listings {
				for _, v := range c.visible {
					if !has(names, v) && (where != "list_tools remote" || strings.Contains(v, "__")) {
						t.Errorf("%s lacks %s: %v", where, v, names)
					}
				}
				for _, h := range c.hidden {
					if has(names, h) {
						t.Errorf("%s lists the denied %s: %v", where, h, names)
					}
				}
			}
			for _, h := range c.hidden {
				if v := ok(t, cs, "would_permit", map[string]any{"tool": h}); v["allowed"] == true {
					t.Errorf("would_permit allows the denied %s: %v", h, v)
				}
			}
			if v := ok(t, cs, "would_permit", map[string]any{"tool": "device-d1__read_sensor"}); v["allowed"] != true {
				t.Errorf("would_permit refuses an allowed remote tool: %v", v)
			}
			before := w.calls.Load()
			for _, h := range c.hidden {
				denied(t, cs, h, "tool_filtered", "not available to this agent")
			}
			if w.calls.Load() != before {
				t.Fatal("a call of a denied remote tool reached its agent")
			}
			res, err := cs.CallTool(fedBound(t), &mcp.CallToolParams{Name: "device-d1__read_sensor"})
			if err != nil || res.IsError || w.calls.Load() != before+1 {
				t.Fatalf("an allowed remote tool: %v %v", res, err)
			}
		})
	}
}
