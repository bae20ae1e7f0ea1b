package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
)

// The catalog stays compact: the where-language and the pipeline stages
// are documented once, in a resource each tool points to.
func TestCatalogSize(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Admin"}}), "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	t.Logf("tools/list: %d tools, %d bytes", len(res.Tools), len(b))
	if len(b) > mcpserver.MaxAnalystCatalogBytes {
		for _, tl := range res.Tools {
			tb, _ := json.Marshal(tl)
			t.Logf("  %s: %d bytes", tl.Name, len(tb))
		}
		t.Fatalf("tools/list is %d bytes, over %d", len(b), mcpserver.MaxAnalystCatalogBytes)
	}
	if n := strings.Count(string(b), "$nearSphere"); n > 0 {
		t.Fatalf("the where-language is spelled out %d times in the catalog", n)
	}
}

// Arguments are checked against the declared schema once, before the
// tool runs; the refusal names the argument.
func TestArgsCheckedAgainstSchema(t *testing.T) {
	cs := connect(t, newServer(t, fixtureStore(t), agent.Readonly, master), "")
	for _, c := range []struct {
		tool string
		args map[string]any
		arg  string
		msg  string
	}{
		{"group_by", map[string]any{"class_name": "Ticket", "field": "status", "limit": 1001}, "limit", "between 1 and 1000"},
		{"distinct", map[string]any{"class_name": "Ticket", "field": "status", "skip": -1}, "skip", "at least 0"},
		{"query_class", map[string]any{"class_name": "Ticket", "limit": 2.5}, "limit", "whole number"},
		{"group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt"}, "interval", "is required"},
		{"get_objects", map[string]any{"class_name": "Ticket", "ids": []string{}}, "ids", "at least 1"},
		// Closed sets: the enum of the declared schema, named in the error.
		{"export_data", map[string]any{"class_name": "Ticket", "format": "pdf"}, "format", `must be one of csv, markdown or table; got "pdf"`},
		{"group_by", map[string]any{"class_name": "Ticket", "field": "status", "operation": "median"}, "operation", "one of count, sum, avg, min or max"},
		{"group_by", map[string]any{"class_name": "Ticket", "field": "status", "sort": "random"}, "sort", "one of value_desc, value_asc, key_asc or key_desc"},
		{"group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "fortnight"}, "interval", "one of second, minute, hour"},
		{"distinct", map[string]any{"class_name": "Ticket", "field": "status", "sort": 1}, "sort", "one of asc or desc; got 1"},
		{"list_tools", map[string]any{"category": "everything"}, "category", "one of schema, query"},
	} {
		e := fails(t, cs, c.tool, c.args, "invalid_argument")
		if d, _ := e["details"].(map[string]any); d["argument"] != c.arg || !strings.Contains(e["error"].(string), c.msg) {
			t.Errorf("%s %v: %v", c.tool, c.args, e)
		}
	}
	// A member in another case, with spaces, or under a common alias is
	// that member.
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"group_by", map[string]any{"class_name": "Ticket", "field": "status", "operation": " Average ", "value_field": "priority", "sort": "KEY_ASC"}},
		{"group_by_date", map[string]any{"class_name": "Ticket", "field": "createdAt", "interval": "Day"}},
		{"distinct", map[string]any{"class_name": "Ticket", "field": "status", "sort": "DESC"}},
		{"export_data", map[string]any{"class_name": "Ticket", "format": "md"}},
	} {
		ok(t, cs, c.tool, c.args)
	}
}
