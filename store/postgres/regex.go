package postgres

import (
	"fmt"
	"regexp/syntax"
	"strings"
	"unicode"

	"github.com/parsemcp/parsemcp/query"
)

// arePattern translates a $regex (RE2 syntax, as Go's regexp, SQLite's
// parsemcp_regexp and query.Match read it) into a PostgreSQL ARE that
// matches exactly the same strings.
//
// Handing the pattern to ~ as it is would not: ARE is another dialect.
// [^x], \D, \W and \S never match a newline in ARE's newline-sensitive
// modes (RE2's match it); \b is a backspace and \w, \d and [[:alpha:]]
// follow the database's locale (RE2's are ASCII); case folding follows the
// locale too (RE2 folds Unicode: the Kelvin sign is a k); and \z, \pL,
// \p{Greek}, \Q…\E, \x{…}, [[:^alpha:]], named groups, inline flags after
// the start and counts above 255 are errors in ARE.
//
// So the pattern is parsed as Go parses it, and its syntax tree rendered
// with nothing left to ARE's interpretation: every class as an explicit
// bracket of code point ranges, every case-folded literal as the bracket
// of its case orbit, every character outside [0-9A-Za-z] as a \u or \U
// escape, anchors and word boundaries as \A, \Z and lookaround
// constraints, groups non-capturing. The ARE runs in its default mode
// (not newline-sensitive, case-sensitive), where . and a negated bracket
// match a newline; RE2's . is rendered [^\n] unless (?s).
//
// A pattern Go cannot parse (the where parser refused it already) is
// passed through for PostgreSQL to refuse; one holding a node this
// translation does not know (none that regexp/syntax produces today)
// becomes an invalid ARE, so the query fails instead of matching
// something else.
func arePattern(pattern string, f query.RegexFlags) string {
	re, err := syntax.Parse(query.GoRegexPrefix(f)+pattern, syntax.Perl)
	if err != nil {
		return pattern
	}
	var b strings.Builder
	if !writeARE(&b, re) {
		return "(?:"
	}
	return b.String()
}

// areDupMax is ARE's largest repetition count (RE_DUP_MAX).
const areDupMax = 255

// asciiWord is RE2's \w, the characters of its \b.
const asciiWord = "[0-9A-Z_a-z]"

// writeARE renders re, or reports false for an Op it does not know.
func writeARE(b *strings.Builder, re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpNoMatch:
		b.WriteString("(?=a)b") // b where a is: never
	case syntax.OpEmptyMatch:
		b.WriteString("(?:)")
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				writeFolded(b, r)
			} else {
				writeRune(b, r)
			}
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			b.WriteString("(?=a)b")
			break
		}
		b.WriteByte('[')
		for i := 0; i+1 < len(re.Rune); i += 2 {
			writeRune(b, re.Rune[i])
			if re.Rune[i+1] != re.Rune[i] {
				b.WriteByte('-')
				writeRune(b, re.Rune[i+1])
			}
		}
		b.WriteByte(']')
	case syntax.OpAnyCharNotNL:
		b.WriteString(`[^\u000a]`)
	case syntax.OpAnyChar:
		b.WriteString(`[\u0000-\U0010ffff]`)
	case syntax.OpBeginLine:
		b.WriteString(`(?:\A|(?<=\u000a))`)
	case syntax.OpEndLine:
		b.WriteString(`(?:\Z|(?=\u000a))`)
	case syntax.OpBeginText:
		b.WriteString(`\A`)
	case syntax.OpEndText:
		b.WriteString(`\Z`)
	case syntax.OpWordBoundary:
		b.WriteString("(?:(?<=" + asciiWord + ")(?!" + asciiWord + ")|(?<!" + asciiWord + ")(?=" + asciiWord + "))")
	case syntax.OpNoWordBoundary:
		b.WriteString("(?:(?<=" + asciiWord + ")(?=" + asciiWord + ")|(?<!" + asciiWord + ")(?!" + asciiWord + "))")
	case syntax.OpCapture:
		return writeGroup(b, re.Sub[0], "")
	case syntax.OpStar:
		return writeGroup(b, re.Sub[0], "*")
	case syntax.OpPlus:
		return writeGroup(b, re.Sub[0], "+")
	case syntax.OpQuest:
		return writeGroup(b, re.Sub[0], "?")
	case syntax.OpRepeat:
		return writeRepeat(b, re.Sub[0], re.Min, re.Max)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !writeARE(b, sub) {
				return false
			}
		}
	case syntax.OpAlternate:
		b.WriteString("(?:")
		for i, sub := range re.Sub {
			if i > 0 {
				b.WriteByte('|')
			}
			if !writeARE(b, sub) {
				return false
			}
		}
		b.WriteByte(')')
	default:
		return false
	}
	return true
}

// writeGroup renders re as one atom, followed by the quantifier q.
func writeGroup(b *strings.Builder, re *syntax.Regexp, q string) bool {
	b.WriteString("(?:")
	ok := writeARE(b, re)
	b.WriteByte(')')
	b.WriteString(q)
	return ok
}

// writeRepeat renders re{least,most} (most -1: unbounded) in counts ARE
// accepts: re{300} is re{255}re{45}, re{0,300} re{0,255}re{0,45}.
func writeRepeat(b *strings.Builder, re *syntax.Regexp, least, most int) bool {
	ok := true
	bound := func(lo, hi int) {
		switch {
		case hi < 0:
			ok = writeGroup(b, re, fmt.Sprintf("{%d,}", lo)) && ok
		case lo == hi:
			ok = writeGroup(b, re, fmt.Sprintf("{%d}", lo)) && ok
		default:
			ok = writeGroup(b, re, fmt.Sprintf("{%d,%d}", lo, hi)) && ok
		}
	}
	n := least
	for n > areDupMax {
		bound(areDupMax, areDupMax)
		n -= areDupMax
	}
	if most < 0 {
		bound(n, -1)
		return ok
	}
	bound(n, n)
	for opt := most - least; opt > 0; {
		k := min(opt, areDupMax)
		bound(0, k)
		opt -= k
	}
	return ok
}

// writeFolded renders r under (?i): the bracket of every rune Go's
// regexp folds it to (unicode.SimpleFold's orbit).
func writeFolded(b *strings.Builder, r rune) {
	orbit := []rune{r}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		orbit = append(orbit, f)
	}
	if len(orbit) == 1 {
		writeRune(b, r)
		return
	}
	b.WriteByte('[')
	for _, f := range orbit {
		writeRune(b, f)
	}
	b.WriteByte(']')
}

// writeRune renders r as itself when it is an ASCII letter or digit and
// as a \u or \U character-entry escape otherwise (valid in and out of a
// bracket, and never an operator).
func writeRune(b *strings.Builder, r rune) {
	switch {
	case r >= '0' && r <= '9', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		b.WriteRune(r)
	case r <= 0xffff:
		fmt.Fprintf(b, `\u%04x`, r)
	default:
		fmt.Fprintf(b, `\U%08x`, r)
	}
}
