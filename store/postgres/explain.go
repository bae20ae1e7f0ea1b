package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// Explain returns PostgreSQL's EXPLAIN for the find q.
func (s *Store) Explain(ctx context.Context, q *query.Query) (store.Plan, error) {
	sch, err := s.schemas.Shared(ctx, q.Class)
	if err != nil {
		return store.Plan{}, err
	}
	sqlText, args, _ := s.kit.FindSQL(sch, q)
	var raw string
	if err := s.pool.QueryRow(ctx, "EXPLAIN (FORMAT JSON) "+sqlText, args...).Scan(&raw); err != nil {
		return store.Plan{}, wrapErr(ctx, err)
	}
	var doc []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(raw), &doc); err != nil || len(doc) == 0 {
		return store.Plan{}, fmt.Errorf("explain: %w", err)
	}
	var p store.Plan
	doc[0].Plan.walk(q.Class, 0, &p)
	return p, nil
}

type planNode struct {
	NodeType     string     `json:"Node Type"`
	RelationName string     `json:"Relation Name"`
	IndexName    string     `json:"Index Name"`
	ParentRel    string     `json:"Parent Relationship"`
	PlanRows     float64    `json:"Plan Rows"`
	TotalCost    float64    `json:"Total Cost"`
	Filter       string     `json:"Filter"`
	Plans        []planNode `json:"Plans"`
}

func (n planNode) walk(class string, depth int, p *store.Plan) {
	line := strings.Repeat("  ", depth) + n.NodeType
	if n.RelationName != "" {
		line += " on " + n.RelationName
	}
	if n.IndexName != "" {
		line += " using " + n.IndexName
	}
	// No row or cost estimates: they come from statistics over every row,
	// including rows the agent may not see.
	p.Detail = append(p.Detail, line)
	// Sub-plans (InitPlan/SubPlan) belong to sub-queries on other classes.
	if n.RelationName == class && n.ParentRel != "InitPlan" && n.ParentRel != "SubPlan" {
		switch {
		case n.NodeType == "Seq Scan":
			p.FullScan = true
		case n.IndexName != "":
			p.Indexes = append(p.Indexes, n.IndexName)
		}
	}
	for _, c := range n.Plans {
		c.walk(class, depth+1, p)
	}
}
