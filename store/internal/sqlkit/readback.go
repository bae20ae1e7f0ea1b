package sqlkit

import (
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store/internal/object"
)

// SelectIDsSQL renders the read of the rows of sch whose objectId is in ids
// (not empty), every field, as FindSQL reads rows: a backend reads back, in
// the writing transaction, what a Create committed.
func SelectIDsSQL(d sqlcompile.Dialect, sch parse.Schema, ids []string) (sqlText string, args []any, fields []string) {
	fields = ReadFields(sch, nil)
	b := &sqlcompile.Builder{D: d}
	phs := make([]string, len(ids))
	for i, id := range ids {
		phs[i] = b.Param(id)
	}
	sqlText = "SELECT " + selectList(d, sch, fields) + " FROM " + d.Ident(sch.ClassName) +
		" WHERE " + d.Ident(parse.FieldObjectID) + " IN (" + strings.Join(phs, ", ") + ")"
	return sqlText, b.Args, fields
}

// DecodeColumns builds the REST object of a row given as its columns by
// name (a row the database serialized, as a change log holds it), as
// DecodeRow builds it from a find's row. conv turns a non-null column value
// into what c.Value reads for the field; `_rperm` and `_wperm` go to
// c.Perms as they are. A missing column is NULL; columns that are not
// fields of sch are ignored.
func DecodeColumns(c ColumnCodec, sch parse.Schema, cols map[string]any, conv func(f parse.Field, v any) (any, error)) (parse.Object, error) {
	fields := ReadFields(sch, nil)
	vals := make([]any, 0, len(fields)+1)
	for _, name := range fields {
		f := sch.Fields[name]
		switch {
		case name == parse.FieldACL:
			vals = append(vals, cols["_rperm"], cols["_wperm"])
		case f.Type == parse.TypeRelation:
		default:
			v := cols[name]
			if v != nil && conv != nil {
				var err error
				if v, err = conv(f, v); err != nil {
					return nil, fmt.Errorf("class %s field %s: %w", sch.ClassName, name, err)
				}
			}
			vals = append(vals, v)
		}
	}
	return DecodeRow(c, sch, fields, vals)
}

// ReadBack reads the rows of ids as Find returns them, in the order of
// ids, chunk ids per statement; run executes one statement (in the
// caller's transaction). A missing id is an error.
func ReadBack(d sqlcompile.Dialect, sch parse.Schema, ids []string, chunk int, run func(sqlText string, args []any, fields []string) ([]parse.Object, error)) ([]parse.Object, error) {
	byID := make(map[string]parse.Object, len(ids))
	for start := 0; start < len(ids); start += chunk {
		sqlText, args, fields := SelectIDsSQL(d, sch, ids[start:min(start+chunk, len(ids))])
		rows, err := run(sqlText, args, fields)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			byID[object.ID(r)] = r
		}
	}
	out := make([]parse.Object, len(ids))
	for i, id := range ids {
		if out[i] = byID[id]; out[i] == nil {
			return nil, fmt.Errorf("read back %s %s: row not found", sch.ClassName, id)
		}
	}
	return out, nil
}
