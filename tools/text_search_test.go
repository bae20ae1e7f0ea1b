package tools_test

import (
	"slices"
	"testing"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/testing/fixture"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/tools"
)

// text_search returns the rows whose field matches the term, best first:
// PostgreSQL's cover-density rank (three occurrences of the word outrank
// one), equal ranks in objectId order, each row with its score; the
// caller's where narrows the search, keys the fields, and next_call pages.
func TestTextSearchRanks(t *testing.T) {
	e := admin(t)
	for _, title := range []string{"leak leak leak in the fuel line", "another small leak"} {
		e.ok("create_object", map[string]any{"class_name": "Ticket", "object": map[string]any{"title": title, "status": "closed", "priority": 2}})
	}
	out := e.ok("text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak"})
	rows := objs(t, out["results"])
	if len(rows) != 3 || rows[0]["title"] != "leak leak leak in the fuel line" {
		t.Fatalf("best match first: %v", rows)
	}
	s0, s1, s2 := rows[0]["score"].(float64), rows[1]["score"].(float64), rows[2]["score"].(float64)
	if !(s0 > s1 && s1 == s2 && s2 > 0) {
		t.Fatalf("scores %v %v %v: want one best, then two equal", s0, s1, s2)
	}
	if a, b := rows[1]["objectId"].(string), rows[2]["objectId"].(string); a > b {
		t.Fatalf("equal ranks out of objectId order: %s, %s", a, b)
	}

	// where narrows; keys keep the fields asked for, and the score.
	out = e.ok("text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak", "where": map[string]any{"status": "open"}, "keys": []string{"status"}})
	rows = objs(t, out["results"])
	if len(rows) != 1 || rows[0]["objectId"] != t1 || rows[0]["title"] != nil || rows[0]["status"] != "open" || rows[0]["score"] == nil {
		t.Fatalf("where and keys: %v", rows)
	}

	// Pages: the second page starts where the first ended.
	out = e.ok("text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak", "limit": 2})
	if len(objs(t, out["results"])) != 2 || out["truncated"] != true {
		t.Fatalf("page 1: %v", out)
	}
	if got := objs(t, e.next("text_search", out)["results"]); len(got) != 1 {
		t.Fatalf("page 2: %v", got)
	}

	// Terms use to_tsquery's syntax; a broken one is refused, not run.
	e.refused("text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "fuel leak"}, tools.CodeInvalidQuery, "join words with &")
	e.refused("text_search", map[string]any{"class_name": "Ticket", "field": "priority", "term": "leak"}, tools.CodeInvalidQuery, "String fields")
	e.refused("text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak", "language": "klingon"}, tools.CodeInvalidArgument, "language")
}

// A search is a read like any other: a row the caller's ACL does not
// admit is not found, a hidden class reads as one that does not exist,
// and a field the caller may not see cannot be searched.
func TestTextSearchGoverned(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	all := ids(t, e.ok("text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak | task"})["results"])
	if !slices.Equal(all, []string{t1, t5}) {
		t.Fatalf("master: %v", all)
	}
	alice := e.as(asUser(agent.Readonly, fixture.Alice))
	if got := ids(t, alice.ok("text_search", map[string]any{"class_name": "Ticket", "field": "title", "term": "leak | task"})["results"]); !slices.Equal(got, []string{t1}) {
		t.Fatalf("alice: %v, want only what her ACL admits", got)
	}
	hidden := alice.withCatalog(&agent.Catalog{Classes: map[string]*agent.ClassMeta{"Project": {Hidden: agent.HiddenAlways}}})
	hidden.refused("text_search", map[string]any{"class_name": "Project", "field": "name", "term": "apollo"}, classNotFound, "")
	email := alice.refused("text_search", map[string]any{"class_name": "_User", "field": "email", "term": "example"}, fieldDenied, "")
	missing := alice.refused("text_search", map[string]any{"class_name": "_User", "field": "emale", "term": "example"}, fieldDenied, "")
	if email.Code != missing.Code || len(email.Message) != len(missing.Message) {
		t.Fatalf("a protected field reads otherwise than a missing one: %q / %q", email.Message, missing.Message)
	}
}

// The rank arrives as "score" only when the call asks for it, and never
// carries a field named score the agent may not see: a hidden score
// stays hidden from a plain find, and a search's score is the rank.
func TestTextSearchScoreIsNotAHiddenField(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	review := parse.NewSchema("Review")
	review.Fields["body"] = parse.Field{Type: parse.TypeString}
	review.Fields["score"] = parse.Field{Type: parse.TypeNumber}
	e.addClass(review, parse.Object{"objectId": "r000000001", "body": "great battery, great screen", "score": 99.0})
	e = e.withCatalog(&agent.Catalog{Classes: map[string]*agent.ClassMeta{"Review": {AgentFields: []string{"body"}}}})
	search := textSearch("great")
	for _, args := range []map[string]any{
		{"class_name": "Review"},
		{"class_name": "Review", "where": map[string]any{"body": search}},
		{"class_name": "Review", "where": map[string]any{"body": search}, "order": "$score"},
	} {
		for _, row := range objs(t, e.ok("query_class", args)["results"]) {
			if _, has := row["score"]; has {
				t.Fatalf("%v: the hidden score leaks: %v", args, row)
			}
		}
	}
	rows := objs(t, e.ok("query_class", map[string]any{"class_name": "Review", "where": map[string]any{"body": search}, "keys": []string{"body", "$score"}})["results"])
	rows = append(rows, objs(t, e.ok("text_search", map[string]any{"class_name": "Review", "field": "body", "term": "great"})["results"])...)
	for _, row := range rows {
		if s, _ := row["score"].(float64); s <= 0 || s >= 1 {
			t.Fatalf("score %v: want the rank (0 to 1), not the hidden field: %v", row["score"], row)
		}
	}
	e.refused("query_class", map[string]any{"class_name": "Review", "order": "$score"}, tools.CodeInvalidQuery, "$score needs a $text")
}

// $score ranks by the caller's own $text: an operator filter's $text (on
// a field the agent may not see) is never what the rank measures, and a
// find ordered by $score without a $text of the caller's is refused even
// when a filter holds one.
func TestTextSearchScoreNotFromAFilter(t *testing.T) {
	e := newEnv(t, master(agent.Readonly))
	review := parse.NewSchema("Review")
	review.Fields["body"] = parse.Field{Type: parse.TypeString}
	review.Fields["notes"] = parse.Field{Type: parse.TypeString}
	e.addClass(review,
		parse.Object{"objectId": "r000000001", "body": "great", "notes": "fraud"},
		parse.Object{"objectId": "r000000002", "body": "great", "notes": "fraud fraud fraud suspected fraud"})
	a := master(agent.Readonly)
	a.Policy.Filters = []agent.ClassFilters{{"Review": {"notes": textSearch("fraud")}}}
	a.Policy.Catalog = &agent.Catalog{Classes: map[string]*agent.ClassMeta{"Review": {AgentFields: []string{"body"}}}}
	e = e.as(a)
	e.refused("query_class", map[string]any{"class_name": "Review", "order": "$score", "keys": []string{"body", "$score"}}, tools.CodeInvalidQuery, "$score needs a $text")
	for _, out := range []map[string]any{
		e.ok("query_class", map[string]any{"class_name": "Review", "where": map[string]any{"body": textSearch("great")}, "order": "$score", "keys": []string{"body", "$score"}}),
		e.ok("text_search", map[string]any{"class_name": "Review", "field": "body", "term": "great"}),
	} {
		rows := objs(t, out["results"])
		if len(rows) != 2 || rows[0]["score"] != rows[1]["score"] || rows[0]["notes"] != nil {
			t.Fatalf("the rank is not body's (equal for both rows): %v", rows)
		}
	}
}

func textSearch(term string) map[string]any {
	return map[string]any{"$text": map[string]any{"$search": map[string]any{"$term": term}}}
}
