package parserest_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/sqlite"
	"github.com/parsemcp/parsemcp/store/storetest"
)

// WatchClass subscribes with the subscriber's own credential, and Parse
// Server decides what each one hears: a note written by another Parse
// client with an ACL naming alice reaches alice (her own session token)
// and the master key, not bob (a session the store opens for him) nor an
// anonymous subscriber; a public one reaches everyone. Identities LiveQuery
// cannot act as are refused when they subscribe. After Parse Server
// restarts, every subscription is made again: a resync, then the next
// change.
func TestWatchClassPerCredential(t *testing.T) {
	srv, st := serverWithNotes(t)
	defer st.Close()
	ctx := context.Background()
	alice, aliceToken := srv.SignUp("alice")
	bob, _ := srv.SignUp("bob")

	subscribe := func(cf store.CredentialFeed, acl query.ACLFilter) *storetest.Recorder {
		t.Helper()
		rec := &storetest.Recorder{}
		cancel, err := cf.WatchClass(ctx, "Note", acl, rec.Add)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cancel)
		return rec
	}
	recAlice := subscribe(st.WithSession(alice, aliceToken).(store.CredentialFeed), query.ACLEntries("*", alice))
	recBob := subscribe(st, query.ACLEntries("*", bob))
	recAnon := subscribe(st, query.ACLEntries("*"))
	recMaster := subscribe(st, query.NoACLFilter)

	write := func(text string, acl map[string]any) {
		t.Helper()
		if code, body := srv.Request(http.MethodPost, "/classes/Note", map[string]any{"text": text, "ACL": acl}, "", true); code != http.StatusCreated {
			t.Fatalf("write: %d %s", code, body)
		}
	}
	texts := func(cs []store.Change) []string {
		var out []string
		for _, c := range cs {
			if c.Op == store.ChangeCreate {
				out = append(out, c.After["text"].(string))
			}
		}
		return out
	}
	write("for alice", map[string]any{alice: map[string]any{"read": true}})
	write("public", map[string]any{"*": map[string]any{"read": true}})
	// The public note is the barrier: a subscriber that must not hear of
	// alice's note hears the public one, and nothing before it.
	for rec, want := range map[*storetest.Recorder][]string{
		recAlice: {"for alice", "public"}, recMaster: {"for alice", "public"},
		recBob: {"public"}, recAnon: {"public"},
	} {
		if got := texts(rec.WaitFor(t, len(want))); !slices.Equal(got, want) {
			t.Errorf("changes %v, want %v", got, want)
		}
	}

	// Fail closed: roles without a user, a master-key subscription
	// without the master key, a class whose find is not public.
	if _, err := st.WatchClass(ctx, "Note", query.ACLEntries("*", "role:Staff"), func(store.Change) {}); !errors.Is(err, parserest.ErrNoRESTIdentity) {
		t.Errorf("roles without a user: %v", err)
	}
	noKey, err := parserest.Open(ctx, parserest.Config{ServerURL: srv.URL(), AppID: srv.AppID(), JavaScriptKey: srv.JSKey(), Scratch: sqlite.Scratch})
	if err != nil {
		t.Fatal(err)
	}
	defer noKey.Close()
	if _, err := noKey.WatchClass(ctx, "Note", query.NoACLFilter, func(store.Change) {}); !errors.Is(err, store.ErrPermissionDenied) {
		t.Errorf("master key subscription without the master key: %v", err)
	}
	secret := parse.NewSchema("Secret")
	secret.CLP = parse.CLP{Get: parse.PublicPerm()}
	if err := st.CreateClass(ctx, secret); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WatchClass(ctx, "Secret", query.NoACLFilter, func(store.Change) {}); err == nil {
		t.Error("a class LiveQuery refuses was subscribed")
	}

	// Parse Server restarts: every subscription is made again. (The count
	// is taken before the restart: the resync may come before Restart
	// returns.)
	n := len(recAlice.Changes())
	srv.Restart()
	deadline := time.Now().Add(storetest.FeedWait)
	for !slices.ContainsFunc(recAlice.Changes()[n:], func(c store.Change) bool { return c.Op == store.ChangeResync }) {
		if time.Now().After(deadline) {
			t.Fatalf("no resync after the restart: %s", storetest.DescribeChanges(recAlice.Changes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	write("after the restart", map[string]any{alice: map[string]any{"read": true}})
	got := recAlice.WaitFor(t, len(recAlice.Changes())+1)
	if last := got[len(got)-1]; last.Op != store.ChangeCreate || last.After["text"] != "after the restart" {
		t.Fatalf("alice after the restart: %s", storetest.DescribeChanges(got))
	}
}
