package query_test

import (
	"reflect"
	"strings"
	"testing"
)

// WithLimit gives the pipeline the parser gives for the same stages
// followed by {"$limit": n}: stages, output, limit flag and raw stages,
// without the caller's pipeline being changed.
func TestPipelineWithLimit(t *testing.T) {
	for _, js := range []string{
		`[]`,
		`[{"$group": {"_id": "$name", "count": {"$sum": 1}}}]`,
		`[{"$group": {"_id": "$owner", "n": {"$sum": 1}, "avg": {"$avg": "$score"}}}, {"$sort": {"n": -1, "_id": 1}}]`,
		`[{"$match": {"score": {"$gt": 2}}}, {"$project": {"_id": 0, "name": 1, "o": "$owner"}}, {"$skip": 3}]`,
		`[{"$lookup": {"from": "_User", "localField": "owner", "foreignField": "_id", "as": "u"}}, {"$unwind": "$u"}]`,
		`[{"$unwind": {"path": "$tags", "includeArrayIndex": "i"}}, {"$addFields": {"x": "$meta.plan"}}]`,
		`[{"$sortByCount": "$team"}]`,
		`[{"$limit": 5}]`,
	} {
		p, err := parsePL(t, js)
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		before := *p
		stages := len(p.Stages)
		got := p.WithLimit(1000)
		withText := `[{"$limit":1000}]`
		if stages > 0 {
			withText = strings.TrimSuffix(js, "]") + `,{"$limit":1000}]`
		}
		want, err := parsePL(t, withText)
		if err != nil {
			t.Fatalf("%s: %v", withText, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: WithLimit gave\n%+v\nthe parser\n%+v", js, got, want)
		}
		if len(p.Stages) != stages || !reflect.DeepEqual(*p, before) {
			t.Errorf("%s: WithLimit changed the pipeline it was called on", js)
		}
	}
}
