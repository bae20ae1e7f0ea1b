package query

import "strings"

// ACLFilter is the ACL restriction of a read (`_rperm`) or a write
// (`_wperm`). Its zero value admits no row: a query or write whose
// filter was never decided on fails closed. NoACLFilter says, explicitly,
// that every row passes (the master key, the server's own lookups);
// ACLEntries keeps the rows whose permission column is NULL (no ACL:
// public) or holds one of the entries ("*", a user id, "role:Name").
type ACLFilter struct {
	entries []string
	set     bool
	open    bool
}

// NoACLFilter admits every row.
var NoACLFilter = ACLFilter{set: true, open: true}

// ACLEntries admits the rows with no ACL and those granting one of
// entries (no entries: only the rows with no ACL).
func ACLEntries(entries ...string) ACLFilter {
	return ACLFilter{entries: append([]string(nil), entries...), set: true}
}

// IsOpen reports whether the filter admits every row (NoACLFilter).
func (f ACLFilter) IsOpen() bool { return f.set && f.open }

// IsSet reports whether the filter was decided on (it is not the zero
// value).
func (f ACLFilter) IsSet() bool { return f.set }

// Entries returns the entries of an ACLEntries filter (nil otherwise).
func (f ACLFilter) Entries() []string {
	if !f.set || f.open {
		return nil
	}
	return append([]string(nil), f.entries...)
}

// Admits reports, in memory, whether a row whose permission column holds
// perm (nil: NULL, no ACL) passes the filter: what the SQL backends'
// ACL clause renders (internal/sqlcompile's Builder.ACLClause).
func (f ACLFilter) Admits(perm []string) bool {
	switch {
	case !f.set:
		return false
	case f.open || perm == nil:
		return true
	}
	for _, p := range perm {
		for _, e := range f.entries {
			if p == e {
				return true
			}
		}
	}
	return false
}

// String renders the filter for logs and rule keys.
func (f ACLFilter) String() string {
	switch {
	case !f.set:
		return "acl:unset"
	case f.open:
		return "acl:none"
	}
	return "acl:" + strings.Join(f.entries, ",")
}
