package mcpserver_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
)

// The response cap: query_class drops the heaviest field, then trailing
// rows, and says so; other tools refuse with a diagnostic that names fields
// but never shows values.
func TestResponseByteCap(t *testing.T) {
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
	srv, err := mcpserver.New(mcpserver.Options{Store: st, MaxResponseBytes: 100_000,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs := connect(t, srv, "")

	// Dropping body is enough: every row stays, no next_skip.
	out := ok(t, cs, "query_class", map[string]any{"class_name": "Doc", "limit": 30, "order": "objectId"})
	tr := out["_truncated"].(map[string]any)
	if tr["kept_count"] != 30.0 || tr["original_count"] != 30.0 || tr["next_skip"] != nil || fmt.Sprint(tr["dropped_fields"]) != "[body]" {
		t.Fatalf("_truncated: %v", tr)
	}
	if _, has := out["results"].([]any)[0].(map[string]any)["body"]; has || len(out["results"].([]any)) != 30 {
		t.Fatal("body must be dropped from every row")
	}
	// Many rows of a smaller payload: rows are trimmed and next_skip resumes.
	srv2, err := mcpserver.New(mcpserver.Options{Store: st, MaxResponseBytes: 2500,
		Agents: func(context.Context, mcpserver.RequestInfo) (*agent.Agent, error) {
			return agent.New(agent.Readonly, master), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv2.Close()
	cs2 := connect(t, srv2, "")
	out = ok(t, cs2, "query_class", map[string]any{"class_name": "Doc", "limit": 20, "skip": 5, "order": "objectId", "keys": []string{"title", "body"}})
	tr = out["_truncated"].(map[string]any)
	kept := int(tr["kept_count"].(float64))
	if kept == 0 || kept >= 20 || tr["next_skip"] != float64(5+kept) || out["next_call"] != nil {
		t.Fatalf("trimmed page: %v", out)
	}
	if first := out["results"].([]any)[0].(map[string]any)["objectId"]; first != "doc0000005" {
		t.Fatalf("the page starts at skip 5: %v", first)
	}
	if !strings.Contains(tr["hint"].(string), fmt.Sprintf("skip %d", 5+kept)) {
		t.Fatalf("hint: %v", tr["hint"])
	}

	// Other tools refuse, naming the heavy field and a keys list without it.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"get_objects", map[string]any{"class_name": "Doc", "ids": []string{"doc0000001", "doc0000002", "doc0000003", "doc0000004", "doc0000005", "doc0000006"}}},
		{"aggregate", map[string]any{"class_name": "Doc", "pipeline": `[{"$limit": 10}]`}},
	} {
		e := fails(t, cs, c.tool, c.args, "too_large")
		msg := e["error"].(string)
		d := e["details"].(map[string]any)
		if strings.Contains(msg, "SECRET-BODY") || strings.Contains(fmt.Sprint(d), "SECRET-BODY") {
			t.Fatalf("%s: the diagnostic shows values: %s", c.tool, msg)
		}
		if !strings.Contains(msg, "body (~") || fmt.Sprint(d["suggested_keys"]) != "[createdAt objectId title updatedAt]" {
			t.Fatalf("%s diagnostic: %s %v", c.tool, msg, d)
		}
	}
	ok(t, cs, "get_object", map[string]any{"class_name": "Doc", "object_id": "doc0000001"}) // one row fits
}
