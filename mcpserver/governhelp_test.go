package mcpserver_test

import (
	"context"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

// allGates opens every operator gate.
var allGates = agent.Gates{WriteTools: true, SchemaOps: true, RawCRUD: true, RawSchema: true}

// agentServer builds a server over st under gates whose agents come from
// mk (called once per request, like a real factory).
func agentServer(t *testing.T, st store.Store, gates agent.Gates, mk func() *agent.Agent) *mcpserver.Server {
	t.Helper()
	cfg := tools.DefaultConfig
	cfg.Gates = gates
	srv, err := mcpserver.New(mcpserver.Options{Store: st, ToolConfig: &cfg, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		return mk(), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// policyAgent returns a factory of agents with tier perm, identity id and
// policy p.
func policyAgent(perm agent.Permission, id agent.Identity, p agent.Policy) func() *agent.Agent {
	return func() *agent.Agent {
		a := agent.New(perm, id)
		a.Policy = p
		return a
	}
}

// govClient connects a client to a server with those agents.
func govClient(t *testing.T, st store.Store, gates agent.Gates, perm agent.Permission, id agent.Identity, p agent.Policy) *mcp.ClientSession {
	t.Helper()
	return connect(t, agentServer(t, st, gates, policyAgent(perm, id, p)), "")
}

// refused calls a tool that must fail with exactly this code, message and
// details.kind.
func refused(t *testing.T, cs *mcp.ClientSession, name string, args any, code, kind, msg string) {
	t.Helper()
	out := fails(t, cs, name, args, code)
	if out["error"] != msg {
		t.Errorf("%s(%v): message\n got %q\nwant %q", name, args, out["error"], msg)
	}
	var got any
	if d, ok := out["details"].(map[string]any); ok {
		got = d["kind"]
	}
	if kind != "" && got != kind {
		t.Errorf("%s(%v): details.kind %v, want %s", name, args, got, kind)
	}
}

// listed returns the names tools/list shows, sorted.
func listed(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	return names
}

func has(list []string, name string) bool {
	for _, n := range list {
		if n == name {
			return true
		}
	}
	return false
}

// readObject reads class/id with the master key; nil when it is gone.
func readObject(t *testing.T, master *mcp.ClientSession, class, id string) map[string]any {
	t.Helper()
	out, isErr := call(t, master, "get_object", map[string]any{"class_name": class, "object_id": id})
	if isErr {
		if out["error_code"] != "not_found" {
			t.Fatalf("read back %s#%s: %v", class, id, out)
		}
		return nil
	}
	return out["object"].(map[string]any)
}

// unchanged asserts that class/id reads the same as before.
func unchanged(t *testing.T, master *mcp.ClientSession, class, id string, before map[string]any) {
	t.Helper()
	if d := cmp.Diff(before, readObject(t, master, class, id)); d != "" {
		t.Fatalf("%s#%s changed (-before +after):\n%s", class, id, d)
	}
}
