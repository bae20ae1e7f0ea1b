package parse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/internal/testing/pgtest"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/postgres"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// The classes of the CLP oracle, created through Parse Server's schema API:
// each CLP shape the evaluator handles, on the same two rows (one owned by
// alice, one by bob).
var oracleClasses = map[string]string{
	"Partial":  `{"get": {"*": true}, "create": {"*": true}}`,
	"NoCount":  `{"find": {"*": true}, "get": {"*": true}}`,
	"Ptr":      `{"find": {"pointerFields": ["owner"]}, "count": {"pointerFields": ["owner"]}, "get": {"pointerFields": ["owner"]}}`,
	"ReadUF":   `{"find": {}, "count": {}, "get": {}, "readUserFields": ["owner"]}`,
	"Editors":  `{"find": {}, "count": {}, "get": {}, "readUserFields": ["editors"]}`,
	"AuthOnly": `{"find": {"requiresAuthentication": true}, "count": {"requiresAuthentication": true}, "get": {"requiresAuthentication": true}}`,
	"AuthPtr":  `{"find": {"requiresAuthentication": true, "pointerFields": ["owner"]}, "count": {"requiresAuthentication": true}, "get": {"*": true}}`,
	"Staff":    `{"find": {"role:Staff": true}, "count": {"role:Staff": true}, "get": {"role:Staff": true}}`,
	"Prot": `{"find": {"*": true}, "count": {"*": true}, "get": {"*": true},
	           "protectedFields": {"*": ["secret", "note"], "role:Staff": ["secret"], "authenticated": ["secret", "note", "label"]}}`,
}

// TestCLPAgainstParseServer asks Parse Server 9 and parsemcp's governed
// scope the same find, count and get on the same PostgreSQL database, as
// anonymous, as two users (one in role Staff) and with the master key, and
// requires the same answer: refused or not, the same rows, the same
// fields.
func TestCLPAgainstParseServer(t *testing.T) {
	ps := parseserver.Start(t, parseserver.Options{})
	ctx := context.Background()
	call := ps.RequestJSON
	mustOK := func(code int, out map[string]any) map[string]any {
		t.Helper()
		if code/100 != 2 {
			t.Fatalf("Parse Server refused a set-up request: %d %v", code, out)
		}
		return out
	}
	users := map[string]struct{ id, token string }{}
	for _, name := range []string{"alice", "bob"} {
		out := mustOK(call(http.MethodPost, "/users", map[string]any{"username": name, "password": "pw-" + name, "email": name + "@example.com"}, "", false))
		users[name] = struct{ id, token string }{out["objectId"].(string), out["sessionToken"].(string)}
	}
	ptr := func(id string) map[string]any {
		return map[string]any{"__type": "Pointer", "className": "_User", "objectId": id}
	}
	mustOK(call(http.MethodPost, "/roles", map[string]any{"name": "Staff", "ACL": map[string]any{"*": map[string]any{"read": true}},
		"users": map[string]any{"__op": "AddRelation", "objects": []any{ptr(users["alice"].id)}}}, "", true))

	for class, clp := range oracleClasses {
		var perms map[string]any
		if err := json.Unmarshal([]byte(clp), &perms); err != nil {
			t.Fatal(err)
		}
		mustOK(call(http.MethodPost, "/schemas/"+class, map[string]any{"className": class, "classLevelPermissions": perms, "fields": map[string]any{
			"owner": map[string]any{"type": "Pointer", "targetClass": "_User"}, "label": map[string]any{"type": "String"},
			"secret": map[string]any{"type": "String"}, "note": map[string]any{"type": "String"},
			"editors": map[string]any{"type": "Array"},
		}}, "", true))
		for _, owner := range []string{"alice", "bob"} {
			// editors: an Array of user Pointers (readUserFields on an
			// Array keeps the rows whose array holds the user).
			editors := []any{ptr(users[owner].id)}
			if owner == "bob" {
				editors = append(editors, ptr(users["alice"].id))
			}
			mustOK(call(http.MethodPost, "/classes/"+class, map[string]any{"owner": ptr(users[owner].id), "label": owner, "secret": "s-" + owner, "note": "n-" + owner, "editors": editors}, "", true))
		}
	}

	st, err := postgres.Open(ctx, ps.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	identities := map[string]agent.Identity{"anonymous": {Mode: agent.AuthAnonymous}, "master": {Mode: agent.AuthMaster}}
	for name, u := range users {
		id, err := agent.UserIdentity(ctx, st, u.id)
		if err != nil {
			t.Fatal(err)
		}
		identities[name] = id
	}
	token := map[string]string{"alice": users["alice"].token, "bob": users["bob"].token}

	// Parse Server's answer: refused, or the rows (objectId → sorted keys).
	type answer struct {
		refused bool
		rows    map[string]string
		count   int
	}
	keysOf := func(row map[string]any) string {
		var ks []string
		for k := range row {
			switch k {
			case "objectId", "createdAt", "updatedAt", "ACL":
				continue
			case "sessionToken":
				// Parse Server returns a user's own session token with its
				// row; parsemcp never returns one (the internal-field floor).
				continue
			}
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return strings.Join(ks, ",")
	}
	parseAnswer := func(op parse.Op, class, who, id string) answer {
		path := "/classes/" + class
		switch op {
		case parse.OpCount:
			// A constraint every row meets: without one Parse Server's
			// PostgreSQL adapter answers a master-key count with the
			// planner's estimate, not the rows.
			path += "?" + url.Values{"count": {"1"}, "limit": {"0"}, "where": {`{"objectId":{"$exists":true}}`}}.Encode()
		case parse.OpGet:
			path += "/" + id
		}
		code, out := call(http.MethodGet, path, nil, token[who], who == "master")
		if code != http.StatusOK {
			return answer{refused: true}
		}
		a := answer{rows: map[string]string{}}
		switch op {
		case parse.OpCount:
			switch n := out["count"].(type) {
			case float64:
				a.count = int(n)
			case []any:
				// Pointer permissions and no user: Parse Server answers
				// {"results": [], "count": []}, its empty result.
				a.count = len(n)
			default:
				t.Fatalf("count %s as %s: %v", class, who, out)
			}
		case parse.OpGet:
			a.rows[out["objectId"].(string)] = keysOf(out)
		default:
			for _, r := range out["results"].([]any) {
				row := r.(map[string]any)
				a.rows[row["objectId"].(string)] = keysOf(row)
			}
		}
		return a
	}
	oursAnswer := func(op parse.Op, class, who, id string) answer {
		scope := agent.NewScope(agent.New(agent.Readonly, identities[who]), st)
		var rows []parse.Object
		var err error
		a := answer{rows: map[string]string{}}
		switch op {
		case parse.OpCount:
			var n int64
			n, err = scope.Count(ctx, &query.Query{Class: class, Limit: -1})
			a.count = int(n)
		case parse.OpGet:
			rows, err = scope.Get(ctx, class, []string{id}, nil)
			if err == nil && len(rows) == 0 {
				return answer{refused: true} // not found, as Parse Server's 101
			}
		default:
			rows, err = scope.Find(ctx, &query.Query{Class: class, Limit: -1})
		}
		if err != nil {
			return answer{refused: true}
		}
		for _, r := range rows {
			a.rows[r[parse.FieldObjectID].(string)] = keysOf(r)
		}
		return a
	}
	ids := func(class string) []string {
		_, out := call(http.MethodGet, "/classes/"+class, nil, "", true)
		var list []string
		for _, r := range out["results"].([]any) {
			list = append(list, r.(map[string]any)["objectId"].(string))
		}
		slices.Sort(list)
		return list
	}
	classes := make([]string, 0, len(oracleClasses))
	for c := range oracleClasses {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	for _, class := range classes {
		rowIDs := ids(class)
		for _, who := range []string{"anonymous", "alice", "bob", "master"} {
			for _, op := range []parse.Op{parse.OpFind, parse.OpCount, parse.OpGet} {
				targets := []string{""}
				if op == parse.OpGet {
					targets = rowIDs
				}
				for _, id := range targets {
					want, got := parseAnswer(op, class, who, id), oursAnswer(op, class, who, id)
					if fmt.Sprint(want) != fmt.Sprint(got) {
						t.Errorf("%s %s %s as %s: Parse Server %+v, parsemcp %+v", op, class, id, who, want, got)
					}
				}
			}
		}
	}

	// The owner exemption: a user reading its own _User row sees its
	// email, and nobody else's.
	for _, who := range []string{"alice", "bob"} {
		for _, target := range []string{"alice", "bob"} {
			want, got := parseAnswer(parse.OpGet, parse.ClassUser, who, users[target].id), oursAnswer(parse.OpGet, parse.ClassUser, who, users[target].id)
			if fmt.Sprint(want) != fmt.Sprint(got) {
				t.Errorf("get _User %s as %s: Parse Server %+v, parsemcp %+v", target, who, want, got)
			}
		}
	}
}
