package parserest_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// TestAggregateStagesPGLacks: the stages Parse Server's PostgreSQL adapter
// does not run are refused before any request, with store.ErrUnsupported
// naming the stage. Passing them on would be wrong: Parse Server 9 on
// PostgreSQL ignores them and answers the class's rows (checked first).
func TestAggregateStagesPGLacks(t *testing.T) {
	srv := startServer(t)
	for _, n := range []float64{1, 2} {
		if code, body := srv.Request(http.MethodPost, "/classes/Thing", map[string]any{"n": n}, "", true); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, body)
		}
	}
	code, res := srv.RequestJSON(http.MethodGet, "/aggregate/Thing?pipeline="+url.QueryEscape(`[{"$facet":{"a":[{"$count":"c"}]}}]`), nil, "", true)
	if rows, _ := res["results"].([]any); code != http.StatusOK || len(rows) != 2 {
		t.Fatalf("Parse Server's answer to $facet changed (it ignored the stage): %d %v", code, res)
	}
	st := openStore(t, srv)
	sch := parse.NewSchema("Thing")
	sch.Fields["n"] = parse.Field{Type: parse.TypeNumber}
	sch.Fields["up"] = parse.Field{Type: parse.TypePointer, TargetClass: "Thing"}
	resolve := func(class string) (parse.Schema, error) { s := sch; s.ClassName = class; return s, nil }
	cases := map[string]string{
		"$facet":       `[{"$facet": {"a": [{"$count": "n"}]}}]`,
		"$bucket":      `[{"$match": {"n": 1}}, {"$bucket": {"groupBy": "$n", "boundaries": [0, 1], "default": "x"}}]`,
		"$bucketAuto":  `[{"$bucketAuto": {"groupBy": "$n", "buckets": 2}}]`,
		"$replaceWith": `[{"$replaceWith": {"m": "$n"}}]`,
		"$replaceRoot": `[{"$replaceRoot": {"newRoot": {"m": "$n"}}}]`,
		"$unionWith":   `[{"$unionWith": "Other"}]`,
		"$graphLookup": `[{"$graphLookup": {"from": "Thing", "startWith": "$up", "connectFromField": "up", "connectToField": "_id", "as": "c"}}]`,
	}
	for stage, pipeline := range cases {
		p, err := query.ParsePipelineJSON(sch, resolve, []byte(pipeline))
		if err != nil {
			t.Fatalf("%s: %v", pipeline, err)
		}
		_, err = st.Aggregate(context.Background(), "Thing", p, query.NoACLFilter)
		if !errors.Is(err, store.ErrUnsupported) || !strings.Contains(err.Error(), stage) {
			t.Errorf("%s: got %v, want store.ErrUnsupported naming %s", pipeline, err, stage)
		}
	}
}
