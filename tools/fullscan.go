package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// guardFullScan refuses, when the operator opted in (RefuseFullScans) and
// the class is not allowed one, a query whose plan reads every row of a
// class larger than the threshold: the same rule as explain_query.
func guardFullScan(ctx context.Context, c *Call, cls *agent.Class, q *query.Query) error {
	cfg := c.config()
	if !cfg.RefuseFullScans || cfg.FullScanThreshold <= 0 || slices.Contains(cfg.FullScanAllowed, cls.Name()) {
		return nil
	}
	plan, err := cls.Explain(ctx, q)
	if errors.Is(err, agent.ErrNoExplain) {
		return nil // a backend without plans cannot tell
	}
	if err != nil || !plan.FullScan {
		return err
	}
	return refuseFullScan(ctx, c, cls, suggestIndex(q.Where, q.Order))
}

// refuseFullScan refuses a full scan of class when it holds more rows
// than the threshold.
func refuseFullScan(ctx context.Context, c *Call, cls *agent.Class, suggest []map[string]int) error {
	cfg := c.config()
	if cfg.FullScanThreshold <= 0 {
		return nil
	}
	class := cls.Name()
	n, err := cls.Count(ctx, &query.Query{Class: class})
	if err != nil || n <= cfg.FullScanThreshold {
		return err
	}
	d := map[string]any{"row_count": n, "threshold": cfg.FullScanThreshold}
	hint := "add a constraint on an indexed field"
	if len(suggest) > 0 {
		d["suggested_index"] = suggest
		hint = "an index on " + strings.Join(indexFields(suggest), ", ") + " would serve it; until then add a constraint on an indexed field"
	}
	return Refusal("full_scan_refused", fmt.Sprintf("the query would scan all %d rows of %s (more than %d); %s", n, class, cfg.FullScanThreshold, hint), d)
}

// suggestIndex proposes index keys for a where and order: equality fields
// first, then ranges and sets, then the sort keys, each once.
func suggestIndex(where query.Expr, order []query.OrderKey) []map[string]int {
	var eq, rng []string
	var visit func(e query.Expr)
	visit = func(e query.Expr) {
		switch x := e.(type) {
		case query.And:
			for _, s := range x.Exprs {
				visit(s)
			}
		case query.Cmp:
			if len(x.Path.Sub) == 0 && !x.ArrayElem && x.Value != nil {
				if x.Op == query.OpEq {
					eq = append(eq, x.Path.Field)
				} else if x.Op != query.OpNe {
					rng = append(rng, x.Path.Field)
				}
			}
		case query.In:
			if len(x.Path.Sub) == 0 && !x.ArrayElem && !x.Not {
				rng = append(rng, x.Path.Field)
			}
		case query.InQuery:
			if !x.Not {
				rng = append(rng, x.Path.Field)
			}
		}
	}
	if where != nil {
		visit(where)
	}
	var out []map[string]int
	seen := map[string]bool{}
	add := func(f string, dir int) {
		if !seen[f] && f != parse.FieldObjectID {
			seen[f] = true
			out = append(out, map[string]int{f: dir})
		}
	}
	for _, f := range eq {
		add(f, 1)
	}
	for _, f := range rng {
		add(f, 1)
	}
	for _, k := range order {
		if k.Desc {
			add(k.Field, -1)
		} else {
			add(k.Field, 1)
		}
	}
	return out
}

func indexFields(keys []map[string]int) []string {
	var out []string
	for _, k := range keys {
		for f := range k {
			out = append(out, f)
		}
	}
	return slices.Clip(out)
}
