package tools_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/tools"
)

func suggestion(value any, count float64) any { return map[string]any{"value": value, "count": count} }

// autocomplete lists the values of a String field that start with the
// prefix, in any case, most frequent first (ties by value); the prefix is
// literal text, never a pattern; the caller's ACL and where narrow the
// rows counted.
func TestAutocomplete(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	for _, c := range []struct {
		args map[string]any
		want []any
	}{
		{map[string]any{"class_name": "Ticket", "field": "status", "prefix": "O"}, []any{suggestion("open", 3)}},
		{map[string]any{"class_name": "Ticket", "field": "status", "prefix": "i"}, []any{suggestion("in_progress", 1)}},
		{map[string]any{"class_name": "Ticket", "field": "title", "prefix": "fuel l"}, []any{suggestion("Fuel leak", 1)}},
		{map[string]any{"class_name": "Ticket", "field": "status", "prefix": "o", "where": map[string]any{"priority": map[string]any{"$lt": 3}}}, []any{suggestion("open", 2)}},
		{map[string]any{"class_name": "Ticket", "field": "status", "prefix": ".*"}, []any{}},
		{map[string]any{"class_name": "Ticket", "field": "status", "prefix": "in_(", "limit": 1}, []any{}},
	} {
		out := e.ok("autocomplete", c.args)
		if d := cmp.Diff(c.want, out["suggestions"]); d != "" {
			t.Errorf("%v (-want +got):\n%s", c.args, d)
		}
	}
	// Counts are of the rows the caller may read (t5 is master-only).
	alice := e.as(asUser(agent.Readonly, fixture.Alice))
	if d := cmp.Diff([]any{suggestion("open", 2)}, alice.ok("autocomplete", map[string]any{"class_name": "Ticket", "field": "status", "prefix": "op"})["suggestions"]); d != "" {
		t.Errorf("alice (-want +got):\n%s", d)
	}
	e.refused("autocomplete", map[string]any{"class_name": "Ticket", "field": "priority", "prefix": "1"}, tools.CodeInvalidArgument, "String fields")
	e.refused("autocomplete", map[string]any{"class_name": "Project", "field": "meta.plan", "prefix": "p"}, tools.CodeInvalidArgument, `"meta.plan" is a path into meta`)
	e.refused("autocomplete", map[string]any{"class_name": "Ticket", "field": "status", "prefix": " "}, tools.CodeInvalidArgument, "prefix")
	e.refused("autocomplete", map[string]any{"class_name": "Ticket", "field": "status", "prefix": strings.Repeat("é", tools.MaxPrefix+1)}, tools.CodeInvalidArgument, "more than 200")
	if got := e.ok("autocomplete", map[string]any{"class_name": "Ticket", "field": "status", "prefix": strings.Repeat("é", tools.MaxPrefix)})["suggestions"]; len(got.([]any)) != 0 {
		t.Errorf("a %d-character prefix: %v", tools.MaxPrefix, got)
	}
	alice.refused("autocomplete", map[string]any{"class_name": "_User", "field": "email", "prefix": "a"}, fieldDenied, `field: "email" is not a field of _User`)
}
