package mcpserver_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
)

// Sub-queries are governed like the outer query: the ACL of the inner class
// applies, its CLP is checked, and a hidden class is an unknown class.
func TestSubqueryGovernance(t *testing.T) {
	st := fixtureStore(t)
	bobCS := connect(t, newServer(t, st, agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bob}), "")
	masterCS := connect(t, newServer(t, st, agent.Readonly, master), "")
	inAll := map[string]any{"class_name": "Ticket", "where": map[string]any{"project": map[string]any{"$inQuery": map[string]any{"className": "Project"}}}}

	out := ok(t, masterCS, "query_class", inAll)
	if got := ids(out["results"]); !slices.Equal(got, []string{"t000000001", "t000000002", "t000000003", "t000000004"}) {
		t.Fatalf("master: %v", got)
	}
	// Bob cannot read Comet (role:Admin only), so the ticket on it does not
	// match: the sub-query only sees projects bob may read.
	out = ok(t, bobCS, "query_class", inAll)
	if got := ids(out["results"]); !slices.Equal(got, []string{"t000000001", "t000000002", "t000000003"}) {
		t.Fatalf("bob: %v", got)
	}
	// $notInQuery cannot be used to learn about rows bob cannot read either:
	// t000000004 is readable by bob but its project is not, so it is "not in".
	out = ok(t, bobCS, "query_class", map[string]any{"class_name": "Ticket", "where": map[string]any{"project": map[string]any{"$notInQuery": map[string]any{"className": "Project", "where": map[string]any{"name": "Comet"}}}}})
	if got := ids(out["results"]); !slices.Equal(got, []string{"t000000001", "t000000002", "t000000003", "t000000004"}) {
		t.Fatalf("bob notInQuery: %v", got)
	}
	// CLP of the inner class: Payroll is master-only.
	fails(t, bobCS, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{
		"title": map[string]any{"$select": map[string]any{"query": map[string]any{"className": "Payroll"}, "key": "objectId"}}}}, "permission_denied")
	// A hidden class is an unknown class inside a sub-query too.
	a := fails(t, bobCS, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{
		"title": map[string]any{"$select": map[string]any{"query": map[string]any{"className": "_Session"}, "key": "sessionToken"}}}}, "invalid_query")
	b := fails(t, bobCS, "count_objects", map[string]any{"class_name": "Ticket", "where": map[string]any{
		"title": map[string]any{"$select": map[string]any{"query": map[string]any{"className": "_Nothing"}, "key": "sessionToken"}}}}, "invalid_query")
	if strings.ReplaceAll(a["error"].(string), "_Session", "X") != strings.ReplaceAll(b["error"].(string), "_Nothing", "X") {
		t.Fatalf("hidden vs unknown class differ: %q / %q", a["error"], b["error"])
	}
	// Protected fields of the inner class cannot be selected or filtered on.
	fails(t, bobCS, "count_objects", map[string]any{"class_name": "Project", "where": map[string]any{
		"owner": map[string]any{"$inQuery": map[string]any{"className": "_User", "where": map[string]any{"email": "alice@example.com"}}}}}, "access_denied")
	// Relations: members of Apollo, and projects with bob as a member.
	out = ok(t, masterCS, "query_class", map[string]any{"class_name": "_User", "where": map[string]any{
		"$relatedTo": map[string]any{"object": map[string]any{"__type": "Pointer", "className": "Project", "objectId": "pApollo001"}, "key": "members"}}})
	if got := ids(out["results"]); !slices.Equal(got, []string{alice, bob}) {
		t.Fatalf("relatedTo: %v", got)
	}
	out = ok(t, bobCS, "query_class", map[string]any{"class_name": "Project", "where": map[string]any{"members": bob}})
	if got := ids(out["results"]); !slices.Equal(got, []string{"pApollo001"}) {
		t.Fatalf("members has bob: %v", got)
	}
}
