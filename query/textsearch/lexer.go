// Package textsearch is PostgreSQL's full-text search in Go, for the
// places that cannot ask PostgreSQL: the embedded store (SQLite) and the
// in-memory matcher of live subscriptions (query.Match). It reproduces
// what Parse Server's $text runs on PostgreSQL,
// to_tsvector(language, field) @@ to_tsquery(language, term) and, for the
// score, ts_rank_cd(…, 32), for the configurations "english" (Snowball
// stemming, PostgreSQL's English stop words) and "simple" (lower case
// only). The tokenizer follows PostgreSQL's default parser for words,
// numbers, hyphenated words, decimals, hosts and e-mail addresses; URLs,
// file paths, XML tags and entities are split into words instead
// (docs/COMPATIBILITY.md).
package textsearch

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Languages are the text search configurations this package implements.
var Languages = []string{"english", "simple"}

// Supported reports whether lang (lower case) is one of Languages.
func Supported(lang string) bool { return lang == "english" || lang == "simple" }

// maxPos is PostgreSQL's largest lexeme position (MAXENTRYPOS - 1): later
// words are all at this position.
const maxPos = 16383

// kind is a token's class, which decides its dictionary.
type kind int

const (
	kWord    kind = iota // letters only (and the letter parts of a hyphenated word): stemmed
	kLiteral             // numbers, words with digits, hosts, e-mails: kept as they are (lower case)
)

type token struct {
	text string
	kind kind
}

// tokens splits text as PostgreSQL's default parser does (for the token
// types listed in the package doc); separators produce no token.
func tokens(text string) []token {
	var out []token
	s := text
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if !alnum(r) {
			if (r == '-' || r == '+') && len(s) > n && isDigit(firstRune(s[n:])) {
				// a signed integer or decimal: "-5", "+39", "covid-19" (covid, -19)
				num := scanNumber(s[n:])
				out = append(out, token{text: string(r) + num, kind: kLiteral})
				s = s[n+len(num):]
				continue
			}
			s = s[n:]
			continue
		}
		toks, rest := scanWord(s)
		out = append(out, toks...)
		s = rest
	}
	return out
}

func firstRune(s string) rune { r, _ := utf8.DecodeRuneInString(s); return r }

func alnum(r rune) bool   { return unicode.IsLetter(r) || isDigit(r) }
func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// run reads the letters and digits at the start of s.
func run(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !alnum(r) {
			break
		}
		i += n
	}
	return s[:i]
}

func hasDigit(s string) bool  { return strings.IndexFunc(s, isDigit) >= 0 }
func hasLetter(s string) bool { return strings.IndexFunc(s, unicode.IsLetter) >= 0 }
func allDigits(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return !isDigit(r) }) < 0
}

func scanNumber(s string) string {
	i := 0
	for i < len(s) && isDigit(rune(s[i])) {
		i++
	}
	if i+1 < len(s) && s[i] == '.' && isDigit(rune(s[i+1])) {
		i++
		for i < len(s) && isDigit(rune(s[i])) {
			i++
		}
	}
	return s[:i]
}

// scanWord reads the token(s) starting with a letter or digit at s: a
// dotted run (decimal, version, host), an e-mail address, a hyphenated
// word (the whole, then each part) or a plain word or number.
func scanWord(s string) ([]token, string) {
	first := run(s)
	rest := s[len(first):]
	// Dotted: 1.5, 1.2.3, example.com, and e-mail addresses
	// (first.last@example.com).
	parts := []string{first}
	r := rest
	for len(r) > 1 && r[0] == '.' && alnum(firstRune(r[1:])) {
		p := run(r[1:])
		parts = append(parts, p)
		r = r[1+len(p):]
	}
	if len(r) > 1 && r[0] == '@' {
		if host := hostAt(r[1:]); host != "" {
			return []token{{text: strings.Join(parts, ".") + "@" + host, kind: kLiteral}}, r[1+len(host):]
		}
	}
	if len(parts) > 1 && (numeric(parts) || hasLetter(parts[len(parts)-1])) {
		return []token{{text: strings.Join(parts, "."), kind: kLiteral}}, r
	}
	// Hyphenated: two-factor → two-factor, two, factor. A part starting
	// with a digit is a signed number instead: covid-19 → covid, -19.
	if len(rest) > 1 && rest[0] == '-' && unicode.IsLetter(firstRune(rest[1:])) && !allDigits(first) {
		parts := []string{first}
		r := rest
		for len(r) > 1 && r[0] == '-' && unicode.IsLetter(firstRune(r[1:])) {
			p := run(r[1:])
			parts = append(parts, p)
			r = r[1+len(p):]
		}
		whole := token{text: strings.Join(parts, "-"), kind: kWord}
		for _, p := range parts {
			if hasDigit(p) {
				whole.kind = kLiteral
			}
		}
		out := []token{whole}
		for _, p := range parts {
			out = append(out, partToken(p))
		}
		return out, r
	}
	return []token{partToken(first)}, rest
}

func partToken(p string) token {
	if hasDigit(p) {
		return token{text: p, kind: kLiteral}
	}
	return token{text: p, kind: kWord}
}

func numeric(parts []string) bool {
	for _, p := range parts {
		if !allDigits(p) {
			return false
		}
	}
	return true
}

// hostAt reads a host name (at least two labels) at the start of s, or "".
func hostAt(s string) string {
	first := label(s)
	if first == "" {
		return ""
	}
	parts := []string{first}
	r := s[len(first):]
	for len(r) > 1 && r[0] == '.' && alnum(firstRune(r[1:])) {
		p := label(r[1:])
		parts = append(parts, p)
		r = r[1+len(p):]
	}
	if len(parts) < 2 || !hasLetter(parts[len(parts)-1]) {
		return ""
	}
	return strings.Join(parts, ".")
}

// label reads a host name label (letters, digits, inner hyphens).
func label(s string) string {
	i := len(run(s))
	for i+1 < len(s) && s[i] == '-' && alnum(firstRune(s[i+1:])) {
		i += 1 + len(run(s[i+1:]))
	}
	return s[:i]
}

// lexeme is one position of a text: its lexeme, or "" for a stop word
// (which takes a position but is not indexed).
type lexeme struct {
	word string
	pos  int
}

// maxWordBytes is PostgreSQL's MAXSTRLEN: a token of this many bytes or
// more is skipped ("word is too long to be indexed") and takes no
// position.
const maxWordBytes = 2048

// lexemes reads text in lang: every token's normalized form with its
// position (1-based), stop words included as "".
func lexemes(lang, text string) []lexeme {
	toks := tokens(text)
	out := make([]lexeme, 0, len(toks))
	pos := 0
	for _, t := range toks {
		if len(t.text) >= maxWordBytes {
			continue
		}
		if pos < maxPos {
			pos++
		}
		out = append(out, lexeme{word: normalize(lang, t), pos: pos})
	}
	return out
}

// normalize is a token's lexeme in lang, "" for a stop word.
func normalize(lang string, t token) string {
	w := strings.ToLower(t.text)
	if lang == "simple" || t.kind == kLiteral {
		return w
	}
	if stopWords[w] {
		return ""
	}
	return english.Stem(w, true)
}

// stopWords is PostgreSQL's english.stop.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`i me my myself we our ours ourselves you your yours yourself yourselves
		he him his himself she her hers herself it its itself they them their theirs themselves what which who
		whom this that these those am is are was were be been being have has had having do does did doing a an
		the and but if or because as until while of at by for with about against between into through during
		before after above below to from up down in out on off over under again further then once here there when
		where why how all any both each few more most other some such no nor not only own same so than too very
		s t can will just don should now`) {
		m[w] = true
	}
	return m
}()

// Vector is a document's lexemes and their positions (to_tsvector).
type Vector map[string][]int

// maxNumPos is how many positions to_tsvector keeps per lexeme
// (PostgreSQL's MAXNUMPOS - 1): later occurrences are dropped.
const maxNumPos = 255

// MaxVectorBytes is the largest tsvector PostgreSQL makes (MAXSTRPOS):
// to_tsvector of a text whose lexemes and positions take more fails.
const MaxVectorBytes = 1<<20 - 1

// TooLongError is to_tsvector's "string is too long for tsvector": the
// text's lexemes and positions take more than MaxVectorBytes.
type TooLongError struct{ Bytes int }

func (e *TooLongError) Error() string {
	return fmt.Sprintf("string is too long for tsvector (%d bytes, max %d bytes)", e.Bytes, MaxVectorBytes)
}

// NewVector is to_tsvector(lang, text): each lexeme with its first 255
// distinct positions, as PostgreSQL keeps them. It does not check the
// size (Vectorize does).
func NewVector(lang, text string) Vector {
	v := Vector{}
	for _, l := range lexemes(lang, text) {
		if l.word == "" {
			continue
		}
		ps := v[l.word]
		if len(ps) < maxNumPos && (len(ps) == 0 || ps[len(ps)-1] != l.pos) {
			v[l.word] = append(ps, l.pos)
		}
	}
	return v
}

// Vectorize is to_tsvector(lang, text) with PostgreSQL's size limit: a
// *TooLongError where PostgreSQL raises one.
func Vectorize(lang, text string) (Vector, error) {
	v := NewVector(lang, text)
	if n := v.bytes(); n > MaxVectorBytes {
		return nil, &TooLongError{Bytes: n}
	}
	return v, nil
}

// bytes is the size PostgreSQL's make_tsvector computes: each lexeme,
// aligned to 2 bytes, then a 2-byte count and 2 bytes a position.
func (v Vector) bytes() int {
	n := 0
	for w, ps := range v {
		n += len(w) + len(w)%2 + 2 + 2*len(ps)
	}
	return n
}
