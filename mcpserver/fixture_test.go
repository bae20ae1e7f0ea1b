package mcpserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/postgres"
)

func fixtureStore(t *testing.T) store.Store {
	return fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
}

// pgFixtureStore is the fixture in a fresh PostgreSQL schema (the test
// skips without PostgreSQL, except in CI).
func pgFixtureStore(t *testing.T) store.Store { return pgFixture(t) }

func pgFixture(t *testing.T) *postgres.Store {
	t.Helper()
	st, err := postgres.Create(context.Background(), pgtest.Schema(t, "fixture"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	fixture.Populate(t, st)
	return st
}

// sqlBackends are the fixture on each SQL store, for the tests that hold
// on both.
var sqlBackends = []struct {
	name  string
	store func(*testing.T) store.Store
}{{"sqlite", fixtureStore}, {"postgres", pgFixtureStore}}

const (
	alice = fixture.Alice
	bob   = fixture.Bob
)

func date(s string) map[string]any { return fixture.Date(s) }

// newServer builds a server over st whose agents all have identity id.
func newServer(t *testing.T, st store.Store, perm agent.Permission, id agent.Identity) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
		return agent.New(perm, id), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv
}

var master = agent.Identity{Mode: agent.AuthMaster}

// connect opens an in-memory client session at a protocol version ("" for the latest).
func connect(t *testing.T, srv *mcpserver.Server, version string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	ct, stt := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, stt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: approveAll})
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %q: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call runs a tool and decodes its structured result; it fails the test
// on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", name, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: want 1 content item, got %d", name, len(res.Content))
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		t.Fatalf("%s: content is not JSON: %v\n%s", name, err, text)
	}
	// structuredContent, when sent, is the text's JSON (encoded once).
	if res.StructuredContent != nil && !reflect.DeepEqual(res.StructuredContent, any(out)) {
		t.Fatalf("%s: structuredContent differs from the text:\n%v\n%s", name, res.StructuredContent, text)
	}
	return out, res.IsError
}

// ok calls a tool that must succeed.
func ok(t *testing.T, cs *mcp.ClientSession, name string, args any) map[string]any {
	t.Helper()
	out, isErr := call(t, cs, name, args)
	if isErr {
		t.Fatalf("%s(%v): unexpected tool error %v", name, args, out)
	}
	return out
}

// fails calls a tool that must fail with code; it returns the message.
func fails(t *testing.T, cs *mcp.ClientSession, name string, args any, code string) map[string]any {
	t.Helper()
	out, isErr := call(t, cs, name, args)
	if !isErr {
		t.Fatalf("%s(%v): want error %s, got success %v", name, args, code, out)
	}
	if out["error_code"] != code {
		t.Fatalf("%s(%v): want error_code %s, got %v (%v)", name, args, code, out["error_code"], out["error"])
	}
	return out
}

// ids extracts the objectIds of a results array.
func ids(v any) []string {
	var out []string
	for _, r := range v.([]any) {
		out = append(out, r.(map[string]any)["objectId"].(string))
	}
	return out
}

// approveAll is the elicitation handler of a client whose person approves
// every destructive change asked of them.
func approveAll(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
}
