package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/tools"
)

// A client written against the reference guide routes failures by its
// error_code values: each situation the guide names arrives under the
// guide's code, with parsemcp's finer reason in details.kind.
func TestGuideErrorCodes(t *testing.T) {
	st := fixtureStore(t)
	cs := govClient(t, st, agent.Gates{}, agent.Write, bobID, agent.Policy{
		Tools:   agent.NameFilter{Except: []string{"export_data"}},
		Classes: agent.NameFilter{Except: []string{"Payroll"}},
	})
	refused(t, cs, "export_data", map[string]any{"class_name": "Ticket"}, "tool_filtered", "tool_filtered", "tool export_data is not available to this agent")
	refused(t, cs, "create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": "x"}}, "access_denied", "env_gate",
		"tool create_object is disabled by the operator. Required: PARSEMCP_ALLOW_WRITE_TOOLS=true AND PARSEMCP_ALLOW_RAW_CRUD=true. Prefer declaring a method on the class in the policy file: an intent-based write needs only PARSEMCP_ALLOW_WRITE_TOOLS.")
	refused(t, cs, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"nope": 1}}, "access_denied", "field_denied", `where.nope: "nope" is not a field of Ticket this agent can use; its fields: due, priority, project, status, title, objectId, createdAt, updatedAt`)
	refused(t, cs, "query_class", map[string]any{"class_name": "Ticket", "limit": 0}, "invalid_argument", "", `argument "limit" must be between 1 and 1000, got 0`)
	refused(t, cs, "get_object", map[string]any{"class_name": "Ticket", "object_id": "t000000005"}, "not_found", "object_not_found", "Object not found: Ticket#t000000005")

	// A full scan of a large class, when the operator refuses them.
	scan := connect(t, explainServer(t, tools.Config{RefuseFullScans: true, FullScanThreshold: 3}), "")
	refused(t, scan, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"title": "Fuel leak"}}, "security_blocked", "full_scan_refused",
		"the query would scan all 5 rows of Ticket (more than 3); an index on title would serve it; until then add a constraint on an indexed field")
}

// The guide answers access_denied for a hidden class and something else
// for one that does not exist, which tells a caller the hidden class is
// there. parsemcp answers access_denied for both, and for a class outside
// the agent's class filter, with one message and the same details: the
// answers differ only by the name the caller gave.
func TestHiddenAndUnknownClassReadAlike(t *testing.T) {
	st := fixtureStore(t)
	cs := govClient(t, st, agent.Gates{}, agent.Readonly, bobID, agent.Policy{Classes: agent.NameFilter{Except: []string{"Payroll"}}})
	for _, tool := range []string{"get_schema", "count_objects", "query_class", "get_sample_objects", "aggregate", "explain_query", "export_data"} {
		var first map[string]any
		for _, class := range []string{"Nope", "_Session", "_JobStatus", "Payroll"} { // unknown, hidden, hidden, filtered out
			args := map[string]any{"class_name": class}
			if tool == "aggregate" {
				args["pipeline"] = []any{}
			}
			out := fails(t, cs, tool, args, tools.CodeAccessDenied)
			out["error"] = strings.Replace(out["error"].(string), `"`+class+`"`, `"X"`, 1)
			if first == nil {
				first = out
				if first["error"] != `class "X" was not found (or is not accessible to this agent)` || cmp.Diff(map[string]any{"kind": "class_not_found"}, first["details"]) != "" {
					t.Fatalf("%s: %v", tool, first)
				}
				continue
			}
			if d := cmp.Diff(first, out); d != "" {
				t.Errorf("%s of %s differs from an unknown class:\n%s", tool, class, d)
			}
		}
	}
}
