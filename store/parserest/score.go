package parserest

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// scoreQuery returns q as Parse Server can rank it. Parse Server on
// PostgreSQL selects the rank as a column named score only when the keys
// name $score, sorts by that column, and computes it from the first four
// bind values of the where ($2–$5): those of the where's first
// constraint. So the $text the rank is for goes first, and the keys name
// $score (and every other field the caller asked for, or all of them)
// whenever the order or the keys use it. ok is false when q does not use
// the rank.
func scoreQuery(sch parse.Schema, q *query.Query) (out *query.Query, keys []string, ok bool, err error) {
	t, ok, err := query.ScoreText(q)
	if !ok || err != nil {
		return q, nil, false, err
	}
	if _, clash := sch.Fields[query.ScoreField]; clash && !q.WantsScore() && (q.Keys == nil || slices.Contains(q.Keys, query.ScoreField)) {
		// The field is asked for, and Parse Server's rank column would
		// replace its value. (The governed scope always names the keys,
		// so this names no field an agent may not see.)
		return nil, nil, false, fmt.Errorf("%w: ordering by %s and reading a field named %q on Parse Server", store.ErrUnsupported, query.ScoreKey, query.ScoreField)
	}
	rest, _ := withoutText(q.Where, t)
	cp := *q
	cp.Where = query.AndOf(t, rest)
	keys = []string{parse.FieldObjectID}
	if q.Keys != nil {
		for _, k := range q.Keys {
			if k != query.ScoreKey && k != query.ScoreField {
				keys = append(keys, k)
			}
		}
	} else {
		for _, name := range sch.FieldNames() {
			if name != query.ScoreField && name != parse.FieldObjectID {
				keys = append(keys, name)
			}
		}
	}
	return &cp, append(keys, query.ScoreKey), true, nil
}

// withoutText is e without the $text constraint t (at its top, or in an
// $and there: where query.ScoreText finds it), once; removed says whether
// it was there.
func withoutText(e query.Expr, t query.Text) (out query.Expr, removed bool) {
	switch x := e.(type) {
	case query.Text:
		if reflect.DeepEqual(x, t) {
			return nil, true
		}
	case query.And:
		var parts []query.Expr
		for _, s := range x.Exprs {
			if !removed {
				var r bool
				if s, r = withoutText(s, t); r {
					removed = true
				}
			}
			if s != nil {
				parts = append(parts, s)
			}
		}
		return query.AndOf(slices.Clip(parts)...), removed
	}
	return e, false
}
