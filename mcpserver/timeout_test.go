package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
)

// A query that runs past its tool's time limit is interrupted in the
// database and reported as a timeout; the server keeps serving.
func TestToolTimeout(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	big := parse.NewSchema("Big")
	big.Fields["title"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, big); err != nil {
		t.Fatal(err)
	}
	objs := make([]parse.Object, 0, 40000)
	for i := range 40000 {
		objs = append(objs, parse.Object{"title": fmt.Sprintf("%08d %s", i*7919%40000, strings.Repeat("ab", 40))})
	}
	if err := st.Create(ctx, "Big", objs); err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.New(mcpserver.Options{Store: st, Timeouts: map[string]time.Duration{"count_objects": 5 * time.Millisecond},
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := connect(t, srv, "")
	// Every row runs 30 regular expressions: far longer than 5 ms.
	var ors []any
	for i := range 30 {
		ors = append(ors, map[string]any{"title": map[string]any{"$regex": fmt.Sprintf("^%d.*(ab){20}b$", i)}})
	}
	e := fails(t, cs, "count_objects", map[string]any{"class_name": "Big", "where": map[string]any{"$or": ors}}, "timeout")
	if !strings.Contains(e["error"].(string), "time limit") {
		t.Fatalf("timeout message: %v", e)
	}
	// Other tools keep their own limits, and the server still answers.
	out := ok(t, cs, "query_class", map[string]any{"class_name": "Big", "limit": 1})
	if out["result_count"] != 1.0 {
		t.Fatalf("after a timeout: %v", out)
	}
}
