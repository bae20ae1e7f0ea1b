package mcpserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
)

// A row whose ACL lets a user write but not read is not the user's to
// see: creating it tells the subscriber nothing; giving them read does.
func TestLiveWriteOnlyACL(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	srv, url := liveServer(t, st, &mcpserver.LiveOptions{Debounce: 50 * time.Millisecond, Senders: 1})
	const count = "parse://Ticket/count"
	w := watch(t, srv, url, "alice-token")
	if err := w.subscribe(t, count); err != nil {
		t.Fatal(err)
	}
	change := barrier(t, st, w)
	writeOnly := map[string]any{alice: map[string]any{"write": true}, "*": map[string]any{"write": true}}
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "write-only", "ACL": writeOnly}}); err != nil {
		t.Fatal(err)
	}
	quiet(t, "a row alice may write but not read was created", change, w)
	if err := st.Create(ctx, "Ticket", []parse.Object{{"title": "readable", "ACL": map[string]any{alice: map[string]any{"read": true}}}}); err != nil {
		t.Fatal(err)
	}
	w.next(t, count)
}

// A filter the server cannot evaluate in memory (a sub-query) is decided
// by asking the database whether the changed row is among the
// subscriber's rows: its filter, ACL and all. Rows outside the filter or
// the ACL tell the subscriber nothing; a row inside does.
func TestLiveVisibilityFromDatabase(t *testing.T) {
	ctx := context.Background()
	st := fixtureStore(t)
	srv := newLiveServer(t, st, &mcpserver.LiveOptions{Debounce: 50 * time.Millisecond, Senders: 1}, noAgents)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, Agent: func(r *http.Request) (*agent.Agent, error) {
		if r.Header.Get("Authorization") != "Bearer apollo" {
			return nil, agent.ErrUnauthorized
		}
		a := agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: alice})
		a.Policy.Filters = []agent.ClassFilters{{"Ticket": {"project": map[string]any{
			"$inQuery": map[string]any{"className": "Project", "where": map[string]any{"name": "Apollo"}}}}}}
		return a, nil
	}})
	const count = "parse://Ticket/count"
	w := watch(t, srv, url, "apollo")
	if err := w.subscribe(t, count); err != nil {
		t.Fatal(err)
	}
	change := barrier(t, st, w)
	public := map[string]any{"*": map[string]any{"read": true}}
	ticket := func(title, project string, acl map[string]any) {
		t.Helper()
		if err := st.Create(ctx, "Ticket", []parse.Object{{"title": title, "project": parse.Pointer("Project", project), "ACL": acl}}); err != nil {
			t.Fatal(err)
		}
	}

	ticket("on Borealis", "pBorealis2", public)
	quiet(t, "a ticket outside the sub-query filter", change, w)
	ticket("write-only on Apollo", "pApollo001", map[string]any{alice: map[string]any{"write": true}})
	quiet(t, "an Apollo ticket alice cannot read", change, w)
	ticket("on Apollo", "pApollo001", public)
	w.next(t, count)
	quiet(t, "after its one notification", change, w)
}
