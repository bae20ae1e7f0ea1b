package postgres

import (
	"encoding/binary"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// rowValues returns the reader of rows' values: pgx's Rows.Values, but a
// one-dimensional text[] without NULLs in binary format (the `_rperm` and
// `_wperm` columns of every Parse row) is read from its bytes into a
// []string instead of through pgx's reflective array scan, which planned
// the scan anew for each row and column. Every other column is decoded by
// its pgx codec, as Values decodes it.
func rowValues(rows pgx.Rows) func() ([]any, error) {
	fds := rows.FieldDescriptions()
	m := rows.Conn().TypeMap()
	return func() ([]any, error) {
		raw := rows.RawValues()
		vals := make([]any, len(fds))
		for i := range fds {
			buf, fd := raw[i], &fds[i]
			if buf == nil {
				continue
			}
			if fd.Format == pgx.BinaryFormatCode && (fd.DataTypeOID == pgtype.TextArrayOID || fd.DataTypeOID == pgtype.VarcharArrayOID) {
				if a, ok := textArrayBinary(buf); ok {
					vals[i] = a
					continue
				}
			}
			dt, ok := m.TypeForOID(fd.DataTypeOID)
			if !ok {
				return rows.Values() // a type pgx does not know: its own handling
			}
			v, err := dt.Codec.DecodeValue(m, fd.DataTypeOID, fd.Format, buf)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
		return vals, rows.Err()
	}
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
