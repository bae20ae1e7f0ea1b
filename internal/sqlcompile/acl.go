package sqlcompile

import (
	"github.com/parsemcp/parsemcp/query"
)

// ACLClause renders f's predicate on the permission column col (an
// identifier as the dialect quotes it): "" for query.NoACLFilter, a
// predicate no row meets for the zero value, else "(col IS NULL OR col
// overlaps the entries)". It is the one place the ACL becomes SQL: reads, joined
// rows and writes all call it.
func (b *Builder) ACLClause(col string, f query.ACLFilter) string {
	switch {
	case !f.IsSet():
		return "1=0"
	case f.IsOpen():
		return ""
	}
	entries := f.Entries()
	if len(entries) == 0 {
		return col + " IS NULL"
	}
	phs := make([]string, len(entries))
	for i, e := range entries {
		phs[i] = b.Param(e)
	}
	return "(" + col + " IS NULL OR " + b.D.ACLOverlap(col, phs) + ")"
}
