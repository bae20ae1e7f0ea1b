package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/tools"
)

// The layers agent.MayCall judges a tool by; a refusal of any other kind
// (clp, invalid_argument, ...) comes after the tool was let through.
var mayCallKinds = []string{"permission_tier", "operator_only", "tool_filtered", "env_gate", "token_scope", "token_team"}

// mayCallCodes are the error codes its refusals travel under.
var mayCallCodes = []any{"permission_denied", "tool_filtered", "access_denied"}

// Listing, calling and would_permit give one answer for every tool, under
// every tier, tool filter, personal access token, operator gate and
// introspection switch (the operator-only tools): a
// tool is listed by tools/list, by the list_tools tool and by GET /tools
// exactly when a call of it passes the tool layer (is not refused with
// one of MayCall's kinds), and exactly when would_permit says allowed.
// would_permit and list_tools are themselves tools: where the agent may
// not call them (would_permit needs the admin tier and a policy exposing
// it), their answer is the refusal, which agrees with their absence from
// the listings.
func TestListingCallingAndWouldPermitAgree(t *testing.T) {
	var names []string
	for _, tl := range tools.NewRegistry().List() {
		names = append(names, tl.Name)
	}
	filters := map[string]agent.NameFilter{
		"no filter": {},
		"only":      {Only: []string{"would_permit", "list_tools", "query_class", "create_object", "get_schema", "create_class", "call_method"}},
		"except":    {Except: []string{"query_class", "create_object", "delete_class"}},
	}
	tokens := map[string]*agent.TokenScope{
		"no token":        nil,
		"read-only token": {ID: "ro"},
		"write token":     {ID: "rw", Write: true},
	}
	gates := map[string]agent.Gates{
		"gates closed": {},
		"gates open":   {WriteTools: true, SchemaOps: true, RawCRUD: true, RawSchema: true},
	}
	allowed, refused := 0, 0
	for _, tier := range []agent.Permission{agent.Readonly, agent.Write, agent.Admin} {
		for fname, filter := range filters {
			for tname, token := range tokens {
				for gname, g := range gates {
					for _, intro := range []bool{false, true} {
						t.Run(fmt.Sprintf("%s/%s/%s/%s/introspection=%v", tier, fname, tname, gname, intro), func(t *testing.T) {
							a, r := agreement(t, tier, filter, token, g, intro, names)
							allowed += a
							refused += r
						})
					}
				}
			}
		}
	}
	if allowed == 0 || refused == 0 {
		t.Fatalf("the table never exercised both answers: %d allowed, %d refused", allowed, refused)
	}
}

func agreement(t *testing.T, tier agent.Permission, filter agent.NameFilter, token *agent.TokenScope, g agent.Gates, intro bool, names []string) (allowed, refused int) {
	srv, err := mcpserver.New(mcpserver.Options{Store: fixtureStore(t), ToolConfig: mcpserverToolConfig(g),
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			a := agent.New(tier, master)
			a.Policy.Tools = filter
			a.Policy.Introspection = intro
			a.Token = token
			return a, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cs := connect(t, srv, "")

	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, tl := range res.Tools {
		listed = append(listed, tl.Name)
	}

	ts := httptest.NewServer(srv.Mux(mcpserver.HTTPOptions{}))
	t.Cleanup(ts.Close)
	resp, err := http.Get(ts.URL + "/tools")
	if err != nil {
		t.Fatal(err)
	}
	var catalog struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	err = json.NewDecoder(resp.Body).Decode(&catalog)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var rest []string
	for _, tl := range catalog.Tools {
		rest = append(rest, tl.Name)
	}

	// list_tools, when the agent may call it.
	var listTools []string
	haveListTools := slices.Contains(listed, "list_tools")
	if haveListTools {
		out := ok(t, cs, "list_tools", map[string]any{})
		for _, e := range out["tools"].([]any) {
			listTools = append(listTools, e.(map[string]any)["name"].(string))
		}
	}
	haveWouldPermit := slices.Contains(listed, "would_permit")

	for _, name := range names {
		out, isErr := call(t, cs, name, map[string]any{})
		details, _ := out["details"].(map[string]any)
		kind, _ := details["kind"].(string)
		passes := !(isErr && slices.Contains(mayCallCodes, out["error_code"]) && slices.Contains(mayCallKinds, kind))
		if passes {
			allowed++
		} else {
			refused++
		}
		for _, l := range []struct {
			what   string
			have   bool
			listed []string
		}{{"tools/list", true, listed}, {"GET /tools", true, rest}, {"list_tools", haveListTools, listTools}} {
			if l.have && slices.Contains(l.listed, name) != passes {
				t.Errorf("%s: %s lists it: %v; the call passes the tool layer: %v (%v)", name, l.what, !passes, passes, out)
			}
		}
		if haveWouldPermit {
			v := ok(t, cs, "would_permit", map[string]any{"tool": name})
			if v["allowed"] != passes {
				t.Errorf("%s: would_permit says %v; the call passes the tool layer: %v (%v)", name, v, passes, out)
			}
			if !passes && v["reason"] != kind {
				t.Errorf("%s: would_permit's reason %v, the call's refusal %s", name, v["reason"], kind)
			}
		}
	}
	// The listings' own tools agree with the calls too.
	if slices.Contains(listed, "would_permit") != haveWouldPermit || haveListTools != slices.Contains(rest, "list_tools") {
		t.Errorf("the listings disagree about list_tools or would_permit: %v / %v", listed, rest)
	}
	return allowed, refused
}
