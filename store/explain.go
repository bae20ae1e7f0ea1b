package store

import (
	"context"

	"github.com/parsemcp/parsemcp/query"
)

// Plan is a database's plan for a find, reduced to what an agent can act on.
type Plan struct {
	// FullScan is true when the plan reads every row of the class's table.
	FullScan bool
	// Indexes names the indexes the plan uses on the class's table.
	Indexes []string
	// Detail is the database's own plan, one line per node.
	Detail []string
}

// Explainer is implemented by stores that can show their query plans.
type Explainer interface {
	Explain(ctx context.Context, q *query.Query) (Plan, error)
}
