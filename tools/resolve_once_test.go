package tools_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/tools"
)

// schemaCounter is the fixture's real SQLite store, counting how often
// each class's schema is looked up. It keeps the JSON path of the store
// (store.JSONFinder) and its shared schemas, so the tools run the way
// they run in the server.
type schemaCounter struct {
	store.Store
	mu      sync.Mutex
	lookups map[string]int
}

func (c *schemaCounter) count(class string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lookups[class]++
}

func (c *schemaCounter) Schema(ctx context.Context, class string) (parse.Schema, error) {
	c.count(class)
	return c.Store.Schema(ctx, class)
}

func (c *schemaCounter) SharedSchema(ctx context.Context, class string) (parse.Schema, error) {
	c.count(class)
	return c.Store.(store.SharedSchemas).SharedSchema(ctx, class)
}

func (c *schemaCounter) Explain(ctx context.Context, q *query.Query) (store.Plan, error) {
	return c.Store.(store.Explainer).Explain(ctx, q)
}

func (c *schemaCounter) FindJSON(ctx context.Context, q *query.Query, shown func(string) bool) ([]json.RawMessage, error) {
	return c.Store.(store.JSONFinder).FindJSON(ctx, q, shown)
}

// A read tool resolves its class once: the schema it parses the
// arguments against, the rules of the class and the fields the rows are
// redacted to all come from that one lookup (agent.Class), not from the
// tool and the scope asking the store again and again.
func TestReadToolsResolveTheirClassOnce(t *testing.T) {
	base := fixture.Store(t, filepath.Join(t.TempDir(), "fixture.sqlite"))
	_, shares := base.(store.SharedSchemas)
	_, explains := base.(store.Explainer)
	if _, encodes := base.(store.JSONFinder); !shares || !explains || !encodes {
		t.Fatal("the SQLite store lost an optional interface this test relies on")
	}
	reg := tools.NewRegistry()
	where := map[string]any{"status": "open"}
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"query_class", map[string]any{"class_name": "Ticket", "where": where, "order": "-priority"}},
		{"count_objects", map[string]any{"class_name": "Ticket", "where": where}},
		{"get_object", map[string]any{"class_name": "Project", "object_id": "pApollo001"}},
		{"get_objects", map[string]any{"class_name": "Project", "ids": []string{"pApollo001", "pBorealis2"}}},
		{"get_sample_objects", map[string]any{"class_name": "Ticket"}},
		{"explain_query", map[string]any{"class_name": "Ticket", "where": where}},
		{"export_data", map[string]any{"class_name": "Ticket", "where": where}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			st := &schemaCounter{Store: base, lookups: map[string]int{}}
			tool, ok := reg.Get(tc.tool)
			if !ok {
				t.Fatalf("no tool %s", tc.tool)
			}
			raw, err := json.Marshal(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			a := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthMaster})
			cfg := tools.DefaultConfig
			if _, err := tool.Handler(context.Background(), &tools.Call{Scope: agent.NewScope(a, st), Args: raw, Registry: reg, Config: &cfg}); err != nil {
				t.Fatalf("%s: %v", tc.tool, err)
			}
			class := tc.args["class_name"].(string)
			if n := st.lookups[class]; n != 1 {
				t.Errorf("%s looked up the schema of %s %d times, want once (all lookups: %v)", tc.tool, class, n, st.lookups)
			}
		})
	}
}
