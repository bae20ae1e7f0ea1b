package parserest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/internal/testing/parseserver"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
	"github.com/parsemcp/parsemcp/store/parserest"
	"github.com/parsemcp/parsemcp/store/sqlite"
)

// pipelineFor parses pipeline for class against st's schemas.
func pipelineFor(t *testing.T, st store.Store, class, pipeline string) *query.Pipeline {
	t.Helper()
	ctx := context.Background()
	sch, err := st.Schema(ctx, class)
	if err != nil {
		t.Fatal(err)
	}
	p, err := query.ParsePipelineJSON(sch, func(c string) (parse.Schema, error) { return st.Schema(ctx, c) }, []byte(pipeline))
	if err != nil {
		t.Fatalf("%s: %v", pipeline, err)
	}
	return p
}

// TestAggregateStagesRunLocally: the stages Parse Server's PostgreSQL
// adapter does not run are not passed on (Parse Server 9 on PostgreSQL
// ignores them and answers the class's rows, checked first): parsemcp
// runs them itself over the rows it fetched, and answers what the sqlite
// store answers on the same rows.
func TestAggregateStagesRunLocally(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	st := openStore(t, srv)
	defer st.Close()
	sch := parse.NewSchema("Thing")
	sch.Fields["n"] = parse.Field{Type: parse.TypeNumber}
	sch.Fields["up"] = parse.Field{Type: parse.TypePointer, TargetClass: "Thing"}
	sch.Fields["at"] = parse.Field{Type: parse.TypeDate}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	at := func(iso string) map[string]any { return map[string]any{"__type": "Date", "iso": iso} }
	if err := st.Create(ctx, "Thing", []parse.Object{{"objectId": "th1", "n": 1.0, "at": at("2025-01-31T23:30:00.000Z")},
		{"objectId": "th2", "n": 2.0, "up": parse.Pointer("Thing", "th1"), "at": at("2025-01-31T10:00:00.000Z")},
		{"objectId": "th3", "n": 3.0, "up": parse.Pointer("Thing", "th2"), "at": at("2025-02-01T10:00:00.000Z")}}); err != nil {
		t.Fatal(err)
	}
	code, res := srv.RequestJSON(http.MethodGet, "/aggregate/Thing?pipeline="+url.QueryEscape(`[{"$facet":{"a":[{"$count":"c"}]}}]`), nil, "", true)
	if rows, _ := res["results"].([]any); code != http.StatusOK || len(rows) != 3 {
		t.Fatalf("Parse Server's answer to $facet changed (it ignored the stage): %d %v", code, res)
	}
	// Date parts: one group per row without a timezone, an SQL error with
	// one (group_by_date sends both).
	code, res = srv.RequestJSON(http.MethodGet, "/aggregate/Thing?pipeline="+url.QueryEscape(`[{"$group":{"_id":{"m":{"$month":"$at"}},"c":{"$sum":1}}}]`), nil, "", true)
	if rows, _ := res["results"].([]any); code != http.StatusOK || len(rows) != 3 {
		t.Fatalf("Parse Server's answer to a $month group changed (one group per date): %d %v", code, res)
	}
	code, res = srv.RequestJSON(http.MethodGet, "/aggregate/Thing?pipeline="+url.QueryEscape(`[{"$group":{"_id":{"$month":{"date":"$at","timezone":"+05:00"}},"c":{"$sum":1}}}]`), nil, "", true)
	if code == http.StatusOK {
		t.Fatalf("Parse Server now groups by a date part in a timezone: %d %v", code, res)
	}
	// The same rows, times included, in a sqlite store.
	ref, err := sqlite.Create(ctx, filepath.Join(t.TempDir(), "ref.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	if err := ref.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	rows, err := st.Find(ctx, &query.Query{Class: "Thing", ReadACL: query.NoACLFilter, Limit: -1})
	if err != nil || len(rows) != 3 {
		t.Fatalf("find: %v %v", rows, err)
	}
	if err := ref.Create(ctx, "Thing", rows); err != nil {
		t.Fatal(err)
	}
	for stage, pipeline := range map[string]string{
		"$facet":                    `[{"$facet": {"a": [{"$count": "n"}], "b": [{"$match": {"n": {"$gt": 1}}}, {"$project": {"n": 1}}]}}]`,
		"$bucket":                   `[{"$bucket": {"groupBy": "$n", "boundaries": [0, 2], "default": "x"}}]`,
		"$group by $month":          `[{"$group": {"_id": {"m": {"$month": "$at"}}, "c": {"$sum": 1}}}, {"$sort": {"_id.m": 1}}]`,
		"$group by $dayOfMonth, tz": `[{"$group": {"_id": {"$dayOfMonth": {"date": "$at", "timezone": "+05:00"}}, "c": {"$sum": 1}}}, {"$sort": {"_id": 1}}]`,
		"$bucketAuto":               `[{"$bucketAuto": {"groupBy": "$n", "buckets": 2}}]`,
		"$replaceWith":              `[{"$replaceWith": {"m": "$n"}}]`,
		"$replaceRoot":              `[{"$replaceRoot": {"newRoot": {"m": "$n"}}}]`,
		"$unionWith":                `[{"$project": {"n": 1}}, {"$unionWith": {"coll": "Thing", "pipeline": [{"$match": {"n": 3}}, {"$project": {"n": 1}}]}}]`,
		"$graphLookup":              `[{"$match": {"n": 3}}, {"$graphLookup": {"from": "Thing", "startWith": "$up", "connectFromField": "up", "connectToField": "_id", "as": "c"}}, {"$project": {"c": 1}}]`,
	} {
		got, err := st.Aggregate(ctx, "Thing", pipelineFor(t, st, "Thing", pipeline), query.NoACLFilter)
		if err != nil {
			t.Errorf("%s: %v", stage, err)
			continue
		}
		want, err := ref.Aggregate(ctx, "Thing", pipelineFor(t, ref, "Thing", pipeline), query.NoACLFilter)
		if err != nil {
			t.Fatalf("%s on sqlite: %v", stage, err)
		}
		if g, w := asJSON(got), asJSON(want); g != w || len(want) == 0 {
			t.Errorf("%s: parserest %s, sqlite %s", stage, g, w)
		}
	}
}

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

// TestAggregateAsAgent: an aggregation for an identity other than the
// master key, or with row rules, runs over exactly the rows that identity
// may read, as Parse Server itself decides (ACL, roles, class-level
// permissions), its $lookup'd rows included; the rows it may fetch are
// capped; and the master key without rules is still Parse Server's own
// /aggregate.
func TestAggregateAsAgent(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	st := openStore(t, srv)
	defer st.Close()
	alice, bob := aliceStaffAndBob(t, srv)
	doc := parse.NewSchema("Doc")
	doc.Fields["k"] = parse.Field{Type: parse.TypeString}
	note := parse.NewSchema("Note")
	note.Fields["doc"] = parse.Field{Type: parse.TypePointer, TargetClass: "Doc"}
	secret := parse.NewSchema("Secret")
	secret.Fields["k"] = parse.Field{Type: parse.TypeString}
	staff := &parse.OpPerm{Entries: map[string]bool{"role:Staff": true}}
	secret.CLP = parse.PublicCLP()
	secret.CLP.Find, secret.CLP.Count, secret.CLP.Get = staff, staff, staff
	for _, sch := range []parse.Schema{doc, note, secret} {
		if err := st.CreateClass(ctx, sch); err != nil {
			t.Fatal(err)
		}
	}
	read := func(who string) map[string]any { return map[string]any{who: map[string]any{"read": true}} }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.Create(ctx, "Doc", []parse.Object{
		{"objectId": "dPublic", "k": "a", "ACL": read("*")},
		{"objectId": "dAlice", "k": "a", "ACL": read(alice)},
		{"objectId": "dStaff", "k": "b", "ACL": read("role:Staff")},
		{"objectId": "dBob", "k": "b", "ACL": read(bob)},
	}))
	must(st.Create(ctx, "Note", []parse.Object{
		{"objectId": "nPublic", "doc": parse.Pointer("Doc", "dPublic"), "ACL": read("*")},
		{"objectId": "nBob", "doc": parse.Pointer("Doc", "dPublic"), "ACL": read(bob)},
	}))
	must(st.Create(ctx, "Secret", []parse.Object{{"objectId": "s1", "k": "a"}, {"objectId": "s2", "k": "b"}}))

	masterKey, anon := query.NoACLFilter, query.ACLEntries("*")
	asAlice, asBob := query.ACLEntries("*", alice, "role:Staff"), query.ACLEntries("*", bob)
	counts := func(class, pipeline string, acl query.ACLFilter, filter query.Expr) (string, error) {
		t.Helper()
		rows, err := st.Aggregate(ctx, class, pipelineFor(t, st, class, pipeline).WithFilter(filter), acl)
		if err != nil {
			return "", err
		}
		var parts []string
		for _, r := range rows {
			n := r["n"]
			if notes, ok := r["notes"].([]any); ok {
				n = len(notes)
			}
			parts = append(parts, fmt.Sprintf("%v:%v", r["objectId"], n))
		}
		slices.Sort(parts)
		return strings.Join(parts, " "), nil
	}
	// (Parse Server on PostgreSQL cannot $sort by _id after a $group: the
	// rows are sorted here.)
	group := `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`
	onlyB := query.Cmp{Path: query.Path{Field: "k", Type: parse.TypeString}, Op: query.OpEq, Value: "b"}
	for _, c := range []struct {
		who    string
		acl    query.ACLFilter
		filter query.Expr
		want   string
	}{
		{"master key (Parse Server's /aggregate)", masterKey, nil, "a:2 b:2"},
		{"master key with a row rule", masterKey, onlyB, "b:2"},
		{"anonymous", anon, nil, "a:1"},
		{"alice and her role", asAlice, nil, "a:2 b:1"},
		{"bob", asBob, nil, "a:1 b:1"},
		{"bob with a row rule", asBob, onlyB, "b:1"},
	} {
		got, err := counts("Doc", group, c.acl, c.filter)
		if err != nil || got != c.want {
			t.Errorf("%s: $group by k = %q, %v; want %q", c.who, got, err, c.want)
		}
	}

	// $lookup'd rows are the identity's too.
	lookup := `[{"$match": {"k": "a"}}, {"$lookup": {"from": "Note", "localField": "_id", "foreignField": "doc", "as": "notes"}},
	  {"$project": {"notes": 1}}]`
	for _, c := range []struct {
		who  string
		acl  query.ACLFilter
		want string
	}{
		{"anonymous", anon, "dPublic:1"},
		{"alice", asAlice, "dAlice:0 dPublic:1"},
		{"bob", asBob, "dPublic:2"},
	} {
		got, err := counts("Doc", lookup, c.acl, nil)
		if err != nil || got != c.want {
			t.Errorf("%s: $lookup notes = %q, %v; want %q", c.who, got, err, c.want)
		}
	}

	// A row rule on the $lookup'd class alone is applied, for the master
	// key too.
	lp := pipelineFor(t, st, "Doc", lookup)
	lp.Lookups()[0].Filter = query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpNe, Value: "nBob"}
	if rows, err := st.Aggregate(ctx, "Doc", lp, masterKey); err != nil || len(rows) != 2 {
		t.Errorf("master key, rule on Note: %v, %v", rows, err)
	} else {
		for _, r := range rows {
			if notes, _ := r["notes"].([]any); r["objectId"] == "dPublic" && len(notes) != 1 {
				t.Errorf("master key, rule on Note: dPublic's notes %v; want nPublic only", notes)
			}
		}
	}

	// Class-level permissions are Parse Server's: bob may not find Secret.
	if got, err := counts("Secret", group, asAlice, nil); err != nil || got != "a:1 b:1" {
		t.Errorf("alice (Staff) on Secret: %q, %v", got, err)
	}
	if got, err := counts("Secret", group, asBob, nil); !errors.Is(err, store.ErrPermissionDenied) {
		t.Errorf("bob on Secret: %q, %v; want permission denied", got, err)
	}

	// The rows fetched are capped, counted before any is fetched.
	capped, err := parserest.Open(ctx, parserest.Config{ServerURL: srv.URL(), AppID: srv.AppID(), MasterKey: srv.MasterKey(), JavaScriptKey: srv.JSKey(), LocalAggregateRows: 2, Scratch: sqlite.Scratch})
	must(err)
	defer capped.Close()
	_, err = capped.Aggregate(ctx, "Doc", pipelineFor(t, capped, "Doc", group), asAlice)
	if !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "more than 2 rows") {
		t.Errorf("alice over the cap: %v; want store.ErrUnsupported naming the cap", err)
	}
	if rows, err := capped.Aggregate(ctx, "Doc", pipelineFor(t, capped, "Doc", group), anon); err != nil || len(rows) != 1 {
		t.Errorf("anonymous under the cap: %v, %v", rows, err)
	}
	if rows, err := capped.Aggregate(ctx, "Doc", pipelineFor(t, capped, "Doc", group), masterKey); err != nil || len(rows) != 2 {
		t.Errorf("master key (not capped: Parse Server's own): %v, %v", rows, err)
	}

	// Without a scratch store, what parsemcp would run itself is refused
	// (the zero value fails closed); the master key's still runs on Parse
	// Server.
	bare, err := parserest.Open(ctx, parserest.Config{ServerURL: srv.URL(), AppID: srv.AppID(), MasterKey: srv.MasterKey(), JavaScriptKey: srv.JSKey()})
	must(err)
	defer bare.Close()
	if rows, err := bare.Aggregate(ctx, "Doc", pipelineFor(t, bare, "Doc", group), asAlice); !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), "Config.Scratch") {
		t.Errorf("alice without a scratch store: %v, %v; want store.ErrUnsupported naming Config.Scratch", rows, err)
	}
	if rows, err := bare.Aggregate(ctx, "Doc", pipelineFor(t, bare, "Doc", group), masterKey); err != nil || len(rows) != 2 {
		t.Errorf("master key without a scratch store: %v, %v", rows, err)
	}
}

// governAll ands rule into the rules of every source of p reading class
// (as the governed scope does for each source).
func governAll(p *query.Pipeline, class string, rule query.Expr) *query.Pipeline {
	p = p.WithFilter(nil)
	for _, src := range p.Sources() {
		if src.Class != class {
			continue
		}
		*src.Filter = query.AndOf(*src.Filter, rule)
	}
	return p
}

// TestAggregateLocalFailsClosed: what parsemcp cannot check as the agent
// is refused, never answered wider. A rule on a field Parse Server
// protects from the agent is refused as Parse Server refuses it in a
// find, also when the class is read twice (each read carries its rules);
// a required field Parse Server strips does not fail the load with its
// name; fields SQLite cannot tell apart (k and K) are refused without
// being named.
func TestAggregateLocalFailsClosed(t *testing.T) {
	srv := startServer(t)
	ctx := context.Background()
	st := openStore(t, srv)
	defer st.Close()
	_, bob := aliceStaffAndBob(t, srv)
	asBob := query.ACLEntries("*", bob)
	doc := parse.NewSchema("Doc")
	doc.Fields["k"] = parse.Field{Type: parse.TypeString}
	doc.Fields["secret"] = parse.Field{Type: parse.TypeString}
	doc.Fields["req"] = parse.Field{Type: parse.TypeString, Required: true}
	doc.CLP = parse.PublicCLP()
	doc.CLP.ProtectedFields = map[string][]string{"*": {"secret", "req"}}
	twin := parse.NewSchema("Twin")
	twin.Fields["k"] = parse.Field{Type: parse.TypeString}
	twin.Fields["K"] = parse.Field{Type: parse.TypeString}
	for _, sch := range []parse.Schema{doc, twin} {
		if err := st.CreateClass(ctx, sch); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Create(ctx, "Doc", []parse.Object{{"objectId": "d1", "k": "a", "secret": "x", "req": "r"}, {"objectId": "d2", "k": "b", "secret": "y", "req": "r"}}); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, "Twin", []parse.Object{{"objectId": "w1", "k": "a", "K": "b"}}); err != nil {
		t.Fatal(err)
	}
	// Bob reads both documents, but not their secret (nor req).
	group := `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`
	if rows, err := st.Aggregate(ctx, "Doc", pipelineFor(t, st, "Doc", group), asBob); err != nil || len(rows) != 2 {
		t.Fatalf("bob's $group (a required field stripped by Parse Server): %v, %v", rows, err)
	}
	notX := query.Cmp{Path: query.Path{Field: "secret", Type: parse.TypeString}, Op: query.OpNe, Value: "x"}
	for name, pipeline := range map[string]string{
		"read once":  group,
		"read twice": `[{"$project": {"k": 1}}, {"$unionWith": {"coll": "Doc", "pipeline": [{"$match": {"k": "none"}}]}}]`,
	} {
		rows, err := st.Aggregate(ctx, "Doc", governAll(pipelineFor(t, st, "Doc", pipeline), "Doc", notX), asBob)
		if !errors.Is(err, store.ErrPermissionDenied) {
			t.Errorf("%s, a rule on a protected field: %v, %v; want Parse Server's refusal", name, rows, err)
		}
	}
	// Parse Server's own find refuses the same rule.
	if _, err := st.Find(ctx, &query.Query{Class: "Doc", Where: notX, ReadACL: asBob, Limit: -1}); !errors.Is(err, store.ErrPermissionDenied) {
		t.Errorf("find with the rule: %v; want permission denied (the oracle changed?)", err)
	}
	_, err := st.Aggregate(ctx, "Twin", pipelineFor(t, st, "Twin", `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`), asBob)
	if !errors.Is(err, store.ErrUnsupported) || strings.Contains(err.Error(), `"K"`) || strings.Contains(err.Error(), "duplicate column") {
		t.Errorf("fields k and K: %v; want a plain store.ErrUnsupported", err)
	}
}

// TestPagesPastMaxLimit: a Parse Server that answers at most 2 rows per
// find (maxLimit) still gives every row to a find of every row, a
// relation's listing and a local aggregation, and the aggregation's row
// cap counts them all.
func TestPagesPastMaxLimit(t *testing.T) {
	srv := parseserver.Start(t, parseserver.Options{CustomObjectIDs: true, JSKey: "js-key", MaxLimit: 2})
	ctx := context.Background()
	st := openStore(t, srv)
	defer st.Close()
	sch := parse.NewSchema("Thing")
	sch.Fields["k"] = parse.Field{Type: parse.TypeString}
	if err := st.CreateClass(ctx, sch); err != nil {
		t.Fatal(err)
	}
	var objs []parse.Object
	for i := range 7 {
		objs = append(objs, parse.Object{"objectId": fmt.Sprintf("th%d", i), "k": []string{"a", "b"}[i%2]})
	}
	if err := st.Create(ctx, "Thing", objs); err != nil {
		t.Fatal(err)
	}
	if rows, err := st.Find(ctx, &query.Query{Class: "Thing", ReadACL: query.NoACLFilter, Limit: 10}); err != nil || len(rows) != 2 {
		t.Fatalf("maxLimit 2 not in force: %d rows, %v", len(rows), err)
	}
	for _, q := range []*query.Query{
		{Class: "Thing", ReadACL: query.NoACLFilter, Limit: -1},
		{Class: "Thing", ReadACL: query.NoACLFilter, Limit: -1, Order: []query.OrderKey{{Field: "k", Desc: true}}},
		{Class: "Thing", ReadACL: query.NoACLFilter, Limit: -1, Skip: 1},
	} {
		if rows, err := st.Find(ctx, q); err != nil || len(rows) != 7-q.Skip {
			t.Errorf("every row (order %v, skip %d): %d rows, %v; want %d", q.Order, q.Skip, len(rows), err, 7-q.Skip)
		}
	}
	box := parse.NewSchema("Box")
	box.Fields["things"] = parse.Field{Type: parse.TypeRelation, TargetClass: "Thing"}
	if err := st.CreateClass(ctx, box); err != nil {
		t.Fatal(err)
	}
	if err := st.Create(ctx, "Box", []parse.Object{{"objectId": "box1"}}); err != nil {
		t.Fatal(err)
	}
	if err := st.AddRelation(ctx, "Box", "things", "box1", []string{"th0", "th2", "th3", "th5", "th6"}); err != nil {
		t.Fatal(err)
	}
	if ids, err := st.RelatedIDs(ctx, "Box", "things", "box1"); err != nil || len(ids) != 5 {
		t.Errorf("relation of 5 in pages of 2: %v, %v", ids, err)
	}
	rows, err := st.Aggregate(ctx, "Thing", pipelineFor(t, st, "Thing", `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`), query.ACLEntries("*"))
	got := map[any]any{}
	for _, r := range rows {
		got[r["objectId"]] = r["n"]
	}
	if err != nil || got["a"] != 4.0 || got["b"] != 3.0 {
		t.Fatalf("anonymous $group over 7 rows in pages of 2: %v, %v", rows, err)
	}
	capped, err := parserest.Open(ctx, parserest.Config{ServerURL: srv.URL(), AppID: srv.AppID(), MasterKey: srv.MasterKey(), JavaScriptKey: srv.JSKey(), LocalAggregateRows: 6, Scratch: sqlite.Scratch})
	if err != nil {
		t.Fatal(err)
	}
	defer capped.Close()
	if _, err := capped.Aggregate(ctx, "Thing", pipelineFor(t, capped, "Thing", `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`), query.ACLEntries("*")); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("7 rows over a cap of 6: %v", err)
	}
	// The cap counts the rows of every class a pipeline reads, together:
	// with a cap of 7, Thing's 7 rows pass alone, but not with Box's one.
	seven, err := parserest.Open(ctx, parserest.Config{ServerURL: srv.URL(), AppID: srv.AppID(), MasterKey: srv.MasterKey(), JavaScriptKey: srv.JSKey(), LocalAggregateRows: 7, Scratch: sqlite.Scratch})
	if err != nil {
		t.Fatal(err)
	}
	defer seven.Close()
	if _, err := seven.Aggregate(ctx, "Thing", pipelineFor(t, seven, "Thing", `[{"$group": {"_id": "$k", "n": {"$sum": 1}}}]`), query.ACLEntries("*")); err != nil {
		t.Errorf("7 rows under a cap of 7: %v", err)
	}
	both := `[{"$project": {"k": 1}}, {"$unionWith": {"coll": "Box"}}]`
	if rows, err := seven.Aggregate(ctx, "Thing", pipelineFor(t, seven, "Thing", both), query.ACLEntries("*")); !errors.Is(err, store.ErrUnsupported) {
		t.Errorf("7 + 1 rows of two classes over a cap of 7: %d rows, %v", len(rows), err)
	}
}
