package parserest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
)

// TestThreeWay: on one database, the demo written through Parse Server's
// REST API is read three ways, for the master key, an anonymous caller
// and users holding roles: Parse Server's REST API directly (the oracle,
// with the user's own session), this store, and the postgres store
// reading Parse Server's tables (the ACL given as the user's entries, roles
// resolved from _Role). Every query must select the same objects in all
// three, and count the same.
func TestThreeWay(t *testing.T) {
	srv := parseserver.Start(t, parseserver.Options{CustomObjectIDs: true, AcceptAuthData: []string{"google", "apple", "github"}})
	rest := openStore(t, srv)
	defer rest.Close()
	ctx := context.Background()
	if _, err := demo.Generate(ctx, rest, demo.Options{Rows: 400}); err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.Open(ctx, srv.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()

	type who struct {
		name  string
		acl   []string // nil: master
		token string   // REST: the user's session ("" and !master: anonymous)
	}
	whos := []who{{name: "master"}, {name: "anonymous", acl: []string{parse.PublicKey}}}
	for _, u := range []string{demo.AdminUserID, demo.MemberUserID, demo.SupportUserID, demo.GlobexUserID} {
		id, err := agent.UserIdentity(ctx, pg, u)
		if err != nil {
			t.Fatal(err)
		}
		code, body := srv.Request(http.MethodPost, "/loginAs", map[string]any{"userId": u}, "", true)
		var s struct{ SessionToken string }
		if code != http.StatusOK || json.Unmarshal(body, &s) != nil {
			t.Fatalf("loginAs %s: %d %s", u, code, body)
		}
		whos = append(whos, who{name: u + " " + string(mustJSON(id.Roles)), acl: id.Principal().Entries, token: s.SessionToken})
	}
	wheres := []string{
		`{}`,
		`{"status": "open"}`,
		`{"status": {"$in": ["open", "closed"]}}`,
		`{"priority": {"$gte": 3}}`,
		`{"escalated": true, "estimateHours": {"$lt": 10}}`,
		`{"project": {"__type": "Pointer", "className": "Project", "objectId": "` + demo.ProjectWebsiteID + `"}}`,
		`{"title": {"$regex": "^[a-m]", "$options": "i"}}`,
		`{"$or": [{"status": "open"}, {"escalated": true}]}`,
		`{"dueDate": {"$lt": {"__type": "Date", "iso": "2026-01-01T00:00:00.000Z"}}}`,
		`{"customer": {"$exists": true}}`,
		`{"org": {"$inQuery": {"className": "Organization", "where": {"name": {"$regex": "Acme"}}}}}`,
	}
	sch, err := rest.Schema(ctx, demo.ClassTicket)
	if err != nil {
		t.Fatal(err)
	}
	parser := query.Parser{Resolve: func(c string) (parse.Schema, error) { return rest.Schema(ctx, c) }}
	for _, w := range wheres {
		var raw map[string]any
		if err := json.Unmarshal([]byte(w), &raw); err != nil {
			t.Fatal(err)
		}
		expr, err := parser.Where(sch, raw)
		if err != nil {
			t.Fatalf("%s: %v", w, err)
		}
		for _, c := range whos {
			f := query.NoACLFilter
			if c.acl != nil {
				f = query.ACLEntries(c.acl...)
			}
			q := &query.Query{Class: demo.ClassTicket, Where: expr, Limit: -1, Keys: []string{}, ReadACL: f}
			if sq, ok := expr.(query.InQuery); ok {
				sq.Query.ReadACL = f // the governed scope does this for sub-queries
			}
			want := restIDs(t, srv, w, c.acl == nil, c.token)
			for name, st := range map[string]interface {
				Find(context.Context, *query.Query) ([]parse.Object, error)
				Count(context.Context, *query.Query) (int64, error)
			}{"parserest": rest, "postgres": pg} {
				rows, err := st.Find(ctx, q)
				if err != nil {
					t.Errorf("%s %s as %s: %v", name, w, c.name, err)
					continue
				}
				if got := ids(rows); !slices.Equal(got, want) {
					t.Errorf("%s %s as %s: %d objects, Parse Server %d\n got  %v\n want %v", name, w, c.name, len(got), len(want), got, want)
				}
				n, err := st.Count(ctx, q)
				if err != nil || n != int64(len(want)) {
					t.Errorf("%s count %s as %s = %d (%v), Parse Server %d", name, w, c.name, n, err, len(want))
				}
			}
		}
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// restIDs asks Parse Server directly.
func restIDs(t *testing.T, srv *parseserver.Server, where string, master bool, token string) []string {
	t.Helper()
	q := url.Values{"where": {where}, "keys": {"objectId"}, "limit": {"10000"}}
	code, body := srv.Request(http.MethodGet, "/classes/"+demo.ClassTicket+"?"+q.Encode(), nil, token, master)
	if code != http.StatusOK {
		t.Fatalf("Parse Server %s: %d %s", where, code, body)
	}
	var resp struct{ Results []parse.Object }
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	return ids(resp.Results)
}
