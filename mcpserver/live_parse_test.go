package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/mcpserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// On a Parse Server store, each subscriber's changes come through a
// LiveQuery subscription made with its own credential: a session token
// the client came with, a session of the agent's user, none (anonymous)
// or the master key. A ticket written by another Parse client (REST
// straight to Parse Server) notifies only the subscribers whose
// credential may read it; an identity LiveQuery cannot act as (roles
// without a user) is refused when it subscribes, with the reason.
func TestLiveParseServerPerCredential(t *testing.T) {
	ctx := context.Background()
	// LiveQuery takes connections without the master key only with a key
	// of its keyPairs: the JavaScript key here.
	ps := parseserver.Start(t, parseserver.Options{JSKey: "js-key"})
	st, err := parserest.Open(ctx, parserest.Config{ServerURL: ps.URL(), AppID: ps.AppID(), MasterKey: ps.MasterKey(), JavaScriptKey: ps.JSKey(), Scratch: sqlite.Scratch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for class, field := range map[string]string{"Ticket": "title", "Project": "name"} {
		sch := parse.NewSchema(class)
		sch.Fields[field] = parse.Field{Type: parse.TypeString}
		if err := st.CreateClass(ctx, sch); err != nil {
			t.Fatal(err)
		}
	}
	aliceID, aliceToken := ps.SignUp("alice")
	bobID, _ := ps.SignUp("bob")

	srv := newLiveServer(t, st, &mcpserver.LiveOptions{Debounce: 50 * time.Millisecond, Senders: 1}, noAgents)
	url := mount(t, mcpserver.HandlerOptions{Server: srv, Agent: func(r *http.Request) (*agent.Agent, error) {
		switch strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") {
		case "alice": // her own session, forwarded as it came
			return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: aliceID, Session: agent.NewSecret(aliceToken)}), nil
		case "bob": // a session the store opens for him
			return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthUser, UserID: bobID}), nil
		case "anon":
			return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthAnonymous}), nil
		case "master":
			return agent.New(agent.Readonly, master), nil
		case "roles":
			return agent.New(agent.Readonly, agent.Identity{Mode: agent.AuthRole, Roles: []string{"Staff"}}), nil
		}
		return nil, agent.ErrUnauthorized
	}})
	const count = "parse://Ticket/count"
	wa, wb, wn, wm := watch(t, srv, url, "alice"), watch(t, srv, url, "bob"), watch(t, srv, url, "anon"), watch(t, srv, url, "master")
	for _, w := range []*watcher{wa, wb, wn, wm} {
		if err := w.subscribe(t, count); err != nil {
			t.Fatal(err)
		}
	}
	wr := watch(t, srv, url, "roles")
	if err := wr.subscribe(t, count); err == nil || !strings.Contains(err.Error(), "no Parse Server equivalent") {
		t.Fatalf("a role-only subscriber: %v, want a refusal naming why", err)
	}
	change := barrier(t, st, wa, wb, wn, wm)

	write := func(title string, acl map[string]any) {
		t.Helper()
		if code, body := ps.Request(http.MethodPost, "/classes/Ticket", map[string]any{"title": title, "ACL": acl}, "", true); code != http.StatusCreated {
			t.Fatalf("write through Parse Server: %d %s", code, body)
		}
	}
	write("alice only", map[string]any{aliceID: map[string]any{"read": true}})
	wa.next(t, count)
	wm.next(t, count)
	quiet(t, "a ticket only alice may read", change, wb, wn)
	wa.next(t, barrierURI)
	wm.next(t, barrierURI)

	write("public", map[string]any{"*": map[string]any{"read": true}})
	for _, w := range []*watcher{wa, wb, wn, wm} {
		w.next(t, count)
	}
	// What the notified subscribers read is their own.
	for w, want := range map[*watcher]float64{wa: 2, wb: 1, wn: 1, wm: 2} {
		rr, err := w.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: count})
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Count float64 }
		if err := json.Unmarshal([]byte(rr.Contents[0].Text), &got); err != nil || got.Count != want {
			t.Errorf("count after the writes: %s, want %v", rr.Contents[0].Text, want)
		}
	}
}
