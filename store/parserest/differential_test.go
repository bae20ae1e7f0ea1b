package parserest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/internal/object"
	"github.com/parsemcp/parsemcp/store/postgres"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// TestThreeWay: on one database, the demo written through Parse Server's
// REST API is read three ways, for the master key, an anonymous caller
// and users holding roles: Parse Server's REST API directly (the oracle,
// with the user's own session), this store, and the postgres store
// reading Parse Server's tables (the ACL given as the user's entries, roles
// resolved from _Role). Every query must select the same objects in all
// three, and count the same. The same demo generated into the embedded
// store (SQLite) is read a fourth way, with the same entries: its answers
// are Parse Server's too ($text included: query/textsearch is
// PostgreSQL's text search in Go).
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
	lite, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "demo.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if _, err := demo.Generate(ctx, lite, demo.Options{Rows: 400}); err != nil {
		t.Fatal(err)
	}

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
		// $text (Parse Server: to_tsvector('english', title) @@ to_tsquery('english', term))
		`{"title": {"$text": {"$search": {"$term": "checkout"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "slow & load"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "slow | crash"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "'login page'"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "login <-> page & !slow"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "crash"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "loading"}}}}`,
		`{"description": {"$text": {"$search": {"$term": "reporting & customers"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "LOGIN"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "notif:*"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "sign-on | drag-and-drop"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "zebra"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "the"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "returns", "$language": "simple"}}}}`,
		`{"title": {"$text": {"$search": {"$term": "Returns", "$language": "simple", "$caseSensitive": false, "$diacriticSensitive": true}}}}`,
		`{"title": {"$text": {"$search": {"$term": "notif:* | load"}}}, "status": "open"}`,
		`{"$or": [{"title": {"$text": {"$search": {"$term": "checkout"}}}}, {"priority": 1}]}`,
		`{"$nor": [{"description": {"$text": {"$search": {"$term": "customer"}}}}]}`,
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
			want := restIDs(t, srv, demo.ClassTicket, w, c.acl == nil, c.token)
			for name, st := range map[string]interface {
				Find(context.Context, *query.Query) ([]parse.Object, error)
				Count(context.Context, *query.Query) (int64, error)
			}{"parserest": rest, "postgres": pg, "sqlite": lite} {
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
	stores := map[string]finder{"parserest": rest, "postgres": pg, "sqlite": lite}
	threeWayText(t, srv, stores)
	for _, c := range whos {
		threeWayScore(t, srv, stores, c.name, c.acl, c.token)
	}
}

// threeWayScore: order by $score and keys $score give Parse Server's
// ranking, row for row and score for score, with objectId breaking ties;
// for the parserest store too when the where names another constraint
// first (Parse Server ranks by the first constraint's bind values, so the
// store puts the $text first).
func threeWayScore(t *testing.T, srv *parseserver.Server, stores map[string]finder, who string, acl []string, token string) {
	ctx := context.Background()
	parser := query.Parser{}
	for _, c := range []struct{ where, ours string }{
		{where: `{"title": {"$text": {"$search": {"$term": "slow | crash | login"}}}}`},
		{where: `{"title": {"$text": {"$search": {"$term": "notif:* | load | page"}}}, "status": "open"}`, ours: `{"status": "open", "title": {"$text": {"$search": {"$term": "notif:* | load | page"}}}}`},
		{where: `{"description": {"$text": {"$search": {"$term": "customer | report"}}}}`},
	} {
		q := url.Values{"where": {c.where}, "keys": {"objectId,$score"}, "order": {"$score,objectId"}, "limit": {"10000"}}
		code, body := srv.Request(http.MethodGet, "/classes/"+demo.ClassTicket+"?"+q.Encode(), nil, token, acl == nil)
		if code != http.StatusOK {
			t.Fatalf("Parse Server %s: %d %s", c.where, code, body)
		}
		var resp struct{ Results []parse.Object }
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		if acl == nil && len(resp.Results) < 3 {
			t.Fatalf("%s as %s: %d rows; the ranking proves little", c.where, who, len(resp.Results))
		}
		want := scored(resp.Results)
		ours := c.where
		if c.ours != "" {
			ours = c.ours
		}
		for name, st := range stores {
			sch, err := st.(interface {
				Schema(context.Context, string) (parse.Schema, error)
			}).Schema(ctx, demo.ClassTicket)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			_ = json.Unmarshal([]byte(ours), &raw)
			expr, err := parser.Where(sch, raw)
			if err != nil {
				t.Fatalf("%s: %v", ours, err)
			}
			order, err := query.ParseOrder(sch, "$score")
			if err != nil {
				t.Fatal(err)
			}
			f := query.NoACLFilter
			if acl != nil {
				f = query.ACLEntries(acl...)
			}
			rows, err := st.Find(ctx, &query.Query{Class: demo.ClassTicket, Where: expr, Order: order, Limit: -1, Keys: []string{query.ScoreKey}, ReadACL: f})
			if got := scored(rows); err != nil || !slices.Equal(got, want) {
				t.Errorf("%s %s as %s: %v (%v)\n Parse Server %v", name, ours, who, got, err, want)
			}
			// The order alone sorts the same rows without a score.
			rows, err = st.Find(ctx, &query.Query{Class: demo.ClassTicket, Where: expr, Order: order, Limit: 5, Keys: []string{"title"}, ReadACL: f})
			if err != nil || len(rows) != min(5, len(want)) {
				t.Fatalf("%s order only: %d rows (%v)", name, len(rows), err)
			}
			for i, r := range rows {
				if _, has := r[query.ScoreField]; has || !strings.HasPrefix(want[i], object.ID(r)+" ") {
					t.Errorf("%s %s order only, row %d: %v, want %s", name, ours, i, r, want[i])
				}
			}
		}
	}
	// $score without a $text to rank by is refused by every store.
	for name, st := range stores {
		_, err := st.Find(ctx, &query.Query{Class: demo.ClassTicket, Order: []query.OrderKey{{Field: query.ScoreKey, Desc: true}}, Limit: 1, ReadACL: query.NoACLFilter})
		if err == nil {
			t.Errorf("%s: $score without $text accepted", name)
		}
	}
}

// scored lists rows as "objectId score", in their order.
func scored(rows []parse.Object) []string {
	out := []string{}
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %v", object.ID(r), r[query.ScoreField]))
	}
	return out
}

type finder interface {
	Find(context.Context, *query.Query) ([]parse.Object, error)
}

// threeWayText: $text on a field most rows lack (an Order's notes; master
// key: the class is closed to the public), and the $text constraints
// parsemcp refuses, each refused by Parse Server too (or, for an option
// it does not know, ignored there: docs/COMPATIBILITY.md).
func threeWayText(t *testing.T, srv *parseserver.Server, stores map[string]finder) {
	ctx := context.Background()
	parser := query.Parser{}
	for _, c := range []struct {
		where string
		// mongo: the rows the SQL stores add to Parse Server's answer: a
		// $nor keeps the rows without the field (MongoDB's meaning,
		// docs/COMPATIBILITY.md); Parse Server's SQL NOT drops them
		mongo string
	}{
		{where: `{"notes": {"$text": {"$search": {"$term": "deliveries | delivered"}}}}`},
		{where: `{"notes": {"$text": {"$search": {"$term": "!deliver"}}}}`},
		{where: `{"$nor": [{"notes": {"$text": {"$search": {"$term": "deliver"}}}}]}`, mongo: `{"notes": {"$exists": false}}`},
		{where: `{"notes": {"$text": {"$search": {"$term": "5pm | gift"}}}, "paid": true}`},
	} {
		w := c.where
		want := restIDs(t, srv, demo.ClassOrder, w, true, "")
		if len(want) == 0 {
			t.Errorf("%s selects no Order: it proves little", w)
		}
		for name, st := range stores {
			want := want
			if c.mongo != "" && name != "parserest" {
				want = append(slices.Clone(want), restIDs(t, srv, demo.ClassOrder, c.mongo, true, "")...)
				slices.Sort(want)
			}
			sch, err := st.(interface {
				Schema(context.Context, string) (parse.Schema, error)
			}).Schema(ctx, demo.ClassOrder)
			if err != nil {
				t.Fatal(err)
			}
			var raw map[string]any
			_ = json.Unmarshal([]byte(w), &raw)
			expr, err := parser.Where(sch, raw)
			if err != nil {
				t.Fatalf("%s: %v", w, err)
			}
			rows, err := st.Find(ctx, &query.Query{Class: demo.ClassOrder, Where: expr, Limit: -1, Keys: []string{}, ReadACL: query.NoACLFilter})
			if got := ids(rows); err != nil || !slices.Equal(got, want) {
				t.Errorf("%s %s: %v (%v), Parse Server %v", name, w, got, err, want)
			}
		}
	}
	sch := stores["parserest"].(interface {
		Schema(context.Context, string) (parse.Schema, error)
	})
	ticket, err := sch.Schema(ctx, demo.ClassTicket)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		where string
		ps    int // Parse Server's status
	}{
		{`{"priority": {"$text": {"$search": {"$term": "slow"}}}}`, http.StatusInternalServerError}, // to_tsvector(double precision)
		{`{"title": {"$text": {"$search": {}}}}`, http.StatusBadRequest},
		{`{"title": {"$text": {"$search": "slow"}}}`, http.StatusBadRequest},
		{`{"title": {"$text": {"$search": {"$term": ""}}}}`, http.StatusBadRequest},
		{`{"title": {"$text": {"$search": {"$term": "slow load"}}}}`, http.StatusInternalServerError}, // to_tsquery's syntax error
		{`{"title": {"$text": {"$search": {"$term": "slow", "$caseSensitive": true}}}}`, http.StatusBadRequest},
		{`{"title": {"$text": {"$search": {"$term": "slow", "$diacriticSensitive": false}}}}`, http.StatusBadRequest},
		{`{"title": {"$text": {"$search": {"$term": "slow", "$language": "klingon"}}}}`, http.StatusInternalServerError},
		{`{"title": {"$text": {"$search": {"$term": "slow", "$fuzzy": true}}}}`, http.StatusOK}, // Parse Server ignores it
		{`{"title": {"$text": {"$search": {"$term": "slow"}, "$x": 1}}}`, http.StatusOK},        // Parse Server ignores it
	} {
		var raw map[string]any
		_ = json.Unmarshal([]byte(c.where), &raw)
		if _, err := parser.Where(ticket, raw); err == nil {
			t.Errorf("%s: accepted", c.where)
		}
		q := url.Values{"where": {c.where}, "keys": {"objectId"}}
		if code, body := srv.Request(http.MethodGet, "/classes/"+demo.ClassTicket+"?"+q.Encode(), nil, "", true); code != c.ps {
			t.Errorf("Parse Server %s: %d %s, want %d", c.where, code, body, c.ps)
		}
	}
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

// restIDs asks Parse Server directly.
func restIDs(t *testing.T, srv *parseserver.Server, class, where string, master bool, token string) []string {
	t.Helper()
	q := url.Values{"where": {where}, "keys": {"objectId"}, "limit": {"10000"}}
	code, body := srv.Request(http.MethodGet, "/classes/"+class+"?"+q.Encode(), nil, token, master)
	if code != http.StatusOK {
		t.Fatalf("Parse Server %s: %d %s", where, code, body)
	}
	var resp struct{ Results []parse.Object }
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	return ids(resp.Results)
}
