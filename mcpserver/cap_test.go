package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// docStore holds 30 Doc rows, each with a 20 KB body.
func docStore(t *testing.T) store.Store {
	t.Helper()
	ctx := context.Background()
	st := fixtureStore(t)
	doc := parse.NewSchema("Doc")
	doc.Fields["title"] = parse.Field{Type: parse.TypeString}
	doc.Fields["body"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, doc); err != nil {
		t.Fatal(err)
	}
	var objs []parse.Object
	for i := range 30 {
		objs = append(objs, parse.Object{"objectId": fmt.Sprintf("doc%07d", i), "title": fmt.Sprintf("title %02d %s", i, strings.Repeat("t", 150)),
			"body": "SECRET-BODY " + strings.Repeat("x", 20000)})
	}
	if err := st.Create(ctx, "Doc", objs); err != nil {
		t.Fatal(err)
	}
	return st
}

func budgetServer(t *testing.T, st store.Store, budget int, perTool map[string]int) *mcpserver.Server {
	t.Helper()
	srv, err := mcpserver.New(mcpserver.Options{Store: st, MaxResponseBytes: budget, ResponseBudgets: perTool,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// The response budget: large values are elided with their size unless
// asked for; listings keep the rows that fit and continue exactly where
// they stopped; other results over the budget are refused with a
// diagnostic that names fields but never shows values.
func TestResponseBudget(t *testing.T) {
	st := docStore(t)
	cs := connect(t, budgetServer(t, st, 100_000, nil), "")

	// Default keys: body is elided in every row, every row stays.
	out := ok(t, cs, "query_class", map[string]any{"class_name": "Doc", "limit": 30, "order": "objectId"})
	rows := out["results"].([]any)
	if len(rows) != 30 || fmt.Sprint(out["elided_fields"]) != "[body]" || out["truncated"] != nil {
		t.Fatalf("elided page: %d rows, elided %v truncated %v", len(rows), out["elided_fields"], out["truncated"])
	}
	if b := rows[0].(map[string]any)["body"]; fmt.Sprint(b) != "map[elided_bytes:20014]" {
		t.Fatalf("elided body: %v", b)
	}

	// Asked for by keys, body is sent and the page is cut to the budget,
	// which holds the result twice (text and structuredContent).
	cs2 := connect(t, budgetServer(t, st, 120_000, nil), "")
	var seen []string
	args := map[string]any{"class_name": "Doc", "limit": 7, "skip": 5, "order": "objectId", "keys": []string{"title", "body"}}
	for range 30 {
		res, isErr := call(t, cs2, "query_class", args)
		if isErr {
			t.Fatalf("page: %v", res)
		}
		got := ids(res["results"])
		seen = append(seen, got...)
		if b, _ := json.Marshal(res); 2*len(b) > 120_000 {
			t.Fatalf("page of %d bytes over the budget", len(b))
		}
		nc, _ := res["next_call"].(map[string]any)
		if nc == nil {
			break
		}
		if len(got) == 0 || res["truncated"] != true {
			t.Fatalf("a page with a next_call: %v", res)
		}
		args = nc["arguments"].(map[string]any)
	}
	var want []string
	for i := 5; i < 30; i++ {
		want = append(want, fmt.Sprintf("doc%07d", i))
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("following next_call: %v", seen)
	}

	// The first page says how many rows it left out.
	res := ok(t, cs2, "query_class", map[string]any{"class_name": "Doc", "limit": 7, "order": "objectId", "keys": []string{"body"}})
	if n := len(res["results"].([]any)); n != 2 || res["rows_left_out"] != 5.0 || res["pagination"].(map[string]any)["has_more"] != true {
		t.Fatalf("cut page: %d rows, %v left out", n, res["rows_left_out"])
	}

	// aggregate rows are cut too; its next_call skips what was sent.
	res = ok(t, cs2, "aggregate", map[string]any{"class_name": "Doc", "pipeline": `[{"$sort":{"objectId":1}},{"$limit": 4}]`})
	if got := ids(res["results"]); len(got) != 2 || res["rows_left_out"] != 2.0 {
		t.Fatalf("aggregate: %v %v", got, res["rows_left_out"])
	}
	nc := res["next_call"].(map[string]any)["arguments"].(map[string]any)
	res = ok(t, cs2, "aggregate", nc)
	if got := ids(res["results"]); fmt.Sprint(got) != "[doc0000002 doc0000003]" || res["next_call"] != nil {
		t.Fatalf("aggregate next: %v %v", got, nc)
	}

	// get_objects keeps what fits and asks for the rest by id.
	cs3 := connect(t, budgetServer(t, st, 2500, map[string]int{"get_object": 60_000}), "")
	res = ok(t, cs3, "get_objects", map[string]any{"class_name": "Doc", "ids": []string{"doc0000001", "doc0000002", "doc0000003", "doc0000004", "doc0000005", "doc0000006", "doc0000007", "doc0000008", "doc0000009", "doc0000010", "docmissing"}})
	kept := len(res["objects"].(map[string]any))
	rest := res["next_call"].(map[string]any)["arguments"].(map[string]any)["ids"].([]any)
	if kept == 0 || kept+len(rest) != 10 || res["rows_left_out"] != float64(len(rest)) || fmt.Sprint(res["missing"]) != "[docmissing]" {
		t.Fatalf("get_objects: %d kept, rest %v, %v", kept, rest, res)
	}

	// get_object sends the object in full; over its budget it is refused.
	ok(t, cs3, "get_object", map[string]any{"class_name": "Doc", "object_id": "doc0000001"}) // per-tool budget
	cs4 := connect(t, budgetServer(t, st, 2500, nil), "")
	e := fails(t, cs4, "get_object", map[string]any{"class_name": "Doc", "object_id": "doc0000001"}, "too_large")
	msg := e["error"].(string)
	d := e["details"].(map[string]any)
	if strings.Contains(msg, "SECRET-BODY") || strings.Contains(fmt.Sprint(d), "SECRET-BODY") {
		t.Fatalf("the diagnostic shows values: %s", msg)
	}
	if !strings.Contains(msg, "body (~") || fmt.Sprint(d["suggested_keys"]) != "[createdAt objectId title updatedAt]" || d["budget_bytes"] != 2500.0 {
		t.Fatalf("diagnostic: %s %v", msg, d)
	}
}
