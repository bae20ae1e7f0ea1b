package shape_test

import (
	"testing"

	"github.com/parsemcp/parsemcp/internal/shape"
	"github.com/parsemcp/parsemcp/internal/shape/shapetest"
)

func TestRunAndLeadAgreeWithTheRegexps(t *testing.T) {
	shapetest.Agree(t, `^[A-Za-z0-9]{10}$`, 10, func(s string) bool { return shape.Run(s, shape.Alnum, 10, 10) })
	shapetest.Agree(t, `^[0-9a-fA-F]{3,5}$`, 5, func(s string) bool { return shape.Run(s, shape.Hex, 3, 5) })
	shapetest.Agree(t, `^[A-Za-z_][A-Za-z0-9_]{0,7}$`, 8, func(s string) bool {
		return shape.Lead(s, shape.Letters.Or(shape.Chars("_")), shape.Word, 8)
	})
	shapetest.Agree(t, `^[a-z][a-z0-9_.\-/ ]{0,4}$`, 5, func(s string) bool {
		return shape.Lead(s, shape.Lower, shape.Lower.Or(shape.Digits, shape.Chars("_.-/ ")), 5)
	})
}

func TestChars(t *testing.T) {
	s := shape.Chars("_-")
	for c := 0; c < 256; c++ {
		if want := c == '_' || c == '-'; s.Has(byte(c)) != want {
			t.Errorf("Chars(%q).Has(%q) = %v", "_-", rune(c), !want)
		}
	}
}
