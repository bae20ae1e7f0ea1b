package textsearch

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Match is to_tsvector(…) @@ q: whether the document v satisfies q. An
// empty query matches nothing.
func (q *Query) Match(v Vector) bool {
	if q == nil || q.root == nil {
		return false
	}
	e := &evaluator{
		exists:    func(n *node) bool { return exists(n, v) },
		positions: func(n *node) []int { return positions(n, v) },
	}
	return e.bool(q.root)
}

// MatchText is Match of the text's vector in lang; a text PostgreSQL's
// to_tsvector refuses as too long (a *TooLongError) is that error.
func (q *Query) MatchText(lang, text string) (bool, error) {
	v, err := Vectorize(lang, text)
	if err != nil {
		return false, err
	}
	return q.Match(v), nil
}

// evaluator decides a query over a set of positions per operand: a
// whole document (Match) or a window of it (Rank). work counts the
// operand look-ups and the positions the phrase operators read.
type evaluator struct {
	exists    func(n *node) bool  // whether operand n has a position
	positions func(n *node) []int // operand n's positions, ascending
	relax     bool                // take every ! as true (everywhere)
	work      int
}

func (e *evaluator) bool(n *node) bool {
	switch n.op {
	case opVal:
		e.work++
		return e.exists(n)
	case opNot:
		if e.relax {
			return true
		}
		return !e.bool(n.right)
	case opAnd:
		return e.bool(n.left) && e.bool(n.right)
	case opOr:
		return e.bool(n.left) || e.bool(n.right)
	}
	ps := e.pos(n)
	return ps.neg || len(ps.pos) > 0
}

// width is how many positions n spans before its last word (posSet's).
func width(n *node) int {
	switch n.op {
	case opVal:
		return 0
	case opNot:
		return width(n.right)
	case opPhrase:
		return width(n.left) + n.dist + width(n.right)
	}
	return max(width(n.left), width(n.right))
}

// weightOK: every position of a to_tsvector has weight D.
func weightOK(n *node) bool { return n.weights == 0 || n.weights&1 != 0 }

// matches reports whether operand n matches the lexeme w.
func matches(n *node, w string) bool {
	return weightOK(n) && (w == n.word || n.prefix && strings.HasPrefix(w, n.word))
}

// exists reports whether operand n matches a lexeme of v.
func exists(n *node, v Vector) bool {
	if !weightOK(n) {
		return false
	}
	if !n.prefix {
		return len(v[n.word]) > 0
	}
	for w, ps := range v {
		if len(ps) > 0 && strings.HasPrefix(w, n.word) {
			return true
		}
	}
	return false
}

// positions lists the positions of the lexemes operand n matches.
func positions(n *node, v Vector) []int {
	if !weightOK(n) {
		return nil
	}
	if !n.prefix {
		return v[n.word]
	}
	var out []int
	for w, ps := range v {
		if strings.HasPrefix(w, n.word) {
			out = append(out, ps...)
		}
	}
	sort.Ints(out)
	return slices.Compact(out)
}

// posSet is where a phrase operand matches: the positions (of its last
// word), or, when neg, everywhere but there; width is how many positions
// it spans before its last word.
type posSet struct {
	pos   []int
	neg   bool
	width int
}

func has(ps []int, p int) bool { _, ok := slices.BinarySearch(ps, p); return ok }

func union(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	sort.Ints(out)
	return slices.Compact(out)
}

func keep(a []int, f func(int) bool) []int {
	var out []int
	for _, p := range a {
		if f(p) {
			out = append(out, p)
		}
	}
	return out
}

func (e *evaluator) pos(n *node) posSet {
	switch n.op {
	case opVal:
		ps := e.positions(n)
		e.work += 1 + len(ps)
		return posSet{pos: ps}
	case opNot:
		if e.relax {
			return posSet{neg: true, width: width(n.right)}
		}
		r := e.pos(n.right)
		r.neg = !r.neg
		return r
	}
	l, r := e.pos(n.left), e.pos(n.right)
	in := func(s posSet, p int) bool { return has(s.pos, p) != s.neg }
	switch n.op {
	case opAnd, opOr:
		w := max(l.width, r.width)
		and := n.op == opAnd
		switch {
		case !l.neg && !r.neg:
			if and {
				return posSet{pos: keep(l.pos, func(p int) bool { return has(r.pos, p) }), width: w}
			}
			return posSet{pos: union(l.pos, r.pos), width: w}
		case l.neg && r.neg:
			if and {
				return posSet{pos: union(l.pos, r.pos), neg: true, width: w}
			}
			return posSet{pos: keep(l.pos, func(p int) bool { return has(r.pos, p) }), neg: true, width: w}
		}
		pos, neg := l, r
		if l.neg {
			pos, neg = r, l
		}
		if and { // pos but not neg's positions
			return posSet{pos: keep(pos.pos, func(p int) bool { return in(neg, p) }), width: w}
		}
		return posSet{pos: keep(neg.pos, func(p int) bool { return !has(pos.pos, p) }), neg: true, width: w}
	}
	// opPhrase: the right side ends at p, the left side at p - off.
	off := n.dist + r.width
	w := l.width + n.dist + r.width
	switch {
	case !r.neg:
		return posSet{pos: keep(r.pos, func(p int) bool { return in(l, p-off) }), width: w}
	case !l.neg:
		var out []int
		for _, p := range l.pos {
			if in(r, p+off) {
				out = append(out, p+off)
			}
		}
		return posSet{pos: out, width: w}
	}
	shifted := make([]int, len(l.pos))
	for i, p := range l.pos {
		shifted[i] = p + off
	}
	return posSet{pos: union(r.pos, shifted), neg: true, width: w}
}

// entry is one position of the document where a query operand matches,
// with the operands that match it there.
type entry struct {
	pos  int
	word string
	ops  []opRef
}

// opRef names an operand that matches an entry: the operand's index and
// the entry's rank among that operand's entries.
type opRef struct{ o, k int }

// operand is what Rank knows of one query operand: the indexes of the
// document entries it matches (ascending), their distinct positions
// (ascending) and, for each of its entries, the index of its position.
type operand struct {
	idx  []int
	pos  []int
	upos []int
}

// Rank is ts_rank_cd(v, q, 32), PostgreSQL's cover density ranking
// scaled to rank/(rank+1), as a float4: 0 when q does not match.
func (q *Query) Rank(v Vector) float32 {
	r, _ := q.rank(v)
	return r
}

// rank is Rank and the work it took: the document's entries, the operand
// look-ups and phrase positions of every evaluation, and the covers'
// lengths.
//
// The covers are PostgreSQL's (Cover() in tsrank.c). The document is the
// positions of the lexemes the query names, in order; from the current
// start, the cover ends at the first entry where the entries start..end
// satisfy the query, and begins at the last entry, going down from end,
// where begin..end does; the next cover is looked for after begin. A
// window is not built: each operand's entries in it are found by binary
// search, so one evaluation costs the query's size and, under a phrase
// operator, the positions it reads. Without !, a window that satisfies
// the query still does when it grows, so both ends are found by galloping
// then bisecting (a logarithmic number of evaluations); with !, the scan
// goes one entry at a time as PostgreSQL's does, evaluating only where the
// entry gives some operand a position the window did not have.
func (q *Query) rank(v Vector) (float32, int) {
	if q == nil || q.root == nil {
		return 0, 0
	}
	var ops []*node
	index := map[*node]int{}
	monotone := true
	var walk func(n *node)
	walk = func(n *node) {
		if n == nil {
			return
		}
		if n.op == opVal {
			index[n] = len(ops)
			ops = append(ops, n)
			return
		}
		if n.op == opNot {
			monotone = false
		}
		walk(n.left)
		walk(n.right)
	}
	walk(q.root)

	var doc []entry
	for w, ps := range v {
		if slices.ContainsFunc(ops, func(n *node) bool { return matches(n, w) }) {
			for _, p := range ps {
				doc = append(doc, entry{pos: p, word: w})
			}
		}
	}
	sort.Slice(doc, func(i, j int) bool {
		if doc[i].pos != doc[j].pos {
			return doc[i].pos < doc[j].pos
		}
		return doc[i].word < doc[j].word
	})
	doc = slices.CompactFunc(doc, func(a, b entry) bool { return a.pos == b.pos && a.word == b.word })
	opd := make([]operand, len(ops))
	for i := range doc {
		for o, n := range ops {
			if !matches(n, doc[i].word) {
				continue
			}
			d := &opd[o]
			if len(d.pos) == 0 || d.pos[len(d.pos)-1] != doc[i].pos {
				d.pos = append(d.pos, doc[i].pos)
			}
			doc[i].ops = append(doc[i].ops, opRef{o, len(d.idx)})
			d.idx = append(d.idx, i)
			d.upos = append(d.upos, len(d.pos)-1)
		}
	}

	var lo, hi int // the window: doc[lo..hi]
	window := func(o int) (a, b int) {
		return sort.SearchInts(opd[o].idx, lo), sort.SearchInts(opd[o].idx, hi+1)
	}
	e := &evaluator{
		exists: func(n *node) bool { a, b := window(index[n]); return a < b },
		positions: func(n *node) []int {
			a, b := window(index[n])
			if a == b {
				return nil
			}
			d := &opd[index[n]]
			return d.pos[d.upos[a] : d.upos[b-1]+1]
		},
		work: len(doc),
	}
	satisfied := func(l, h int) bool {
		lo, hi = l, h
		return e.bool(q.root)
	}
	// adds reports whether doc[i], added to the window l..h next to it,
	// gives some operand a position the window does not hold.
	adds := func(i, l, h int) bool {
		for _, r := range doc[i].ops {
			d := &opd[r.o]
			if i > h {
				if r.k == 0 || d.idx[r.k-1] < l || d.upos[r.k-1] != d.upos[r.k] {
					return true
				}
			} else if r.k+1 == len(d.idx) || d.idx[r.k+1] > h || d.upos[r.k+1] != d.upos[r.k] {
				return true
			}
		}
		return false
	}
	// relaxed is satisfied with every ! taken as true (as everywhere, in a
	// phrase): it holds wherever satisfied does, and holds still when the
	// window grows.
	relaxed := func(l, h int) bool {
		e.relax = true
		defer func() { e.relax = false }()
		return satisfied(l, h)
	}
	// first is the first end >= start where start..end satisfies, or -1:
	// the first where relaxed does and, with !, from there one entry at a
	// time.
	first := func(start int) int {
		i := gallop(start, len(doc)-1, func(h int) bool { return relaxed(start, h) })
		if monotone || i < 0 {
			return i
		}
		for j := i; j < len(doc); j++ {
			if (j == i || adds(j, start, j-1)) && satisfied(start, j) {
				return j
			}
		}
		return -1
	}
	// last is the last begin in start..end where begin..end satisfies, or
	// -1, found the same way going down from end.
	last := func(start, end int) int {
		i := gallop(end, start, func(l int) bool { return relaxed(l, end) })
		if monotone || i < 0 {
			return i
		}
		for j := i; j >= start; j-- {
			if (j == i || adds(j, j+1, end)) && satisfied(j, end) {
				return j
			}
		}
		return -1
	}

	var wdoc float64
	for start := 0; start < len(doc); {
		end := first(start)
		if end < 0 {
			break
		}
		begin := last(start, end)
		if begin < 0 || doc[begin].pos > doc[end].pos {
			start++
			continue
		}
		e.work += end - begin + 1
		wdoc += coverWeight(end-begin+1, doc[begin].pos, doc[end].pos)
		start = begin + 1
	}
	wdoc /= wdoc + 1
	return float32(wdoc), e.work
}

// gallop is the first index from from toward to (either way) where ok
// holds, or -1, for an ok that holds on from there: steps of 1, 2, 4 …
// then bisection, a logarithmic number of calls.
func gallop(from, to int, ok func(int) bool) int {
	dir := 1
	if to < from {
		dir = -1
	}
	no, i := from-dir, from // ok fails at no, is asked at i
	for step := 1; !ok(i); step *= 2 {
		if no = i; i == to {
			return -1
		}
		if i += dir * step; (i-to)*dir > 0 {
			i = to
		}
	}
	for (i-no)*dir > 1 {
		if mid := no + (i-no)/2; ok(mid) {
			i = mid
		} else {
			no = mid
		}
	}
	return i
}

// coverWeight is one cover's part of ts_rank_cd (calc_rank_cd): n
// entries, all of weight D, from position p to q.
func coverWeight(n, p, q int) float64 {
	invD := 1.0 / float64(float32(0.1)) // weight D, PostgreSQL's default weights are float4
	var invSum float64
	for range n {
		invSum += invD
	}
	noise := (q - p) - (n - 1)
	if noise < 0 { // several lexemes at one position (the last, 16,383)
		noise = (n - 1) / 2
	}
	return float64(n) / invSum / float64(1+noise)
}

// Score is Rank as the number PostgreSQL prints for a float4 (and Parse
// Server returns): the shortest decimal that reads back as the float4.
func Score(r float32) float64 {
	if math.IsNaN(float64(r)) {
		return 0
	}
	return shortest(r)
}

func shortest(r float32) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(r), 'g', -1, 32), 64)
	return f
}
