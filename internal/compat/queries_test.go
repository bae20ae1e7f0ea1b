package compat

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
)

// querySpec is one find: the same on both sides.
type querySpec struct {
	class   string
	where   map[string]any
	order   string
	limit   int
	skip    int
	keys    []string
	include []string
	count   bool // compare the count too
}

func (q querySpec) String() string {
	s := q.class + " where=" + jsonString(q.where) + " order=" + q.order + " limit=" + strconv.Itoa(q.limit)
	if q.skip > 0 {
		s += " skip=" + strconv.Itoa(q.skip)
	}
	if len(q.keys) > 0 {
		s += " keys=" + strings.Join(q.keys, ",")
	}
	if len(q.include) > 0 {
		s += " include=" + strings.Join(q.include, ",")
	}
	return s
}

func ptr(class, id string) map[string]any {
	return map[string]any{"__type": "Pointer", "className": class, "objectId": id}
}

func date(iso string) map[string]any { return map[string]any{"__type": "Date", "iso": iso} }

// classQueries are the where clauses per class, with the class's orders
// (each ends in a unique key, so both sides order every row alike), its
// keys and its includes.
type classQueries struct {
	class   string
	wheres  []map[string]any
	orders  []string
	keys    []string
	include []string
}

func demoQueries() []classQueries {
	acme := ptr("Organization", demo.OrgAcmeID)
	return []classQueries{
		{
			class: "Ticket",
			wheres: []map[string]any{
				{}, {"status": "open"}, {"status": map[string]any{"$in": []any{"open", "in_progress"}}},
				{"status": map[string]any{"$ne": "closed"}}, {"status": map[string]any{"$nin": []any{"closed", "resolved"}}},
				{"priority": map[string]any{"$gte": 3}}, {"priority": map[string]any{"$lt": 2}},
				{"type": "bug", "priority": 1}, {"escalated": true}, {"escalated": map[string]any{"$ne": true}},
				{"tags": "urgent"}, {"tags": map[string]any{"$all": []any{"bug", "backend"}}},
				{"tags": map[string]any{"$in": []any{"security", "api"}}}, {"tags": map[string]any{"$exists": false}},
				{"title": map[string]any{"$regex": "^Login"}}, {"title": map[string]any{"$regex": "slow", "$options": "i"}},
				{"description": map[string]any{"$regex": "customer"}}, {"key": map[string]any{"$regex": "^WEB-"}},
				{"title": map[string]any{"$regex": "^ log  in # the component", "$options": "xi"}},
				{"assignee": map[string]any{"$exists": false}}, {"assignee": map[string]any{"$exists": true}},
				{"project": ptr("Project", demo.ProjectWebsiteID)}, {"org": acme},
				{"$or": []any{map[string]any{"status": "open"}, map[string]any{"priority": 1}}},
				{"$and": []any{map[string]any{"priority": map[string]any{"$gt": 1}}, map[string]any{"type": "task"}}},
				{"createdAt": map[string]any{"$gte": date("2025-06-01T00:00:00.000Z")}},
				{"createdAt": map[string]any{"$lt": date("2025-01-01T00:00:00.000Z"), "$gt": date("2024-09-01T00:00:00.000Z")}},
				{"dueDate": map[string]any{"$exists": true}}, {"resolvedAt": map[string]any{"$exists": true}},
				{"objectId": map[string]any{"$in": []any{demo.TicketNoACLID, demo.TicketPublicReadID, demo.TicketOrgID, demo.TicketMemberID, demo.TicketSupportID, demo.TicketMasterOnlyID}}},
				{"number": map[string]any{"$gt": 5, "$lte": 20}}, {"estimateHours": map[string]any{"$gte": 8}},
				{"estimateHours": map[string]any{"$nin": []any{8, 16}}}, {"assignee": map[string]any{"$ne": ptr("_User", demo.AdminUserID)}},
				{"assignee": map[string]any{"$in": []any{ptr("_User", demo.AdminUserID), ptr("_User", demo.SupportUserID)}}},
				{"resolvedAt": map[string]any{"$exists": false}, "status": "closed"},
				{"reporter": ptr("_User", demo.MemberUserID)}, {"assignee": ptr("_User", demo.AdminUserID)},
				{"reporter": map[string]any{"$inQuery": map[string]any{"className": "_User", "where": map[string]any{"username": demo.MemberUsername}}}},
				{"project": map[string]any{"$inQuery": map[string]any{"className": "Project", "where": map[string]any{"status": "active"}}}},
				{"project": map[string]any{"$notInQuery": map[string]any{"className": "Project", "where": map[string]any{"status": "active"}}}},
			},
			orders:  []string{"-createdAt,objectId", "priority,number,objectId"},
			keys:    []string{"title", "status", "priority"},
			include: []string{"project"},
		},
		{
			class: "Project",
			wheres: []map[string]any{
				{}, {"status": "active"}, {"archived": false}, {"budget": map[string]any{"$gt": 50000}},
				{"tags": "web"}, {"org": acme}, {"name": map[string]any{"$regex": "^[A-M]"}},
				{"owner": ptr("_User", demo.AdminUserID)}, {"dueDate": map[string]any{"$lt": date("2026-01-01T00:00:00.000Z")}},
				{"color": map[string]any{"$in": []any{"#1f77b4", "#2ca02c"}}},
			},
			orders:  []string{"name,objectId", "-budget,objectId"},
			keys:    []string{"name", "status"},
			include: []string{"owner", "org"},
		},
		{
			class: "Comment",
			wheres: []map[string]any{
				{}, {"internal": false}, {"internal": true}, {"likes": map[string]any{"$gte": 3}},
				{"ticket": ptr("Ticket", demo.TicketOrgID)}, {"author": ptr("_User", demo.SupportUserID)},
				{"body": map[string]any{"$regex": "thanks", "$options": "i"}}, {"edited": true},
			},
			orders:  []string{"-createdAt,objectId", "likes,objectId"},
			keys:    []string{"body", "likes"},
			include: []string{"ticket", "author"},
		},
		{
			class: "Customer",
			wheres: []map[string]any{
				{}, {"active": true}, {"tier": map[string]any{"$in": []any{"gold", "platinum"}}},
				{"lifetimeValue": map[string]any{"$gt": 10000}}, {"newsletter": false}, {"org": acme},
			},
			orders:  []string{"address.city,objectId", "-lifetimeValue,objectId"},
			keys:    []string{"name", "tier"},
			include: []string{"accountManager"},
		},
		{
			class: "Organization",
			wheres: []map[string]any{
				{}, {"plan": "enterprise"}, {"active": true}, {"seats": map[string]any{"$gte": 50}},
				{"slug": map[string]any{"$in": []any{demo.OrgAcmeSlug, demo.OrgGlobexSlug}}},
			},
			orders:  []string{"settings.currency,name,objectId", "-seats,objectId"},
			keys:    []string{"name", "plan"},
			include: []string{"owner"},
		},
		{
			class: "Order",
			wheres: []map[string]any{
				{}, {"paid": true}, {"total": map[string]any{"$gt": 500}}, {"status": map[string]any{"$ne": "cancelled"}},
				{"org": acme},
			},
			orders:  []string{"-total,objectId", "number,objectId"},
			keys:    []string{"number", "total"},
			include: []string{"customer"},
		},
		{
			class: "_User",
			wheres: []map[string]any{
				{}, {"username": demo.MemberUsername}, {"emailVerified": true},
				{"username": map[string]any{"$regex": "^a"}},
			},
			orders: []string{"username,objectId", "-createdAt,objectId"},
			keys:   []string{"username"},
		},
		{
			class: "_Role",
			wheres: []map[string]any{
				{}, {"name": demo.RoleAdmin}, {"name": map[string]any{"$regex": "^org-"}},
			},
			orders: []string{"name,objectId", "-createdAt,objectId"},
			keys:   []string{"name"},
		},
	}
}

// specs expands the class queries: each where clause with both orders,
// a page further on, a keys selection and an include.
func specs(cqs []classQueries) []querySpec {
	var out []querySpec
	for _, cq := range cqs {
		for _, w := range cq.wheres {
			out = append(out,
				querySpec{class: cq.class, where: w, order: cq.orders[0], limit: 20, count: true},
				querySpec{class: cq.class, where: w, order: cq.orders[1], limit: 7, skip: 3},
				querySpec{class: cq.class, where: w, order: cq.orders[0], limit: 10, keys: cq.keys},
			)
			if len(cq.include) > 0 {
				out = append(out, querySpec{class: cq.class, where: w, order: cq.orders[1], limit: 10, include: cq.include})
			}
		}
	}
	return out
}

// find runs q through both and records how they differ.
func (p *pair) compareFind(d *diffs, w who, q querySpec) {
	p.t.Helper()
	params := url.Values{"where": {jsonString(q.where)}, "order": {q.order}, "limit": {strconv.Itoa(q.limit)}}
	args := map[string]any{"class_name": q.class, "where": q.where, "order": q.order, "limit": q.limit}
	if q.skip > 0 {
		params.Set("skip", strconv.Itoa(q.skip))
		args["skip"] = q.skip
	}
	if len(q.keys) > 0 {
		params.Set("keys", strings.Join(q.keys, ","))
		args["keys"] = q.keys
	}
	if len(q.include) > 0 {
		params.Set("include", strings.Join(q.include, ","))
		args["include"] = q.include
	}
	d.ran++
	path := "/classes/" + q.class
	if q.class == "_User" {
		path = "/users"
	} else if q.class == "_Role" {
		path = "/roles"
	}
	psOut, psErr := p.rest(w, http.MethodGet, path, params)
	mcOut, mcErr := p.tool(w, "query_class", args)
	where := w.name + ": " + q.String()
	switch {
	case psErr && mcErr:
		return
	case psErr && !mcErr && psOut["code"] == 1.0 && arrayEquality(q.where):
		d.met(knownArrayEquality)
		return
	case !psErr && mcErr && mcOut["error_code"] == "access_denied" && len(q.keys) > 0 && strings.HasPrefix(fmt.Sprint(mcOut["error"]), "keys: "):
		d.met(knownProtectedKeys)
		return
	case psErr != mcErr:
		d.add(q.class+": one side refuses", "%s\n    Parse Server error=%v %s\n    parsemcp     error=%v %s", where, psErr, brief(psOut), mcErr, brief(mcOut))
		return
	}
	psRows, mcRows := rows(psOut["results"]), rows(mcOut["results"])
	if a, b := ids(psRows), ids(mcRows); !slices.Equal(a, b) {
		if field := ninField(q.where); field != "" && p.onlyNulls(w, q, field, args, a) {
			d.met(knownNinNull)
			return
		}
		if p.nullsOrderOnly(w, q, path, params, args) {
			d.met(knownNullsOrder)
			return
		}
		d.add(q.class+": other rows", "%s\n    Parse Server ids %v\n    parsemcp     ids %v", where, a, b)
		return
	}
	for i := range psRows {
		stripFileURLs(psRows[i])
		if stripKey(psRows[i], "authData") {
			d.met(knownAuthData)
		}
		if k, a, b := firstDiff(psRows[i], mcRows[i]); k != "" {
			d.add(fmt.Sprintf("%s: field %s differs", q.class, k), "%s\n    row %s field %s: Parse Server %s, parsemcp %s", where, psRows[i]["objectId"], k, brief(a), brief(b))
			return
		}
	}
	if q.count && !(w.master() && len(q.where) == 0) { // a master count without where is an estimate in Parse Server
		params := url.Values{"where": {jsonString(q.where)}, "count": {"1"}, "limit": {"0"}}
		psOut, psErr := p.rest(w, http.MethodGet, path, params)
		mcOut, mcErr := p.tool(w, "count_objects", map[string]any{"class_name": q.class, "where": q.where})
		d.ran++
		if _, isArr := psOut["count"].([]any); isArr && !psErr && !mcErr && mcOut["count"] == 0.0 {
			d.met(knownCountArray)
			return
		}
		if psErr != mcErr || (!psErr && psOut["count"] != mcOut["count"]) {
			d.add(q.class+": count differs", "%s (count)\n    Parse Server %s\n    parsemcp     %s", where, brief(psOut), brief(mcOut))
		}
	}
}

// nullsOrderOnly reports whether both sides agree once the rows without
// a value for the first order key are left out (they sort at opposite
// ends).
func (p *pair) nullsOrderOnly(w who, q querySpec, path string, params url.Values, args map[string]any) bool {
	first := strings.TrimPrefix(strings.Split(q.order, ",")[0], "-")
	if first == "" || strings.Contains(first, ".") {
		return false
	}
	where := map[string]any{"$and": []any{q.where, map[string]any{first: map[string]any{"$exists": true}}}}
	ps := url.Values{}
	for k, v := range params {
		ps[k] = v
	}
	ps.Set("where", jsonString(where))
	a := map[string]any{}
	for k, v := range args {
		a[k] = v
	}
	a["where"] = where
	psOut, psErr := p.rest(w, http.MethodGet, path, ps)
	mcOut, mcErr := p.tool(w, "query_class", a)
	return !psErr && !mcErr && slices.Equal(ids(rows(psOut["results"])), ids(rows(mcOut["results"])))
}

// ninField returns the field a where clause constrains with $nin.
func ninField(where map[string]any) string {
	for k, v := range where {
		if c, ok := v.(map[string]any); ok {
			if _, ok := c["$nin"]; ok {
				return k
			}
		}
	}
	return ""
}

// onlyNulls reports whether parsemcp's answer, once the rows with no
// value for field are left out, is Parse Server's: the rows $nin keeps in
// MongoDB's semantics (and parsemcp's) and drops in SQL's.
func (p *pair) onlyNulls(w who, q querySpec, field string, args map[string]any, psIDs []string) bool {
	where := map[string]any{}
	for k, v := range q.where {
		where[k] = v
	}
	c := map[string]any{"$exists": true}
	for k, v := range q.where[field].(map[string]any) {
		c[k] = v
	}
	where[field] = c
	a := map[string]any{}
	for k, v := range args {
		a[k] = v
	}
	a["where"] = where
	out, isErr := p.tool(w, "query_class", a)
	return !isErr && slices.Equal(ids(rows(out["results"])), psIDs)
}

func rows(v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, r := range list {
		m, _ := r.(map[string]any)
		out = append(out, m)
	}
	return out
}

func ids(rs []map[string]any) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i], _ = r["objectId"].(string)
	}
	return out
}

// firstDiff returns the first key (sorted) whose values differ.
func firstDiff(a, b map[string]any) (string, any, any) {
	union := map[string]any{}
	maps.Copy(union, a)
	maps.Copy(union, b)
	for _, k := range slices.Sorted(maps.Keys(union)) {
		av, aok := a[k]
		bv, bok := b[k]
		if aok != bok || !reflect.DeepEqual(av, bv) {
			if !aok {
				av = "(absent)"
			}
			if !bok {
				bv = "(absent)"
			}
			return k, av, bv
		}
	}
	return "", nil, nil
}

// stripFileURLs drops the url Parse Server adds to File values (it is
// built from Parse Server's own address and files adapter; parsemcp stores
// and returns the file name only: docs/COMPATIBILITY.md).
func stripFileURLs(v any) {
	switch x := v.(type) {
	case map[string]any:
		if x["__type"] == "File" {
			delete(x, "url")
		}
		for _, e := range x {
			stripFileURLs(e)
		}
	case []any:
		for _, e := range x {
			stripFileURLs(e)
		}
	}
}

// stripKey removes key from v and every object inside it, and reports
// whether there was one.
func stripKey(v any, key string) bool {
	found := false
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[key]; ok {
			delete(x, key)
			found = true
		}
		for _, e := range x {
			found = stripKey(e, key) || found
		}
	case []any:
		for _, e := range x {
			found = stripKey(e, key) || found
		}
	}
	return found
}

// arrayEquality reports whether where compares an Array field (the demo's
// "tags") with a scalar.
func arrayEquality(where map[string]any) bool {
	_, ok := where["tags"].(string)
	return ok
}

func brief(m any) string {
	s := jsonString(m)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// The differential suite on the demo data: every query through Parse
// Server's REST API and through parsemcp's query_class and count_objects,
// as the master key, anonymous, and four demo users logged in through
// Parse Server (the same session tokens reach parsemcp).
func TestDifferentialDemoQueries(t *testing.T) {
	db, ps := demoDB(t, 600)
	p := newPair(t, db, ps, agent.Readonly)
	callers := []who{{name: "master"}, {name: "anonymous", anon: true}}
	for _, u := range []string{demo.AdminUsername, demo.MemberUsername, demo.SupportUsername, demo.GlobexUsername} {
		callers = append(callers, who{name: u, token: login(t, ps, u)})
	}
	all := specs(demoQueries())
	if len(all) < 300 {
		t.Fatalf("%d queries, want at least 300", len(all))
	}
	d := &diffs{t: t}
	for _, q := range all {
		for _, w := range callers {
			p.compareFind(d, w, q)
		}
	}
	d.report("queries")
}
