package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/store/parserest"
)

// parseDemo starts a Parse Server and loads the demo into it with
// `parsemcp demo --out parse+http://…` (through its REST API). It returns
// the server, the store URL and the environment holding the master key.
func parseDemo(t *testing.T, rows string) (*parseserver.Server, string, []string) {
	t.Helper()
	srv := parseserver.Start(t, parseserver.Options{CustomObjectIDs: true, AcceptAuthData: []string{"google", "apple", "github"}})
	spec := "parse+" + strings.Replace(srv.URL(), "://", "://"+srv.AppID()+"@", 1)
	env := []string{parserest.EnvMasterKey + "=" + srv.MasterKey()}
	if _, stderr, code := run(t, env, "demo", "--rows", rows, "--out", spec, "-q"); code != 0 {
		t.Fatalf("demo --out %s: exit %d: %s", spec, code, stderr)
	}
	if strings.Contains(spec, srv.MasterKey()) {
		t.Fatal("the store URL holds the master key")
	}
	return srv, spec, env
}

// TestServeParseServer: `parsemcp serve --store parse+http://…` in front of
// a running Parse Server gives the same answers, agent for agent, as the
// same demo served from SQLite: master key, anonymous, and users with
// roles (Parse Server enforcing ACLs and CLPs itself through sessions the
// master key opens for them); a role-only identity is refused at start-up;
// the master key never appears in the server's output.
func TestServeParseServer(t *testing.T) {
	srv, spec, env := parseDemo(t, "600")
	sqlitePath := filepath.Join(t.TempDir(), "demo.sqlite")
	if _, stderr, code := run(t, nil, "demo", "--rows", "600", "--out", "sqlite:"+sqlitePath, "-q"); code != 0 {
		t.Fatalf("demo sqlite: %s", stderr)
	}
	identities := map[string][]string{
		"master":    nil,
		"anonymous": {"--anonymous"},
		"admin":     {"--as-user", demo.AdminUserID},
		"member":    {"--as-user", demo.MemberUserID},
		"norole":    {"--as-user", demo.NoRoleUserID},
	}
	type call struct {
		tool string
		args map[string]any
		// masterErr, when set, is the error Parse Server's own /aggregate
		// answers the master key with (its PostgreSQL adapter's limits):
		// parsemcp passes that answer on.
		masterErr string
		// sameDB: compared only with the postgres store on Parse Server's
		// own database.
		sameDB bool
	}
	var calls []call
	for _, class := range []string{demo.ClassOrganization, demo.ClassProject, demo.ClassTicket, demo.ClassComment, demo.ClassCustomer, demo.ClassOrder} {
		calls = append(calls,
			call{tool: "count_objects", args: map[string]any{"class_name": class}},
			call{tool: "query_class", args: map[string]any{"class_name": class, "order": "objectId", "limit": 7, "keys": []string{"objectId"}}},
		)
	}
	calls = append(calls,
		call{tool: "count_objects", args: map[string]any{"class_name": demo.ClassTicket, "where": map[string]any{"status": "open"}}},
		call{tool: "count_objects", args: map[string]any{"class_name": demo.ClassTicket, "where": map[string]any{"project": map[string]any{"__type": "Pointer", "className": demo.ClassProject, "objectId": demo.ProjectWebsiteID}}}},
		call{tool: "query_class", args: map[string]any{"class_name": demo.ClassTicket, "where": map[string]any{"status": map[string]any{"$in": []string{"open", "closed"}}}, "order": "-number,objectId", "limit": 5}},
		call{tool: "get_object", args: map[string]any{"class_name": demo.ClassTicket, "object_id": demo.TicketMemberID}},
		call{tool: "get_schema", args: map[string]any{"class_name": demo.ClassTicket}},
		call{tool: "get_all_schemas", args: map[string]any{}},
		// Aggregations: Parse Server's own /aggregate for the master key,
		// parsemcp's over the rows the agent may read for the others.
		call{tool: "group_by", args: map[string]any{"class_name": demo.ClassTicket, "field": "status"}},
		call{tool: "group_by", args: map[string]any{"class_name": demo.ClassTicket, "field": "project", "where": map[string]any{"status": "open"}}},
		call{tool: "distinct", args: map[string]any{"class_name": demo.ClassTicket, "field": "priority"}},
		// Ties: rows of equal sort keys come in objectId order, groups of
		// equal value in key order, on every backend.
		call{tool: "query_class", args: map[string]any{"class_name": demo.ClassTicket, "order": "status", "limit": 12, "keys": []string{"status"}}},
		call{tool: "query_class", args: map[string]any{"class_name": demo.ClassTicket, "order": "-priority", "skip": 3, "limit": 9, "keys": []string{"priority"}}},
		call{tool: "group_by", args: map[string]any{"class_name": demo.ClassTicket, "field": "priority", "sort": "value_desc"}},
		call{tool: "group_by", args: map[string]any{"class_name": demo.ClassTicket, "field": "status", "sort": "value_asc", "limit": 2}},
		// Date parts Parse Server cannot group by run locally.
		call{tool: "group_by_date", args: map[string]any{"class_name": demo.ClassTicket, "field": "dueDate", "interval": "month"}},
		call{tool: "group_by_date", args: map[string]any{"class_name": demo.ClassTicket, "field": "resolvedAt", "interval": "week", "timezone": "Europe/Paris", "sort": "value_desc"}},
		call{tool: "get_objects", args: map[string]any{"class_name": demo.ClassTicket, "ids": []string{demo.TicketMemberID, "nope000000"}}},
		// The search tools: Parse Server's $text ranking, and its
		// aggregations (or parsemcp's) under a $text or a prefix $regex.
		call{tool: "text_search", args: map[string]any{"class_name": demo.ClassTicket, "field": "title", "term": "slow | crash | login | page", "limit": 15, "keys": []string{"title"}}},
		call{tool: "text_search", args: map[string]any{"class_name": demo.ClassTicket, "field": "description", "term": "customer", "where": map[string]any{"status": "open"}, "skip": 2, "limit": 5}},
		call{tool: "autocomplete", args: map[string]any{"class_name": demo.ClassTicket, "field": "status", "prefix": "o"}},
		call{tool: "autocomplete", args: map[string]any{"class_name": demo.ClassTicket, "field": "title", "prefix": "Log", "limit": 3}},
		call{tool: "faceted_search", args: map[string]any{"class_name": demo.ClassTicket, "field": "title", "term": "slow | crash", "facets": []string{"status", "priority"}, "limit": 3}},
		call{tool: "query_class", args: map[string]any{"class_name": demo.ClassProject, "order": "objectId", "keys": []string{"name"}, "format": "csv"}},
		call{tool: "export_data", args: map[string]any{"class_name": demo.ClassTicket, "order": "objectId", "limit": 20, "columns": []string{"objectId", "status", "project.name"}}},
		call{tool: "aggregate", args: map[string]any{"class_name": demo.ClassComment, "pipeline": []any{
			map[string]any{"$lookup": map[string]any{"from": demo.ClassTicket, "localField": "ticket", "foreignField": "_id", "as": "t"}},
			map[string]any{"$unwind": "$t"},
			map[string]any{"$group": map[string]any{"_id": "$t.status", "n": map[string]any{"$sum": 1}}},
			map[string]any{"$sort": map[string]any{"n": -1}}}}, masterErr: "Invalid field name: t.status"},
	)
	// On the very database Parse Server keeps, the postgres store answers
	// every call as Parse Server does, the newest objects included (the
	// SQLite copy's timestamps are its own).
	for _, class := range []string{demo.ClassProject, demo.ClassTicket, demo.ClassOrder} {
		calls = append(calls, call{tool: "get_sample_objects", args: map[string]any{"class_name": class, "limit": 4}, sameDB: true})
	}
	for name, flags := range identities {
		t.Run(name+"/same database", func(t *testing.T) {
			want := parseConnect(t, startServe(t, nil, append([]string{"--store", srv.DatabaseURL()}, flags...)...).url)
			got := parseConnect(t, startServe(t, env, append([]string{"--store", spec}, flags...)...).url)
			for _, c := range calls {
				if c.masterErr != "" && name == "master" {
					continue // Parse Server's own /aggregate refuses it
				}
				w, wErr := callTool(t, want, c.tool, c.args)
				g, gErr := callTool(t, got, c.tool, c.args)
				if wErr != gErr || !reflect.DeepEqual(canonJSON(t, w), canonJSON(t, g)) {
					t.Errorf("%s %v:\n postgres: %v\n parse:    %v", c.tool, c.args, w, g)
				}
			}
		})
	}
	for name, flags := range identities {
		t.Run(name, func(t *testing.T) {
			want := parseConnect(t, startServe(t, nil, append([]string{"--store", "sqlite:" + sqlitePath}, flags...)...).url)
			ps := startServe(t, env, append([]string{"--store", spec}, flags...)...)
			got := parseConnect(t, ps.url)
			for _, c := range calls {
				if c.sameDB {
					continue
				}
				g, gErr := callTool(t, got, c.tool, c.args)
				if c.masterErr != "" && name == "master" {
					if !gErr || !strings.Contains(fmt.Sprint(g["error"]), c.masterErr) {
						t.Errorf("%s %v as the master key: %v; want Parse Server's own %q", c.tool, c.args, g, c.masterErr)
					}
					continue
				}
				w, wErr := callTool(t, want, c.tool, c.args)
				if wErr != gErr || !reflect.DeepEqual(canonJSON(t, w), canonJSON(t, g)) {
					t.Errorf("%s %v:\n sqlite: %v\n parse:  %v", c.tool, c.args, w, g)
				}
			}
			if strings.Contains(ps.stderr.String(), srv.MasterKey()) {
				t.Error("the server's log shows the master key")
			}
		})
	}

	// A request's own session token is forwarded to Parse Server (no
	// session is opened on its behalf) and a forged one is refused.
	t.Run("session token", func(t *testing.T) {
		_, carolToken := srv.SignUp("carol")
		sessions := func() float64 {
			_, b := srv.Request(http.MethodGet, "/classes/_Session?count=1&limit=0&where=%7B%22objectId%22%3A%7B%22%24exists%22%3Atrue%7D%7D", nil, "", true)
			var r struct{ Count float64 }
			_ = json.Unmarshal(b, &r)
			return r.Count
		}
		before := sessions()
		ps := startServe(t, env, "--store", spec)
		tr := &mcp.StreamableClientTransport{Endpoint: ps.url, HTTPClient: &http.Client{Transport: headerTransport{"X-Parse-Session-Token", carolToken}}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "carol", Version: "1"}, nil).Connect(context.Background(), tr, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		anon := parseConnect(t, startServe(t, env, "--store", spec, "--anonymous").url)
		for _, class := range []string{demo.ClassTicket, demo.ClassProject} {
			got, gErr := callTool(t, cs, "count_objects", map[string]any{"class_name": class})
			want, _ := callTool(t, anon, "count_objects", map[string]any{"class_name": class})
			if gErr || got["count"] != want["count"] {
				t.Errorf("carol (no roles) counts %s %v, anonymous %v", class, got, want["count"])
			}
		}
		if after := sessions(); after != before {
			t.Errorf("sessions went from %v to %v: the caller's token was not forwarded", before, after)
		}
		if strings.Contains(ps.stderr.String(), carolToken) {
			t.Error("the server's log shows the session token")
		}
		bad := &mcp.StreamableClientTransport{Endpoint: ps.url, HTTPClient: &http.Client{Transport: headerTransport{"X-Parse-Session-Token", "r:forged"}}}
		if cs, err := mcp.NewClient(&mcp.Implementation{Name: "forged", Version: "1"}, nil).Connect(context.Background(), bad, nil); err == nil {
			cs.Close()
			t.Error("a forged session token was accepted")
		}
	})

	// The rows an aggregation parsemcp runs itself may fetch are capped.
	stdout, stderr, code := run(t, env, "call", "group_by", "--store", spec, "--as-user", demo.MemberUserID, "--parse-aggregate-rows", "5",
		"--args", `{"class_name":"Ticket","field":"status"}`)
	if code == 0 || !strings.Contains(stdout+stderr, "more than 5 rows") {
		t.Fatalf("--parse-aggregate-rows 5: exit %d: %s %s", code, stdout, stderr)
	}

	// An identity Parse Server has no session for is refused at start-up.
	_, stderr, code = run(t, env, "call", "count_objects", "--store", spec, "--as-role", "Admin", "--args", `{"class_name":"Ticket"}`)
	if code == 0 || !strings.Contains(stderr, "no Parse Server equivalent") {
		t.Fatalf("--as-role on a Parse Server store: exit %d: %s", code, stderr)
	}
	// So is a policy profile holding roles without a user (the demo
	// policy's analyst).
	_, stderr, code = run(t, env, "call", "count_objects", "--store", spec, "--policy", "demo", "--args", `{"class_name":"Ticket"}`)
	if code == 0 || !strings.Contains(stderr, `policy profile "analyst"`) || !strings.Contains(stderr, "no Parse Server equivalent") {
		t.Fatalf("--policy demo on a Parse Server store: exit %d: %s", code, stderr)
	}
	// Without the master key, acting as a user is refused at start-up too.
	_, stderr, code = run(t, nil, "call", "count_objects", "--store", spec, "--as-user", demo.AdminUserID, "--args", `{"class_name":"Ticket"}`)
	if code == 0 || !strings.Contains(stderr, "master key") {
		t.Fatalf("--as-user without the master key: exit %d: %s", code, stderr)
	}
}

func parseConnect(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "parse-e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// canonJSON drops what legitimately differs between the two servers:
// timings, and createdAt/updatedAt, which Parse Server assigns itself when
// the demo is written through its REST API.
func canonJSON(t *testing.T, v map[string]any) any {
	t.Helper()
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	var strip func(any)
	strip = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, k := range []string{"createdAt", "updatedAt", "elapsed_ms", "took_ms"} {
				delete(x, k)
			}
			for _, e := range x {
				strip(e)
			}
		case []any:
			for _, e := range x {
				strip(e)
			}
		}
	}
	strip(out)
	return out
}

// TestParseServerLive: a client subscribed to parse://Ticket/count on
// `serve --store parse+http://…` is notified, through LiveQuery, of a
// ticket another Parse client creates straight through Parse Server's
// REST API; while Parse Server is down a call fails as unavailable, and
// once it is back calls answer again and notifications resume.
func TestParseServerLive(t *testing.T) {
	srv, spec, env := parseDemo(t, "300")
	s := startServe(t, env, "--store", spec, "--live-debounce", "100ms", "--rate-limit", "0")
	ctx := context.Background()
	const uri = "parse://Ticket/count"
	watcher, updates := subscribeWatcher(t, s.url, uri)
	// Order's find permission is not public: LiveQuery will not follow it
	// (even with the master key), so subscribing is refused, not silent.
	if err := watcher.Subscribe(ctx, &mcp.SubscribeParams{URI: "parse://Order/count"}); err == nil || !strings.Contains(err.Error(), "LiveQuery refuses class Order") {
		t.Fatalf("subscribe to a class LiveQuery refuses: %v", err)
	}
	write := func(title string) {
		t.Helper()
		if code, body := srv.Request(http.MethodPost, "/classes/Ticket", map[string]any{"title": title, "ACL": map[string]any{"*": map[string]any{"read": true}}}, "", true); code != http.StatusCreated {
			t.Fatalf("write through Parse Server: %d %s", code, body)
		}
	}
	// Each write is retried until its notification comes: the listening
	// stream and the LiveQuery subscription open asynchronously.
	await := func(what string) {
		t.Helper()
		for i := range 20 {
			write(what + " " + strconv.Itoa(i))
			select {
			case got := <-updates:
				if got != uri {
					t.Fatalf("%s: notification for %s", what, got)
				}
				return
			case <-time.After(time.Second):
			}
		}
		t.Fatalf("%s: no notification\n%s", what, s.stderr)
	}
	await("another Parse client")

	srv.Stop()
	if out, isErr := callTool(t, watcher, "count_objects", map[string]any{"class_name": "Ticket"}); !isErr || out["error_code"] != "unavailable" {
		t.Fatalf("count while Parse Server is down: %v", out)
	}
	srv.Start()
	if out, isErr := callTool(t, watcher, "count_objects", map[string]any{"class_name": "Ticket"}); isErr {
		t.Fatalf("count after the restart: %v", out)
	}
	for len(updates) > 0 { // the resync after the reconnect may notify too
		<-updates
	}
	await("after the restart")
}
