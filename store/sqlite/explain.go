package sqlite

import (
	"context"
	"regexp"
	"strings"

	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

var usingIndexRE = regexp.MustCompile(`USING (?:COVERING )?INDEX (\S+)`)

// Explain returns SQLite's EXPLAIN QUERY PLAN for the find q.
func (s *Store) Explain(ctx context.Context, q *query.Query) (store.Plan, error) {
	sch, err := s.schemas.Shared(ctx, q.Class)
	if err != nil {
		return store.Plan{}, err
	}
	sqlText, args, _ := s.kit.FindSQL(sch, q)
	rows, err := s.db.QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlText, args...)
	if err != nil {
		return store.Plan{}, wrapErr(ctx, err)
	}
	defer rows.Close()
	var p store.Plan
	table := s.d.Ident(q.Class)
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			return store.Plan{}, err
		}
		p.Detail = append(p.Detail, detail)
		// "SEARCH Ticket USING INDEX …" looks rows up through an index;
		// "SCAN Ticket" reads every row, in table or (USING INDEX) index
		// order. Only the outer table counts (sub-queries scan their own).
		name := strings.Trim(strings.TrimPrefix(strings.TrimPrefix(detail, "SCAN "), "SEARCH "), " ")
		name, _, _ = strings.Cut(name, " ")
		if name != q.Class && name != table {
			continue
		}
		if m := usingIndexRE.FindStringSubmatch(detail); m != nil {
			p.Indexes = append(p.Indexes, m[1])
		}
		if strings.HasPrefix(detail, "SCAN ") {
			p.FullScan = true
		}
	}
	return p, rows.Err()
}
