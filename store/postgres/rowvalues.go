package postgres

import (
	"encoding/binary"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// rowReader reads rows' values: the values pgx's Rows.Values gives,
// decoded with less work. A one-dimensional text[] without NULLs in binary
// format (the `_rperm` and `_wperm` columns of every Parse row) is read
// from its bytes into a []string instead of through pgx's reflective array
// scan; a timestamp, a number or a boolean is scanned by a plan made once
// per column for the whole result (pgx's DecodeValue plans each value
// anew); text is its bytes, as a string or, with rawText, as a
// *sqlkit.RawText holding pgx's bytes for the row (QueryRawText). Every
// other column is decoded by its pgx codec, as Values decodes it.
//
// Readers are kept between results (rowReaders): a result's column plans
// and, with rawText, its row of values are reused, not allocated anew.
type rowReader struct {
	rows    pgx.Rows
	m       *pgtype.Map
	cols    []column
	rawText bool
	// vals is the row handed out with rawText, reused for each row (its
	// text is valid for one row already).
	vals []any
	// next is values, bound once per reader (a method value made per
	// result would be allocated per result).
	next func() ([]any, error)
}

var rowReaders = sync.Pool{New: func() any {
	r := new(rowReader)
	r.next = r.values
	return r
}}

// Readers whose column plans grew past this are not kept for reuse.
const maxPooledColumns = 256

// newRowReader returns the reader of rows' values; release hands it back.
func newRowReader(rows pgx.Rows, rawText bool) *rowReader {
	r := rowReaders.Get().(*rowReader)
	fds := rows.FieldDescriptions()
	r.rows, r.m, r.rawText = rows, rows.Conn().TypeMap(), rawText
	r.cols = slices.Grow(r.cols[:0], len(fds))[:len(fds)]
	for i := range fds { // each column zero: a new slice's, or cleared by release
		r.cols[i].plan(r.m, &fds[i])
		if rawText && r.cols[i].kind == colText {
			r.cols[i].kind = colRawText
		}
	}
	if rawText {
		r.vals = slices.Grow(r.vals[:0], len(fds))[:len(fds)]
	}
	return r
}

// values decodes the current row.
func (r *rowReader) values() ([]any, error) {
	raw := r.rows.RawValues()
	var vals []any
	if r.rawText {
		vals = r.vals
		clear(vals)
	} else {
		vals = make([]any, len(r.cols))
	}
	for i := range r.cols {
		if raw[i] == nil {
			continue
		}
		if r.cols[i].kind == colUnknown {
			return r.rows.Values() // a type pgx does not know: its own handling
		}
		v, err := r.cols[i].decode(r.m, raw[i])
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, r.rows.Err()
}

// release hands r back once its rows are read: nothing it returned may be
// used after.
func (r *rowReader) release() {
	clear(r.cols[:cap(r.cols)])
	clear(r.vals[:cap(r.vals)])
	r.rows, r.m = nil, nil
	if cap(r.cols) > maxPooledColumns || cap(r.vals) > maxPooledColumns {
		return
	}
	rowReaders.Put(r)
}

// column is how the values of one result column are decoded, planned once
// for the whole result: to the value pgx's Rows.Values gives for it.
type column struct {
	kind   colKind
	oid    uint32
	format int16
	dt     *pgtype.Type
	scan   pgtype.ScanPlan
	// The scan's target, reused for every row (raw: the row's text).
	raw  sqlkit.RawText
	tstz pgtype.Timestamptz
	ts   pgtype.Timestamp
	f8   float64
	i8   int64
	i4   int32
	b    bool
}

type colKind uint8

const (
	colUnknown colKind = iota // a type pgx does not know
	colCodec                  // the type's codec decodes each value
	colText
	colRawText // text as *sqlkit.RawText
	colTextArray
	colTimestamptz
	colTimestamp
	colFloat8
	colInt8
	colInt4
	colBool
)

// plan decides how column fd is decoded.
func (c *column) plan(m *pgtype.Map, fd *pgconn.FieldDescription) {
	c.oid, c.format = fd.DataTypeOID, fd.Format
	dt, ok := m.TypeForOID(c.oid)
	if !ok {
		c.kind = colUnknown
		return
	}
	c.dt, c.kind = dt, colCodec
	var target any
	switch c.oid {
	case pgtype.TextOID, pgtype.VarcharOID:
		c.kind = colText
	case pgtype.TextArrayOID, pgtype.VarcharArrayOID:
		if c.format == pgx.BinaryFormatCode {
			c.kind = colTextArray
		}
	case pgtype.TimestamptzOID:
		c.kind, target = colTimestamptz, &c.tstz
	case pgtype.TimestampOID:
		c.kind, target = colTimestamp, &c.ts
	case pgtype.Float8OID:
		c.kind, target = colFloat8, &c.f8
	case pgtype.Int8OID:
		c.kind, target = colInt8, &c.i8
	case pgtype.Int4OID:
		c.kind, target = colInt4, &c.i4
	case pgtype.BoolOID:
		c.kind, target = colBool, &c.b
	}
	if target != nil {
		if c.scan = m.PlanScan(c.oid, c.format, target); c.scan == nil {
			c.kind = colCodec
		}
	}
}

// decode decodes one non-NULL value of the column.
func (c *column) decode(m *pgtype.Map, buf []byte) (any, error) {
	switch c.kind {
	case colText:
		return string(buf), nil
	case colRawText:
		c.raw.B = buf
		return &c.raw, nil
	case colTextArray:
		if a, ok := textArrayBinary(buf); ok {
			return a, nil
		}
	case colTimestamptz:
		if err := c.scan.Scan(buf, &c.tstz); err != nil {
			return nil, err
		}
		return stamp(c.tstz.Time, c.tstz.InfinityModifier), nil
	case colTimestamp:
		if err := c.scan.Scan(buf, &c.ts); err != nil {
			return nil, err
		}
		return stamp(c.ts.Time, c.ts.InfinityModifier), nil
	case colFloat8:
		err := c.scan.Scan(buf, &c.f8)
		return c.f8, err
	case colInt8:
		err := c.scan.Scan(buf, &c.i8)
		return c.i8, err
	case colInt4:
		err := c.scan.Scan(buf, &c.i4)
		return c.i4, err
	case colBool:
		err := c.scan.Scan(buf, &c.b)
		return c.b, err
	}
	return c.dt.Codec.DecodeValue(m, c.oid, c.format, buf)
}

// stamp is a timestamp's value as pgx's DecodeValue gives it: the time,
// or infinity's modifier.
func stamp(t time.Time, inf pgtype.InfinityModifier) any {
	if inf != pgtype.Finite {
		return inf
	}
	return t
}

// textArrayBinary reads PostgreSQL's binary array format for a text[] of
// at most one dimension and no NULL element; ok is false for anything
// else (left to pgx).
func textArrayBinary(b []byte) (out []string, ok bool) {
	if len(b) < 12 {
		return nil, false
	}
	ndim, hasNull := int32(binary.BigEndian.Uint32(b)), binary.BigEndian.Uint32(b[4:])
	switch {
	case ndim == 0:
		return []string{}, true
	case ndim != 1 || hasNull != 0 || len(b) < 20:
		return nil, false
	}
	n := int32(binary.BigEndian.Uint32(b[12:]))
	if n < 0 || int(n) > (len(b)-20)/4 {
		return nil, false
	}
	out = make([]string, n)
	pos := 20
	for i := range out {
		if pos+4 > len(b) {
			return nil, false
		}
		l := int32(binary.BigEndian.Uint32(b[pos:]))
		pos += 4
		if l < 0 || pos+int(l) > len(b) {
			return nil, false
		}
		out[i] = string(b[pos : pos+int(l)])
		pos += int(l)
	}
	return out, pos == len(b)
}
