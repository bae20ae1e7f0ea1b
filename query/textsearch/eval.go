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
	return evalBool(q.root, v)
}

// MatchText is Match of the text's vector in lang.
func (q *Query) MatchText(lang, text string) bool { return q.Match(NewVector(lang, text)) }

func evalBool(n *node, v Vector) bool {
	switch n.op {
	case opVal:
		return len(positions(n, v)) > 0
	case opNot:
		return !evalBool(n.right, v)
	case opAnd:
		return evalBool(n.left, v) && evalBool(n.right, v)
	case opOr:
		return evalBool(n.left, v) || evalBool(n.right, v)
	}
	ps := evalPos(n, v)
	return ps.neg || len(ps.pos) > 0
}

// weightOK: every position of a to_tsvector has weight D.
func weightOK(n *node) bool { return n.weights == 0 || n.weights&1 != 0 }

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

func evalPos(n *node, v Vector) posSet {
	switch n.op {
	case opVal:
		return posSet{pos: positions(n, v)}
	case opNot:
		r := evalPos(n.right, v)
		r.neg = !r.neg
		return r
	}
	l, r := evalPos(n.left, v), evalPos(n.right, v)
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

// entry is one position of the document where a query operand matches.
type entry struct {
	pos  int
	word string
}

// Rank is ts_rank_cd(v, q, 32), PostgreSQL's cover density ranking
// scaled to rank/(rank+1), as a float4: 0 when q does not match.
func (q *Query) Rank(v Vector) float32 {
	if q == nil || q.root == nil {
		return 0
	}
	var doc []entry
	seen := map[entry]bool{}
	var operands func(n *node)
	operands = func(n *node) {
		if n == nil {
			return
		}
		if n.op == opVal {
			if !weightOK(n) {
				return
			}
			for w, ps := range v {
				if w == n.word || n.prefix && strings.HasPrefix(w, n.word) {
					for _, p := range ps {
						if e := (entry{p, w}); !seen[e] {
							seen[e] = true
							doc = append(doc, e)
						}
					}
				}
			}
			return
		}
		operands(n.left)
		operands(n.right)
	}
	operands(q.root)
	sort.Slice(doc, func(i, j int) bool {
		if doc[i].pos != doc[j].pos {
			return doc[i].pos < doc[j].pos
		}
		return doc[i].word < doc[j].word
	})
	satisfied := func(lo, hi int) bool { // doc[lo..hi]
		w := Vector{}
		for _, e := range doc[lo : hi+1] {
			w[e.word] = append(w[e.word], e.pos)
		}
		return evalBool(q.root, w)
	}
	invD := 1.0 / float64(float32(0.1)) // weight D, PostgreSQL's default weights are float4
	var wdoc float64
	for start := 0; start < len(doc); {
		end := -1
		for i := start; i < len(doc); i++ {
			if satisfied(start, i) {
				end = i
				break
			}
		}
		if end < 0 {
			break
		}
		begin := -1
		for i := end; i >= start; i-- {
			if satisfied(i, end) {
				begin = i
				break
			}
		}
		if begin < 0 || doc[begin].pos > doc[end].pos {
			start++
			continue
		}
		var invSum float64
		for range doc[begin : end+1] {
			invSum += invD
		}
		cpos := float64(end-begin+1) / invSum
		noise := (doc[end].pos - doc[begin].pos) - (end - begin)
		if noise < 0 {
			noise = (end - begin) / 2
		}
		wdoc += cpos / float64(1+noise)
		start = begin + 1
	}
	wdoc /= wdoc + 1
	return float32(wdoc)
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
