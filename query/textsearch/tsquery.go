package textsearch

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Query is a parsed to_tsquery(language, term): the operators & (and),
// | (or), ! (not), <-> and <N> (followed by, N positions later), and
// parentheses over operands; an operand may end in :* (prefix) and
// weight letters (:A … :D; every position of a to_tsvector is D). An
// operand is read like a document: a word that yields several lexemes
// ("two-factor", 'quoted words') is their phrase, a stop word is left
// out with the operator that joins it. A term of stop words only is
// empty: it matches nothing.
type Query struct {
	root *node
}

type opKind int

const (
	opVal opKind = iota
	opNot
	opAnd
	opOr
	opPhrase
)

type node struct {
	op          opKind
	dist        int // opPhrase
	word        string
	prefix      bool
	weights     byte // bit mask of A (8) B (4) C (2) D (1); 0: any
	stop        bool // an operand that yielded no lexeme
	left, right *node
}

// SyntaxError is a term to_tsquery refuses.
type SyntaxError struct {
	Term string
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("syntax error in text search term %q: %s", e.Term, e.Msg)
}

// MaxDistance is the largest N of <N>.
const MaxDistance = 16384

// Parse is to_tsquery(lang, term); lang must be Supported.
func Parse(lang, term string) (*Query, error) {
	p := &qparser{lang: lang, term: term, s: term}
	if strings.TrimSpace(term) == "" {
		return &Query{}, nil
	}
	n, err := p.or(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.s != "" {
		return nil, p.fail("unexpected %q", p.s)
	}
	root, _, _ := clean(n)
	return &Query{root: root}, nil
}

// Empty reports whether q has no lexeme (it matches nothing).
func (q *Query) Empty() bool { return q.root == nil }

type qparser struct {
	lang, term, s string
}

func (p *qparser) fail(format string, args ...any) error {
	return &SyntaxError{Term: p.term, Msg: fmt.Sprintf(format, args...)}
}

func (p *qparser) skipSpace() { p.s = strings.TrimLeftFunc(p.s, unicode.IsSpace) }

// or and and read operands of the next tighter level joined by | or &,
// left to right.
func (p *qparser) or(depth int) (*node, error) { return p.chain(depth, '|', opOr, p.and) }

func (p *qparser) and(depth int) (*node, error) { return p.chain(depth, '&', opAnd, p.phrase) }

func (p *qparser) chain(depth int, sep byte, op opKind, next func(int) (*node, error)) (*node, error) {
	l, err := next(depth)
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if p.s == "" || p.s[0] != sep {
			return l, nil
		}
		p.s = p.s[1:]
		r, err := next(depth)
		if err != nil {
			return nil, err
		}
		l = &node{op: op, left: l, right: r}
	}
}

func (p *qparser) phrase(depth int) (*node, error) {
	l, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for {
		p.skipSpace()
		if !strings.HasPrefix(p.s, "<") {
			return l, nil
		}
		dist, err := p.distance()
		if err != nil {
			return nil, err
		}
		r, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		l = &node{op: opPhrase, dist: dist, left: l, right: r}
	}
}

// distance reads <-> or <N>.
func (p *qparser) distance() (int, error) {
	if strings.HasPrefix(p.s, "<->") {
		p.s = p.s[3:]
		return 1, nil
	}
	end := strings.IndexByte(p.s, '>')
	if end < 0 {
		return 0, p.fail("unterminated phrase operator")
	}
	n, err := strconv.Atoi(p.s[1:end])
	if err != nil || n < 0 || n > MaxDistance || !allDigits(p.s[1:end]) {
		return 0, p.fail("distance in phrase operator must be an integer value between zero and %d inclusive", MaxDistance)
	}
	p.s = p.s[end+1:]
	return n, nil
}

const maxDepth = 32

func (p *qparser) unary(depth int) (*node, error) {
	p.skipSpace()
	if depth > maxDepth {
		return nil, p.fail("nested deeper than %d levels", maxDepth)
	}
	switch {
	case p.s == "":
		return nil, p.fail("an operand is missing at the end")
	case p.s[0] == '!':
		p.s = p.s[1:]
		n, err := p.unary(depth + 1)
		if err != nil {
			return nil, err
		}
		return &node{op: opNot, right: n}, nil
	case p.s[0] == '(':
		p.s = p.s[1:]
		n, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if !strings.HasPrefix(p.s, ")") {
			return nil, p.fail("a parenthesis is not closed")
		}
		p.s = p.s[1:]
		return n, nil
	case isOperator(p.s[0]) || p.s[0] == ':':
		return nil, p.fail("an operand is missing before %q", p.s[:1])
	}
	return p.operand()
}

func isOperator(c byte) bool {
	return c == '!' || c == '&' || c == '|' || c == '(' || c == ')' || c == '<'
}

// operand reads one operand (quoted or not) and its :modifiers, and
// turns it into lexemes.
func (p *qparser) operand() (*node, error) {
	var b strings.Builder
	if p.s[0] == '\'' {
		i := 1
		for {
			if i >= len(p.s) {
				return nil, p.fail("unterminated quoted string")
			}
			c := p.s[i]
			if c == '\\' && i+1 < len(p.s) {
				b.WriteByte(p.s[i+1])
				i += 2
				continue
			}
			if c == '\'' {
				if i+1 < len(p.s) && p.s[i+1] == '\'' {
					b.WriteByte('\'')
					i += 2
					continue
				}
				i++
				break
			}
			b.WriteByte(c)
			i++
		}
		p.s = p.s[i:]
	} else {
		i := 0
		for i < len(p.s) {
			r, n := utf8.DecodeRuneInString(p.s[i:])
			if unicode.IsSpace(r) || (n == 1 && (isOperator(p.s[i]) || p.s[i] == ':')) {
				break
			}
			if r == '\\' && i+1 < len(p.s) {
				_, n2 := utf8.DecodeRuneInString(p.s[i+1:])
				b.WriteString(p.s[i+1 : i+1+n2])
				i += 1 + n2
				continue
			}
			b.WriteString(p.s[i : i+n])
			i += n
		}
		p.s = p.s[i:]
	}
	var prefix bool
	var weights byte
	if strings.HasPrefix(p.s, ":") {
		p.s = p.s[1:]
	mods:
		for p.s != "" {
			switch p.s[0] {
			case '*':
				prefix = true
			case 'a', 'A':
				weights |= 8
			case 'b', 'B':
				weights |= 4
			case 'c', 'C':
				weights |= 2
			case 'd', 'D':
				weights |= 1
			default:
				break mods
			}
			p.s = p.s[1:]
		}
	}
	return morph(p.lang, b.String(), prefix, weights), nil
}

// morph turns an operand's text into its lexemes, joined as a phrase
// (PostgreSQL's pushval_morph): a stop word between two lexemes widens
// the distance, a text of stop words is a stop node.
func morph(lang, text string, prefix bool, weights byte) *node {
	var out *node
	last := 0
	for _, l := range lexemes(lang, text) {
		if l.word == "" {
			continue
		}
		v := &node{op: opVal, word: l.word, prefix: prefix, weights: weights}
		if out == nil {
			out = v
		} else {
			for last+1 < l.pos { // placeholders for the stop words in between
				out = &node{op: opPhrase, dist: 1, left: out, right: &node{op: opVal, stop: true}}
				last++
			}
			out = &node{op: opPhrase, dist: 1, left: out, right: v}
		}
		last = l.pos
	}
	if out == nil {
		return &node{op: opVal, stop: true}
	}
	return out
}

// clean removes stop nodes as PostgreSQL's clean_stopwords does: an
// operator loses the side that was a stop word, a phrase keeps its width
// (ladd and radd are the positions a removed side took, left and right).
func clean(n *node) (out *node, ladd, radd int) {
	switch n.op {
	case opVal:
		if n.stop {
			return nil, 0, 0
		}
		return n, 0, 0
	case opNot:
		r, la, ra := clean(n.right)
		if r == nil {
			return nil, la, ra
		}
		return &node{op: opNot, right: r}, la, ra
	}
	l, lladd, lradd := clean(n.left)
	r, rladd, rradd := clean(n.right)
	phrase := n.op == opPhrase
	dist := 0
	if phrase {
		dist = n.dist
	}
	switch {
	case l == nil && r == nil:
		w := lladd + dist + rradd
		return nil, w, w
	case l == nil:
		if phrase {
			return r, lladd + dist + rladd, rradd
		}
		return r, rladd, rradd
	case r == nil:
		if phrase {
			return l, lladd, lradd + dist + rradd
		}
		return l, lladd, lradd
	}
	c := *n
	c.left, c.right = l, r
	if phrase {
		c.dist += lradd + rladd
	}
	return &c, lladd, rradd
}

// String renders q as PostgreSQL prints a tsquery (for tests and
// messages).
func (q *Query) String() string {
	if q.root == nil {
		return ""
	}
	return q.root.string()
}

var priority = map[opKind]int{opVal: 5, opNot: 4, opPhrase: 3, opAnd: 2, opOr: 1}

func (n *node) string() string {
	switch n.op {
	case opVal:
		s := "'" + strings.ReplaceAll(n.word, "'", "''") + "'"
		if n.prefix || n.weights != 0 {
			s += ":"
			if n.prefix {
				s += "*"
			}
			for i, c := range "ABCD" {
				if n.weights&(8>>i) != 0 {
					s += string(c)
				}
			}
		}
		return s
	case opNot:
		if n.right.op == opVal || n.right.op == opNot {
			return "!" + n.right.string()
		}
		return "!( " + n.right.string() + " )"
	}
	op := map[opKind]string{opAnd: " & ", opOr: " | "}[n.op]
	if n.op == opPhrase {
		op = " <" + strconv.Itoa(n.dist) + "> "
		if n.dist == 1 {
			op = " <-> "
		}
	}
	l, r := n.left.string(), n.right.string()
	if priority[n.left.op] < priority[n.op] {
		l = "( " + l + " )"
	}
	if priority[n.right.op] <= priority[n.op] {
		r = "( " + r + " )"
	}
	return l + op + r
}
