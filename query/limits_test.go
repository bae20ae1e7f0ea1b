package query_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The caps count the whole where: sub-queries, conditions side by side,
// and every list, not one operator at a time.
func TestShapeLimitsCountTheWholeWhere(t *testing.T) {
	resolve := func(class string) (parse.Schema, error) {
		if class == parse.ClassUser {
			u := parse.NewSchema(parse.ClassUser)
			u.Fields["username"] = parse.Field{Type: parse.TypeString}
			return u, nil
		}
		return parse.Schema{}, fmt.Errorf("unknown class %s", class)
	}
	ors := func(field string, n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`{"%s": "n%d"}`, field, i)
		}
		return `{"$or": [` + strings.Join(parts, ",") + `]}`
	}
	side := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"meta.k%d": %d`, i, i)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	vals := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(`"v%d"`, i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	for _, c := range []struct {
		name, where, msg string
	}{
		{"5,000 $or branches", ors("name", 5000), "elements of $or/$and/$nor"},
		{"$or in a sub-query", `{"owner": {"$inQuery": {"className": "_User", "where": ` + ors("username", 200) + `}}, "$and": [` + ors("name", 100) + `]}`, "301 elements"},
		{"conditions side by side", side(query.MaxConstraints + 1), "501 conditions"},
		{"conditions", `{"$or": [` + strings.Repeat(`{"score": {"$gt": 1, "$lt": 9}},`, 250) + `{"score": 1}]}`, "501 conditions"},
		{"values of $all are conditions", `{"$and": [{"tags": {"$all": ` + vals(100) + `}}, {"tags": {"$all": ` + vals(100) + `}}, {"tags": {"$all": ` + vals(100) + `}}, {"tags": {"$all": ` + vals(100) + `}}, {"tags": {"$all": ` + vals(100) + `}}, {"score": 1}]}`, "501 conditions"},
		{"values of several lists", `{"tags": {"$in": ` + vals(6000) + `}, "name": {"$nin": ` + vals(6000) + `}}`, "12000 in $in"},
		{"$all", `{"tags": {"$all": ` + vals(query.MaxAllValues+1) + `}}`, "in $all"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := decode(t, c.where)
			_, err := query.Parser{Resolve: resolve}.Where(testSchema(), m)
			var qe *query.Error
			if !errors.As(err, &qe) || qe.Path != "where" || !strings.Contains(qe.Msg, c.msg) {
				t.Fatalf("got %v, want a refusal at where mentioning %q", err, c.msg)
			}
		})
	}
	if _, err := query.ParseWhere(testSchema(), decode(t, ors("name", query.MaxBranches))); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
}

func decode(t *testing.T, js string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(js), &m); err != nil {
		t.Fatalf("bad test JSON: %v", err)
	}
	return m
}
