// Package sqlkit is what the two SQL backends (store/sqlite, store/postgres)
// share: Parse Server's layout gives them the same statements and rows, so
// only the dialect and the column codecs differ. It is not part of the
// public API; store keeps what every backend needs.
package sqlkit

import (
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/query/textsearch"
	"github.com/parsemcp/parsemcp/store"
)

// FindSQL renders the SELECT of q on sch. fields are the fields the row
// holds, in order (ACL reads two columns, Relations none); noLimit is the
// dialect's bind value meaning "no limit".
func FindSQL(d sqlcompile.Dialect, sch parse.Schema, q *query.Query, noLimit any) (sqlText string, args []any, fields []string) {
	fields = ReadFields(sch, q.Keys)
	b := &sqlcompile.Builder{D: d}
	sel := selectList(d, sch, fields)
	if q.WantsScore() {
		// The rank is the row's last column (ReadFields lists it last).
		sel += ", " + b.Score(q)
	}
	sqlText = "SELECT " + sel + " FROM " + d.Ident(q.Class)
	if w := b.Where(q); w != "" {
		sqlText += " WHERE " + w
	}
	sqlText += " ORDER BY " + b.Order(q)
	var limit any = int64(q.Limit)
	if q.Limit < 0 {
		limit = noLimit
	}
	sqlText += " LIMIT " + b.Param(limit) + " OFFSET " + b.Param(int64(q.Skip))
	return sqlText, b.Args, fields
}

// selectList renders the columns holding fields, as DecodeRow reads them.
func selectList(d sqlcompile.Dialect, sch parse.Schema, fields []string) string {
	var sel strings.Builder
	sel.Grow(16 * len(fields))
	add := func(col string) {
		if sel.Len() > 0 {
			sel.WriteString(", ")
		}
		sel.WriteString(d.Ident(col))
	}
	for _, f := range fields {
		switch {
		case f == parse.FieldACL:
			add("_rperm")
			add("_wperm")
		case sch.Fields[f].Type == parse.TypeRelation, f == query.ScoreKey:
			// No column; the rank is FindSQL's to render.
		default:
			add(f)
		}
	}
	return sel.String()
}

// CountSQL renders the count of q's rows.
func CountSQL(d sqlcompile.Dialect, q *query.Query) (string, []any) {
	b := &sqlcompile.Builder{D: d}
	sqlText := "SELECT count(*) FROM " + d.Ident(q.Class)
	if w := b.Where(q); w != "" {
		sqlText += " WHERE " + w
	}
	return sqlText, b.Args
}

// ColumnCodec is how a backend reads its columns back.
type ColumnCodec struct {
	// Perms reads a `_rperm`/`_wperm` column; ok is false for NULL.
	Perms func(v any) (entries []string, ok bool, err error)
	// Value reads a field's column into its normalized form.
	Value func(f parse.Field, v any) (parse.Normalized, error)
}

// DecodeRow builds the REST object of one row read by FindSQL.
func DecodeRow(c ColumnCodec, sch parse.Schema, fields []string, vals []any) (parse.Object, error) {
	obj := make(parse.Object, len(fields))
	err := rowValues(c, sch, fields, vals, func(_ int, name string, v any) { obj[name] = v })
	if err != nil {
		return nil, err
	}
	return obj, nil
}

// rowValues calls set with the REST value of each field one row read by
// FindSQL holds, in the order of fields (i is the field's index there); a
// NULL column is no field. It is the one reading of a row: DecodeRow
// builds an object of it, RowWriter JSON text.
func rowValues(c ColumnCodec, sch parse.Schema, fields []string, vals []any, set func(i int, name string, v any)) error {
	return readRow(c, sch, fields, vals, set, rowHooks{})
}

// rowHooks let a reader of rows take some fields before they become REST
// values (RowWriter writes them as JSON straight from what the columns
// hold). A hook returning false leaves the field to the REST value.
type rowHooks struct {
	// typed is offered each field's normalized value.
	typed func(i int, n parse.Normalized) bool
	// acl is offered the row's _rperm and _wperm entries.
	acl func(i int, r, w []string) bool
	// text is offered the bytes of each *RawText column (QueryRawText);
	// one it refuses goes on to ColumnCodec.Value, which copies them.
	text func(i int, b []byte) bool
}

func readRow(c ColumnCodec, sch parse.Schema, fields []string, vals []any, set func(i int, name string, v any), h rowHooks) error {
	i := 0
	for fi, name := range fields {
		f := sch.Fields[name]
		switch {
		case name == parse.FieldACL:
			r, rok, err := c.Perms(vals[i])
			if err != nil {
				return fmt.Errorf("class %s: _rperm: %w", sch.ClassName, err)
			}
			w, wok, err := c.Perms(vals[i+1])
			if err != nil {
				return fmt.Errorf("class %s: _wperm: %w", sch.ClassName, err)
			}
			if rok || wok {
				if r == nil {
					r = []string{}
				}
				if w == nil {
					w = []string{}
				}
				if h.acl == nil || !h.acl(fi, r, w) {
					set(fi, parse.FieldACL, parse.ACLFromPerms(r, w).Encode())
				}
			}
			i += 2
			continue
		case name == query.ScoreKey:
			if v, ok := scoreValue(vals[i]); ok {
				set(fi, query.ScoreField, v)
			}
			i++
			continue
		case f.Type == parse.TypeRelation:
			set(fi, name, parse.Relation(f.TargetClass))
			continue
		}
		v := vals[i]
		i++
		if v == nil {
			continue
		}
		if rt, ok := v.(*RawText); ok && h.text != nil && h.text(fi, rt.B) {
			continue
		}
		n, err := c.Value(f, v)
		if err != nil {
			return fmt.Errorf("class %s field %s: %w", sch.ClassName, name, err)
		}
		if h.typed != nil && h.typed(fi, n) {
			continue
		}
		set(fi, name, parse.Denormalize(name, f, n))
	}
	return nil
}

// writeWhere renders the predicate selecting w's row: its objectId, w.Where
// compiled as a find's where is, and the write ACL on `_wperm`
// (sqlcompile.Builder.ACLClause: an unset WriteACL reaches no row).
func writeWhere(b *sqlcompile.Builder, w store.Write) string {
	parts := []string{b.D.Ident(parse.FieldObjectID) + " = " + b.Param(w.ID)}
	if s := b.Constraint(w.Where); s != "" {
		parts = append(parts, "("+s+")")
	}
	if acl := b.ACLClause(b.D.Ident("_wperm"), w.WriteACL); acl != "" {
		parts = append(parts, acl)
	}
	return strings.Join(parts, " AND ")
}

// SelectWriteSQL renders the read of the row w may change, every field, as
// FindSQL reads rows; lock is appended (" FOR UPDATE" where the database
// locks rows).
func SelectWriteSQL(d sqlcompile.Dialect, sch parse.Schema, w store.Write, lock string) (sqlText string, args []any, fields []string) {
	fields = ReadFields(sch, nil)
	b := &sqlcompile.Builder{D: d}
	sqlText = "SELECT " + selectList(d, sch, fields) + " FROM " + d.Ident(w.Class) + " WHERE " + writeWhere(b, w) + lock
	return sqlText, b.Args, fields
}

// UpdateSQL renders the one UPDATE of w's row: it sets sets only if the
// row still matches w, and returns the row as it is afterwards.
func UpdateSQL(d sqlcompile.Dialect, sch parse.Schema, w store.Write, sets []Assignment) (sqlText string, args []any, fields []string) {
	fields = ReadFields(sch, nil)
	b := &sqlcompile.Builder{D: d}
	cols := make([]string, len(sets))
	for i, a := range sets {
		if a.Value == nil {
			cols[i] = d.Ident(a.Column) + " = NULL"
			continue
		}
		cols[i] = d.Ident(a.Column) + " = " + b.Param(a.Value)
	}
	sqlText = "UPDATE " + d.Ident(w.Class) + " SET " + strings.Join(cols, ", ") +
		" WHERE " + writeWhere(b, w) + " RETURNING " + selectList(d, sch, fields)
	return sqlText, b.Args, fields
}

// DeleteSQL renders the DELETE of w's row, returning the deleted row.
func DeleteSQL(d sqlcompile.Dialect, sch parse.Schema, w store.Write) (sqlText string, args []any, fields []string) {
	fields = ReadFields(sch, nil)
	b := &sqlcompile.Builder{D: d}
	sqlText = "DELETE FROM " + d.Ident(w.Class) + " WHERE " + writeWhere(b, w) + " RETURNING " + selectList(d, sch, fields)
	return sqlText, b.Args, fields
}

// ReadFields lists the fields a find reads for keys (nil: all): the system
// fields (the ACL too, as Parse Server returns it whatever the keys) and
// the Relation markers always, then the requested ones, in schema order. Relation fields
// are included (they have no column; backends return the Relation marker).
// Keys naming $score add query.ScoreKey last (the rank's column), and the
// rank replaces a field named "score".
func ReadFields(sch parse.Schema, keys []string) []string {
	all := keys == nil
	var want map[string]bool // the keys' top-level fields
	if !all {
		want = make(map[string]bool, len(keys))
		for _, k := range keys {
			head, _, _ := strings.Cut(k, ".")
			want[head] = true
		}
	}
	score := want[query.ScoreKey]
	names := sch.FieldNames() // the caller's own: filtered in place
	out := names[:0]
	for _, name := range names {
		if score && name == query.ScoreField {
			continue // the rank takes the name (query.ScoreField)
		}
		// Relation markers come back whatever the keys, as in Parse Server.
		if all || parse.IsSystemField(name) || want[name] || sch.Fields[name].Type == parse.TypeRelation {
			out = append(out, name)
		}
	}
	if score {
		out = append(out, query.ScoreKey)
	}
	return out
}

// scoreValue reads the rank column: a float4 (PostgreSQL) or a float64
// already rounded to one (SQLite), as the number PostgreSQL prints.
func scoreValue(v any) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return textsearch.Score(x), true
	case float64:
		return textsearch.Score(float32(x)), true
	}
	return 0, false
}
