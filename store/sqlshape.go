package store

import (
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// The SQL backends share Parse Server's layout, so they share the shape of
// their statements and rows; only the dialect and the column codecs differ.

// FindSQL renders the SELECT of q on sch. fields are the fields the row
// holds, in order (ACL reads two columns, Relations none); noLimit is the
// dialect's bind value meaning "no limit".
func FindSQL(d query.Dialect, sch parse.Schema, q *query.Query, noLimit any) (sqlText string, args []any, fields []string) {
	fields = ReadFields(sch, q.Keys)
	var sel []string
	for _, f := range fields {
		switch {
		case f == parse.FieldACL:
			sel = append(sel, d.Ident("_rperm"), d.Ident("_wperm"))
		case sch.Fields[f].Type == parse.TypeRelation:
		default:
			sel = append(sel, d.Ident(f))
		}
	}
	b := &query.Builder{D: d}
	sqlText = "SELECT " + strings.Join(sel, ", ") + " FROM " + d.Ident(q.Class)
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

// CountSQL renders the count of q's rows.
func CountSQL(d query.Dialect, q *query.Query) (string, []any) {
	b := &query.Builder{D: d}
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
	i := 0
	for _, name := range fields {
		f := sch.Fields[name]
		switch {
		case name == parse.FieldACL:
			r, rok, err := c.Perms(vals[i])
			if err != nil {
				return nil, fmt.Errorf("class %s: _rperm: %w", sch.ClassName, err)
			}
			w, wok, err := c.Perms(vals[i+1])
			if err != nil {
				return nil, fmt.Errorf("class %s: _wperm: %w", sch.ClassName, err)
			}
			if rok || wok {
				if r == nil {
					r = []string{}
				}
				if w == nil {
					w = []string{}
				}
				obj[parse.FieldACL] = parse.ACLFromPerms(r, w).Encode()
			}
			i += 2
			continue
		case f.Type == parse.TypeRelation:
			obj[name] = parse.Relation(f.TargetClass)
			continue
		}
		v := vals[i]
		i++
		if v == nil {
			continue
		}
		n, err := c.Value(f, v)
		if err != nil {
			return nil, fmt.Errorf("class %s field %s: %w", sch.ClassName, name, err)
		}
		obj[name] = parse.Denormalize(name, f, n)
	}
	return obj, nil
}
