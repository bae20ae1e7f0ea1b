package parserest

import (
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// A field named score that the caller does not read (the governed scope
// names every key it reads) is no clash: ordering by $score is not
// refused, so the refusal cannot tell that a hidden field of that name
// exists. Reading the field while ordering by the rank is refused.
func TestScoreClashOnlyForAFieldRead(t *testing.T) {
	sch := parse.NewSchema("Review")
	sch.Fields["body"] = parse.Field{Type: parse.TypeString}
	sch.Fields["score"] = parse.Field{Type: parse.TypeNumber}
	text := query.Text{Path: query.Path{Field: "body", Type: parse.TypeString}, Term: "great", Language: "english"}
	order := []query.OrderKey{{Field: query.ScoreKey, Desc: true}}
	q := &query.Query{Class: "Review", Where: text, Order: order, Keys: []string{"body"}}
	if _, keys, ok, err := scoreQuery(sch, q); err != nil || !ok || keys[len(keys)-1] != query.ScoreKey {
		t.Fatalf("order $score, keys [body] on a class with a field named score: %v %v %v", keys, ok, err)
	}
	for _, keys := range [][]string{nil, {"body", "score"}} {
		if _, _, _, err := scoreQuery(sch, &query.Query{Class: "Review", Where: text, Order: order, Keys: keys}); err == nil {
			t.Errorf("keys %v: the field and the rank would share a column, and no error says so", keys)
		}
	}
}
