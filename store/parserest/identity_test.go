package parserest_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/internal/object"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/storetest"
)

// aliceStaffAndBob signs up alice and bob and makes alice the one member
// of a publicly readable role Staff.
func aliceStaffAndBob(t *testing.T, srv *parseserver.Server) (alice, bob string) {
	t.Helper()
	alice, _ = srv.SignUp("alice")
	bob, _ = srv.SignUp("bob")
	code, body := srv.Request(http.MethodPost, "/roles", map[string]any{"name": "Staff", "ACL": map[string]any{"*": map[string]any{"read": true}},
		"users": map[string]any{"__op": "AddRelation", "objects": []any{parse.Pointer(parse.ClassUser, alice)}}}, "", true)
	if code != http.StatusCreated {
		t.Fatalf("role: %d %s", code, body)
	}
	return alice, bob
}

func ids(rows []parse.Object) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, object.ID(r))
	}
	slices.Sort(out)
	return out
}

// TestIdentities: Parse Server enforces its own ACLs for each identity the
// store acts as: the master key, anonymous, and real users (with a role)
// through sessions /loginAs opens; an identity with no Parse equivalent
// (roles without a user, an unknown user) is refused, never widened.
func TestIdentities(t *testing.T) {
	srv := startServer(t)
	st := openStore(t, srv)
	defer st.Close()
	ctx := context.Background()
	alice, bob := aliceStaffAndBob(t, srv)
	doc := parse.NewSchema("Doc")
	doc.Fields["title"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, doc); err != nil {
		t.Fatal(err)
	}
	read := func(who string) map[string]any { return map[string]any{who: map[string]any{"read": true}} }
	if err := st.Create(ctx, "Doc", []parse.Object{
		{"objectId": "dPublic", "title": "public", "ACL": read("*")},
		{"objectId": "dAlice", "title": "alice's", "ACL": read(alice)},
		{"objectId": "dStaff", "title": "staff", "ACL": read("role:Staff")},
		{"objectId": "dBob", "title": "bob's", "ACL": read(bob)},
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		acl  []string
		want []string
	}{
		{nil, []string{"dAlice", "dBob", "dPublic", "dStaff"}},
		{[]string{"*"}, []string{"dPublic"}},
		// Parse Server resolves alice's roles itself from her session.
		{[]string{"*", alice, "role:Staff"}, []string{"dAlice", "dPublic", "dStaff"}},
		{[]string{"*", bob}, []string{"dBob", "dPublic"}},
	}
	for _, c := range cases {
		rows, err := st.Find(ctx, &query.Query{Class: "Doc", Limit: -1, ReadACL: filter(c.acl)})
		if err != nil {
			t.Fatalf("Find as %v: %v", c.acl, err)
		}
		if got := ids(rows); !slices.Equal(got, c.want) {
			t.Errorf("Find as %v = %v, want %v", c.acl, got, c.want)
		}
		n, err := st.Count(ctx, &query.Query{Class: "Doc", ReadACL: filter(c.acl)})
		if err != nil || n != int64(len(c.want)) {
			t.Errorf("Count as %v = %d, %v; want %d", c.acl, n, err, len(c.want))
		}
	}
	for _, acl := range [][]string{{"*", "role:Staff"}, {"*", "NoSuchUser"}, {"*", alice, bob}} {
		_, err := st.Find(ctx, &query.Query{Class: "Doc", Limit: -1, ReadACL: query.ACLEntries(acl...)})
		if !errors.Is(err, parserest.ErrNoRESTIdentity) || !errors.Is(err, store.ErrPermissionDenied) {
			t.Errorf("Find as %v: got %v, want a refusal (no Parse Server equivalent)", acl, err)
		}
	}
	// Writes: bob cannot change alice's document; Parse Server says 101,
	// which reads as not found.
	_, _, err := st.Update(ctx, store.Write{Class: "Doc", ID: "dAlice", WriteACL: query.ACLEntries("*", bob)}, parse.Object{"title": "hacked"})
	if !errors.Is(err, store.ErrObjectNotFound) {
		t.Errorf("bob updating alice's doc: %v, want not found", err)
	}
	if err := st.CheckIdentity(false, "", []string{"Staff"}); !errors.Is(err, parserest.ErrNoRESTIdentity) {
		t.Errorf("CheckIdentity(roles only) = %v", err)
	}
}

// TestFeedOtherClientAndRestart: a change written by another Parse client
// (REST straight to Parse Server) reaches the feed; while Parse Server is
// down a call fails clearly (unavailable, within its deadline); once it is
// back, calls work again, the feed reconnects (publishing a resync) and
// reports the next change.
func TestFeedOtherClientAndRestart(t *testing.T) {
	srv, st := serverWithNotes(t)
	defer st.Close()
	ctx := context.Background()
	rec := &storetest.Recorder{}
	cancel := st.Watch(rec.Add)
	defer cancel()

	if code, body := srv.Request(http.MethodPost, "/classes/Note", map[string]any{"text": "from another client"}, "", true); code != http.StatusCreated {
		t.Fatalf("write: %d %s", code, body)
	}
	got := rec.WaitFor(t, 1)
	if got[0].Op != store.ChangeCreate || got[0].Class != "Note" || got[0].After["text"] != "from another client" {
		t.Fatalf("change: %s", storetest.DescribeChanges(got))
	}

	srv.Stop()
	cctx, ccancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := st.Count(cctx, &query.Query{Class: "Note", ReadACL: query.NoACLFilter})
	ccancel()
	if err == nil || !(errors.Is(err, store.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)) {
		t.Fatalf("Count while Parse Server is down: %v, want unavailable", err)
	}
	srv.Start()
	if n, err := st.Count(ctx, &query.Query{Class: "Note", ReadACL: query.NoACLFilter}); err != nil || n != 1 {
		t.Fatalf("Count after the restart: %d, %v", n, err)
	}
	// The feed reconnects on its own: a resync, then the next change.
	deadline := time.Now().Add(storetest.FeedWait)
	for {
		resynced := slices.ContainsFunc(rec.Changes(), func(c store.Change) bool { return c.Op == store.ChangeResync })
		if resynced {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no resync after the restart: %s", storetest.DescribeChanges(rec.Changes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body := srv.Request(http.MethodPost, "/classes/Note", map[string]any{"text": "after the restart"}, "", true); code != http.StatusCreated {
		t.Fatalf("write: %d %s", code, body)
	}
	// Every class resyncs on its own (in any order with the write): wait
	// for the write itself.
	deadline = time.Now().Add(storetest.FeedWait)
	for !slices.ContainsFunc(rec.Changes(), func(c store.Change) bool {
		return c.Op == store.ChangeCreate && c.After["text"] == "after the restart"
	}) {
		if time.Now().After(deadline) {
			t.Fatalf("no change after the restart: %s", storetest.DescribeChanges(rec.Changes()))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRateLimited: Parse Server's rate limit (429) is retried with backoff
// while the call has time, then reported as rate limited; other paths are
// not affected.
func TestRateLimited(t *testing.T) {
	srv := parseserver.Start(t, parseserver.Options{RateLimit: "/classes/Limited 2 600000"})
	st := openStore(t, srv)
	defer st.Close()
	ctx := context.Background()
	for _, c := range []string{"Limited", "Free"} {
		sch := parse.NewSchema(c)
		if err := st.CreateClass(ctx, sch); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 { // the window's allowance
		if _, err := st.Count(ctx, &query.Query{Class: "Limited", ReadACL: query.NoACLFilter}); err != nil {
			t.Fatal(err)
		}
	}
	// The window lasts ten minutes: no retry within the deadline can pass.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err := st.Count(cctx, &query.Query{Class: "Limited", ReadACL: query.NoACLFilter})
	cancel()
	if !errors.Is(err, store.ErrRateLimited) {
		t.Fatalf("Count over the limit: %v, want rate limited", err)
	}
	if _, err := st.Count(ctx, &query.Query{Class: "Free", ReadACL: query.NoACLFilter}); err != nil {
		t.Fatalf("another path: %v", err)
	}
}

// filter is the ACL filter of an entry list (nil: the master key's).
func filter(acl []string) query.ACLFilter {
	if acl == nil {
		return query.NoACLFilter
	}
	return query.ACLEntries(acl...)
}
