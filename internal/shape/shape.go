// Package shape checks that a string is made of ASCII characters of a set,
// within a length range: the hand-written form of an anchored regexp such
// as ^[A-Za-z][A-Za-z0-9_]{0,63}$.
//
// A counted repetition compiles into one copy of its class per count, so
// each such package-level regexp cost 20-50 KB of heap that every process
// kept from start-up, and the Unicode one of federation's token names 2 MB
// (docs/PERFORMANCE.md, "Memory"). A Set is 16 bytes and needs no init.
package shape

// Set is a set of ASCII characters.
type Set [2]uint64

// The common sets.
var (
	Digits  = Range('0', '9')
	Upper   = Range('A', 'Z')
	Lower   = Range('a', 'z')
	Letters = Upper.Or(Lower)
	Alnum   = Letters.Or(Digits)
	Word    = Alnum.Or(Chars("_")) // [A-Za-z0-9_]
	Hex     = Digits.Or(Range('a', 'f'), Range('A', 'F'))
)

// Range is the set of the characters from lo to hi, both included.
func Range(lo, hi byte) Set {
	var s Set
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
	return s
}

// Chars is the set of the characters of list, each taken literally.
func Chars(list string) Set {
	var s Set
	for i := 0; i < len(list); i++ {
		s.add(list[i])
	}
	return s
}

func (s *Set) add(c byte) {
	if c >= 128 {
		panic("shape: not an ASCII character")
	}
	s[c>>6] |= 1 << (c & 63)
}

// Or is the union of s and others.
func (s Set) Or(others ...Set) Set {
	for _, o := range others {
		s[0] |= o[0]
		s[1] |= o[1]
	}
	return s
}

// Has reports whether c is in s (never for a byte ≥ 128).
func (s Set) Has(c byte) bool {
	return c < 128 && s[c>>6]&(1<<(c&63)) != 0
}

// Run reports whether str holds between lo and hi characters, all in set:
// what ^[set]{lo,hi}$ matches.
func Run(str string, set Set, lo, hi int) bool {
	if len(str) < lo || len(str) > hi {
		return false
	}
	return all(str, set)
}

// Lead reports whether str holds 1 to maxLen characters, the first in first
// and the others in rest: what ^[first][rest]{0,maxLen-1}$ matches.
func Lead(str string, first, rest Set, maxLen int) bool {
	if len(str) == 0 || len(str) > maxLen || !first.Has(str[0]) {
		return false
	}
	return all(str[1:], rest)
}

// Every byte of an accepted string is ASCII, so its length in bytes is its
// length in characters: a string with another byte fails either way.
func all(str string, set Set) bool {
	for i := 0; i < len(str); i++ {
		if !set.Has(str[i]) {
			return false
		}
	}
	return true
}
