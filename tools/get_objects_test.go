package tools_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// Objects by id, keyed by id; the ids not found are listed, duplicates
// count once.
func TestGetObjects(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	out := e.ok("get_objects", map[string]any{"class_name": "Ticket", "ids": []string{t3, t1, "t999999999", t3}, "include": []string{"project"}})
	if d := cmp.Diff([]string{t1, t3}, keysOf(out["objects"].(map[string]any))); d != "" {
		t.Fatalf("objects (-want +got):\n%s", d)
	}
	if !cmp.Equal(out["missing"], []any{"t999999999"}) || out["requested"] != float64(3) || out["found"] != float64(2) {
		t.Fatalf("counts: %v", out)
	}
	ice := out["objects"].(map[string]any)[t3].(map[string]any)
	if ice["title"] != "Ice survey" || ice["project"].(map[string]any)["name"] != "Borealis" {
		t.Fatalf("%s: %v", t3, ice)
	}
}

// An object the caller may not read is missing, like one that does not
// exist.
func TestGetObjectsACL(t *testing.T) {
	out := newEnv(t, asUser(agent.Readonly, "uAlice0001")).ok("get_objects", map[string]any{"class_name": "Ticket", "ids": []string{t5, t1, "t999999999"}})
	if !cmp.Equal(out["missing"], []any{t5, "t999999999"}) || out["found"] != float64(1) {
		t.Fatalf("%v", out)
	}
	mustNotMention(t, out, "Hidden task")
}

// At most MaxGetObjects ids, at least one, each an objectId.
func TestGetObjectsArguments(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	var many []string
	for i := range tools.MaxGetObjects + 1 {
		many = append(many, fmt.Sprintf("x%09d", i))
	}
	e.refused("get_objects", map[string]any{"class_name": "Ticket", "ids": many}, tools.CodeInvalidArgument, `argument "ids" holds 51 items; at most 50`)
	e.refused("get_objects", map[string]any{"class_name": "Ticket", "ids": []string{}}, tools.CodeInvalidArgument, `argument "ids" must hold at least 1 items`)
	e.refused("get_objects", map[string]any{"class_name": "Ticket"}, tools.CodeInvalidArgument, `argument "ids" is required`)
	e.refused("get_objects", map[string]any{"class_name": "Ticket", "ids": []string{t1, "../etc"}}, tools.CodeInvalidArgument, `argument "ids": "../etc" is not an objectId`)
	e.refused("get_objects", map[string]any{"class_name": "Ticket", "ids": t1}, tools.CodeInvalidArgument, `argument "ids" must be an array`)
	e.refused("get_objects", map[string]any{"class_name": "Nope", "ids": []string{t1}}, classNotFound, `class "Nope" was not found`)
}

// The found objects that do not fit the response budget are fetched by
// next_call, which names exactly those.
func TestGetObjectsResponseBudget(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	e.budget = 700
	all := []string{t1, t2, t3, t4, t5}
	out := e.ok("get_objects", map[string]any{"class_name": "Ticket", "ids": all})
	got := keysOf(out["objects"].(map[string]any))
	if out["truncated"] != true || len(got) == 0 || len(got) == len(all) {
		t.Fatalf("not cut: %v", out)
	}
	rest := out["next_call"].(map[string]any)["arguments"].(map[string]any)["ids"]
	var want []any
	for _, id := range all[len(got):] {
		want = append(want, id)
	}
	if d := cmp.Diff(want, rest); d != "" {
		t.Fatalf("next_call's ids (-want +got):\n%s", d)
	}
	for {
		out = e.next("get_objects", out)
		got = append(got, keysOf(out["objects"].(map[string]any))...)
		if out["next_call"] == nil {
			break
		}
	}
	if d := cmp.Diff(all, got); d != "" {
		t.Fatalf("over the calls (-want +got):\n%s", d)
	}
}
