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
	"github.com/parsemcp/parsemcp/store"
)

// refusesFullScans reports whether the operator refuses full scans of
// cls: RefuseFullScans is on, a threshold is set, and neither the
// --full-scan-allow list nor the policy's allow_full_scan spares the
// class.
func refusesFullScans(c *Call, cls *agent.Class) bool {
	cfg := c.config()
	if !cfg.RefuseFullScans || cfg.FullScanThreshold <= 0 || slices.Contains(cfg.FullScanAllowed, cls.Name()) {
		return false
	}
	m := cls.Meta()
	return m == nil || !m.AllowFullScan
}

// guardFullScan refuses, when the operator refuses full scans of cls
// (refusesFullScans), a find q whose plan reads every row of a class
// holding more rows than the threshold. Every read tool that can scan
// asks it before reading; explain_query judges its plan by the same rule
// (judgeScan).
func guardFullScan(ctx context.Context, c *Call, cls *agent.Class, q *query.Query) error {
	if !refusesFullScans(c, cls) {
		return nil
	}
	plan, err := cls.Explain(ctx, q)
	if errors.Is(err, agent.ErrNoExplain) {
		return nil // a backend without plans cannot tell
	}
	if err != nil {
		return err
	}
	_, _, err = judgeScan(ctx, c, cls, plan, suggestIndex(q.Where, q.Order))
	return err
}

// judgeScan sizes the class a full-scan plan reads (when a threshold is
// set: counted reports it) and refuses the scan when the operator
// refuses full scans of cls and the class holds more rows than the
// threshold. A plan that uses an index is neither sized nor refused.
func judgeScan(ctx context.Context, c *Call, cls *agent.Class, plan store.Plan, suggest []map[string]int) (n int64, counted bool, err error) {
	cfg := c.config()
	if !plan.FullScan || cfg.FullScanThreshold <= 0 {
		return 0, false, nil
	}
	n, err = cls.Count(ctx, &query.Query{Class: cls.Name()})
	var denied *agent.DeniedError
	switch {
	case errors.As(err, &denied):
		// The agent may find but not count (class-level permissions): the
		// class is sized as the operator's store holds it, for the
		// decision only; the agent is not told the number.
		if !refusesFullScans(c, cls) {
			return 0, false, nil
		}
		if n, err = cls.StoredRows(ctx); err != nil {
			return 0, false, err
		}
		if n > cfg.FullScanThreshold {
			return 0, false, scanRefusal(cls.Name(), -1, cfg.FullScanThreshold, suggest)
		}
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	if refusesFullScans(c, cls) && n > cfg.FullScanThreshold {
		return n, true, scanRefusal(cls.Name(), n, cfg.FullScanThreshold, suggest)
	}
	return n, true, nil
}

// guardPipelineScan is guardFullScan for a pipeline on cls: the rows
// entering it are those of a find constrained by its leading $match
// stages (the scope's rules ANDed in when the find is explained). A
// pipeline that does not start with $match reads the whole class.
func guardPipelineScan(ctx context.Context, c *Call, cls *agent.Class, p *query.Pipeline) error {
	var lead []query.Expr
	for _, st := range p.Stages {
		m, ok := st.(*query.MatchStage)
		if !ok {
			break
		}
		lead = append(lead, m.Where)
	}
	return guardFullScan(ctx, c, cls, &query.Query{Class: cls.Name(), Where: query.AndOf(lead...)})
}

// scanRefusal is the refusal of a full scan of class, which holds n rows
// (n < 0: a number the agent is not told), more than threshold.
func scanRefusal(class string, n, threshold int64, suggest []map[string]int) error {
	d := map[string]any{"threshold": threshold}
	rows := fmt.Sprintf("all %d rows", n)
	if n >= 0 {
		d["row_count"] = n
	} else {
		rows = "every row"
	}
	hint := "add a constraint on an indexed field"
	if len(suggest) > 0 {
		d["suggested_index"] = suggest
		hint = "an index on " + strings.Join(indexFields(suggest), ", ") + " would serve it; until then add a constraint on an indexed field"
	}
	return Refusal("full_scan_refused", fmt.Sprintf("the query would scan %s of %s (more than %d); %s", rows, class, threshold, hint), d)
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
		if k.Field == query.ScoreKey {
			continue // the rank of a $text: no index key
		}
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
