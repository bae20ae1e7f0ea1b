package sqlkit

import (
	"fmt"
	"time"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/internal/prepare"
)

// ColumnEncoder is how a backend writes its columns.
type ColumnEncoder struct {
	// Value encodes a field's normalized, non-null value.
	Value func(f parse.Field, n parse.Normalized) (any, error)
	// Perms encodes a `_rperm`/`_wperm` array; nil entries mean NULL.
	Perms func(entries []string) any
	// Date encodes createdAt/updatedAt.
	Date func(t time.Time) any
}

// Assignment is one column an UPDATE sets.
type Assignment struct {
	Column string
	Value  any // nil: NULL
}

// Assignments lists the columns c sets, with e's encoding: updatedAt, then
// `_rperm` and `_wperm` when the ACL changes, then the fields.
func Assignments(c prepare.UpdateSet, e ColumnEncoder, updatedAt time.Time) ([]Assignment, error) {
	out := make([]Assignment, 0, len(c.Fields)+3)
	out = append(out, Assignment{parse.FieldUpdatedAt, e.Date(updatedAt)})
	if c.SetACL {
		rp, wp := c.ACL.Perms()
		out = append(out, Assignment{"_rperm", e.Perms(rp)}, Assignment{"_wperm", e.Perms(wp)})
	}
	for i, name := range c.Fields {
		if c.Values[i].Null {
			out = append(out, Assignment{name, nil})
			continue
		}
		v, err := e.Value(c.Types[i], c.Values[i])
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", name, err)
		}
		out = append(out, Assignment{name, v})
	}
	return out, nil
}

// NextUpdatedAt is the updatedAt an update of before writes: now, at
// Parse's millisecond precision, or just after before's updatedAt when the
// clock has not moved past it, so updatedAt always advances.
func NextUpdatedAt(before parse.Object, now time.Time) time.Time {
	now = now.UTC().Truncate(time.Millisecond)
	if s, ok := before[parse.FieldUpdatedAt].(string); ok {
		if prev, err := parse.ParseDate(s); err == nil && !now.After(prev) {
			return prev.Add(time.Millisecond)
		}
	}
	return now
}
