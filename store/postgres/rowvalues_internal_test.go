package postgres

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// textArrayBinary reads what pgx writes for a text[] in binary format,
// and leaves to pgx what it does not read (NULL elements, more
// dimensions, a truncated value).
func TestTextArrayBinary(t *testing.T) {
	m := pgtype.NewMap()
	for _, want := range [][]string{{}, {"*"}, {"*", "role:Admin", "u1"}, {"", "é€😀", "a\x00b"}} {
		b, err := m.Encode(pgtype.TextArrayOID, pgx.BinaryFormatCode, want, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := textArrayBinary(b)
		if !ok || !slices.Equal(got, want) {
			t.Errorf("%q: got %q %v", want, got, ok)
		}
		if len(b) > 12 {
			if _, ok := textArrayBinary(b[:len(b)-1]); ok {
				t.Errorf("%q truncated: read", want)
			}
		}
	}
	a := "x"
	two := pgtype.Array[string]{Elements: []string{"a", "b"}, Dims: []pgtype.ArrayDimension{{Length: 1, LowerBound: 1}, {Length: 2, LowerBound: 1}}, Valid: true}
	for _, v := range []any{[]*string{&a, nil}, two} {
		b, err := m.Encode(pgtype.TextArrayOID, pgx.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := textArrayBinary(b); ok {
			t.Errorf("%v: read as %q; pgx should have it", v, got)
		}
	}
}
