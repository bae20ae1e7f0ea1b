package sqlkit

import "context"

// RawText is a text column's value as the database sent it: its bytes,
// valid only until the row callback returns (they are the driver's read
// buffer, and the holder is reused for the next row). Only the callback of
// QueryRawText meets it, so no other reader of rows has to know it: there,
// RowWriter escapes the bytes of a String or a Pointer straight into the
// row's JSON, and whatever else meets one (ColumnCodec.Value) copies it.
type RawText struct{ B []byte }

// RawTextQuerier is a Querier that can hand text columns as *RawText, not
// as strings: a string and its interface allocated per column per row. A
// row's values, and the slice holding them, are valid while row runs: the
// querier may reuse the slice for the next row.
type RawTextQuerier interface {
	QueryRawText(ctx context.Context, sqlText string, args []any, row func(vals []any) error) error
}

// queryFunc is Querier.Query's signature.
type queryFunc func(ctx context.Context, sqlText string, args []any, row func(vals []any) error) error

// rawTextQuery is db's QueryRawText, or its Query when it has none.
func rawTextQuery(db Querier) queryFunc {
	if rq, ok := db.(RawTextQuerier); ok {
		return rq.QueryRawText
	}
	return db.Query
}
