// Package shapetest holds a check's tests against the regexp it replaces.
package shapetest

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// tricky are the characters tried at every position: every ASCII byte,
// bytes ≥ 128 alone (invalid UTF-8), and runes that a Unicode class may or
// may not hold (letters and digits of other scripts, a letter number, a
// fraction, a combining mark, U+FFFD, an emoji, a zero-width joiner).
func tricky() []string {
	var out []string
	for c := 0; c < 128; c++ {
		out = append(out, string(rune(c)))
	}
	out = append(out, "\x80", "\xff", "\xc3", "é", "ß", "Ж", "中", "٣", "Ⅻ", "½", "\u0301", "\ufffd", "😀", "\u200d", "ǅ", "\u00a0")
	return out
}

// Agree fails t when check and the regexp pattern disagree on any input
// made of the tricky characters: each of them first, last and in the
// middle of a run of a base character, at lengths 0 to maxLen+2, and
// random strings of them.
func Agree(t testing.TB, pattern string, maxLen int, check func(string) bool) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	seen := 0
	try := func(s string) {
		seen++
		if want, got := re.MatchString(s), check(s); want != got {
			t.Errorf("%s on %q (%d bytes): the regexp says %v, the check %v", pattern, s, len(s), want, got)
		}
	}
	chars := tricky()
	for _, base := range []string{"a", "Z", "0", "_", "-", ".", "é", " "} {
		for n := 0; n <= maxLen+2; n++ {
			run := strings.Repeat(base, n)
			try(run)
			for _, c := range chars {
				if n == 0 {
					try(c)
					continue
				}
				try(c + run[len(base):])
				try(run[:len(run)-len(base)] + c)
				try(run[:len(run)/2] + c + run[len(run)/2:])
				try(run + "\n")
			}
		}
	}
	r := rand.New(rand.NewPCG(31, 4))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(maxLen + 3) {
			if r.IntN(4) == 0 {
				b.WriteString(chars[r.IntN(len(chars))])
			} else {
				b.WriteByte("aZ09_-."[r.IntN(7)])
			}
		}
		try(b.String())
	}
	if seen == 0 {
		t.Fatal("no input tried")
	}
}
