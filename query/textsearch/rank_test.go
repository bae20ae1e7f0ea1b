package textsearch

import (
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
)

// referenceRank is Rank as it was first written, straight from
// PostgreSQL's Cover(): every window is built again from its entries, one
// entry at a time both ways (quadratic in the document). It returns the
// work as rank counts it, the windows' entries included.
func referenceRank(q *Query, v Vector) (float32, int) {
	if q == nil || q.root == nil {
		return 0, 0
	}
	type ent struct {
		pos  int
		word string
	}
	var doc []ent
	seen := map[ent]bool{}
	var operands func(n *node)
	operands = func(n *node) {
		if n == nil {
			return
		}
		if n.op == opVal {
			for w, ps := range v {
				if matches(n, w) {
					for _, p := range ps {
						if e := (ent{p, w}); !seen[e] {
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
	work := len(doc)
	satisfied := func(lo, hi int) bool {
		w := Vector{}
		for _, e := range doc[lo : hi+1] {
			w[e.word] = append(w[e.word], e.pos)
		}
		work += hi - lo + 1
		e := &evaluator{
			exists:    func(n *node) bool { return exists(n, w) },
			positions: func(n *node) []int { return positions(n, w) },
		}
		ok := e.bool(q.root)
		work += e.work
		return ok
	}
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
		work += end - begin + 1
		wdoc += coverWeight(end-begin+1, doc[begin].pos, doc[end].pos)
		start = begin + 1
	}
	wdoc /= wdoc + 1
	return float32(wdoc), work
}

// randomTerm is a to_tsquery term over a few words, with every operator.
func randomTerm(r *rand.Rand, depth int) string {
	words := []string{"a", "ab", "abc", "b", "c", "zz", "a:*", "ab:*", "b:*", "c:A", "a:D"}
	if depth == 0 || r.Intn(3) == 0 {
		return words[r.Intn(len(words))]
	}
	l, rt := randomTerm(r, depth-1), randomTerm(r, depth-1)
	switch r.Intn(7) {
	case 0:
		return l + " & " + rt
	case 1:
		return l + " | " + rt
	case 2:
		return "!" + "(" + l + ")"
	case 3:
		return "(" + l + ") <-> (" + rt + ")"
	case 4:
		return fmt.Sprintf("(%s) <%d> (%s)", l, r.Intn(4), rt)
	case 5:
		return "(" + l + " & !" + rt + ")"
	}
	return "(" + l + ") <-> !(" + rt + ")"
}

// randomVector is a document over the same words; some positions hold
// several words, as PostgreSQL's last position (16383) does.
func randomVector(r *rand.Rand) Vector {
	words := []string{"a", "ab", "abc", "abd", "b", "bc", "c", "zz"}
	v := Vector{}
	n := r.Intn(40)
	pos := 0
	for i := 0; i < n; i++ {
		if r.Intn(5) > 0 {
			pos += 1 + r.Intn(2)
		}
		w := words[r.Intn(len(words))]
		if ps := v[w]; len(ps) == 0 || ps[len(ps)-1] != pos {
			v[w] = append(ps, max(pos, 1))
		}
	}
	return v
}

// TestRankAgreesWithReference: the covers found by galloping and
// bisection, the relaxed query and the skipped entries rank every random
// document and query as the quadratic walk does, exactly.
func TestRankAgreesWithReference(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	bad := 0
	for i := 0; i < 20000 && bad < 10; i++ {
		term := randomTerm(r, 3)
		q, err := Parse("simple", term)
		if err != nil {
			t.Fatalf("%q: %v", term, err)
		}
		v := randomVector(r)
		got, _ := q.rank(v)
		want, _ := referenceRank(q, v)
		if got != want {
			bad++
			t.Errorf("%q on %v: rank %v, reference %v", term, v, got, want)
		}
	}
}

// worstTexts are the review's long texts, with n the part that grows.
var worstTexts = []struct {
	name, term string
	text       func(n int) string
}{
	{"filler, n distinct prefixed words, zzz", "ab:* & zzz", func(n int) string {
		return strings.Repeat("lorem ", 16383) + numbered("ab", n) + " zzz"
	}},
	{"n apples, zzz", "appl & zzz", func(n int) string { return strings.Repeat("apple ", n) + "zzz" }},
	{"n apples, zzz (phrase)", "appl <-> zzz", func(n int) string { return strings.Repeat("apple ", n) + "zzz" }},
	{"n distinct prefixed words, zzz", "ab:* & zzz", func(n int) string { return numbered("ab", n) + " zzz" }},
	{"n distinct prefixed words, zzz (phrase)", "ab:* <-> zzz", func(n int) string { return numbered("ab", n) + " zzz" }},
	{"n distinct prefixed words, zzz (no phrase)", "zzz <-> ab:*", func(n int) string { return numbered("ab", n) + " zzz" }},
	{"n distinct prefixed words, zzz (!)", "(zzz <-> ab:*) & !qqq", func(n int) string { return numbered("ab", n) + " zzz" }},
	{"n pairs", "ab:* <-> cd:*", func(n int) string { return numbered("ab", n) + " " + numbered("cd", n) }},
	{"n pairs (!)", "ab:* & !cd:*", func(n int) string { return numbered("ab", n) + " " + numbered("cd", n) }},
}

func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s%d", prefix, i)
	}
	return b.String()
}

// TestRankWorkIsLinear: ranking the review's worst texts takes work (the
// entries, operand look-ups and positions rank counts, not time) that
// grows with the text no faster than linearly: doubling n at most
// (about) doubles it.
func TestRankWorkIsLinear(t *testing.T) {
	const n = 10000
	for _, c := range worstTexts {
		q, err := Parse("english", c.term)
		if err != nil {
			t.Fatal(err)
		}
		var work [2]int
		for i, size := range []int{n, 2 * n} {
			_, work[i] = q.rank(NewVector("english", c.text(size)))
		}
		ratio := float64(work[1]) / float64(max(work[0], 1))
		t.Logf("%s, %s: work %d for n=%d, %d for n=%d (x%.2f)", c.name, c.term, work[0], n, work[1], 2*n, ratio)
		if ratio > 2.5 {
			t.Errorf("%s, %s: work %d for n=%d, %d for n=%d: more than linear", c.name, c.term, work[0], n, work[1], 2*n)
		}
	}
}

func BenchmarkRankLongText(b *testing.B) {
	for _, c := range worstTexts {
		q, err := Parse("english", c.term)
		if err != nil {
			b.Fatal(err)
		}
		v := NewVector("english", c.text(20000))
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				q.Rank(v)
			}
		})
	}
}

// TestPositionsPerLexeme: to_tsvector keeps a lexeme's first 255
// positions, so a phrase with the 300th does not match and the rank is
// PostgreSQL's (postgres_test.go checks the same against the database).
func TestPositionsPerLexeme(t *testing.T) {
	text := strings.Repeat("apple ", 300) + "zzz"
	v := NewVector("english", text)
	if want := 255; len(v["appl"]) != want || v["appl"][want-1] != want || !slices.Equal(v["zzz"], []int{301}) {
		t.Fatalf("appl %d positions (last %v), zzz %v; PostgreSQL keeps 1…255 and zzz 301", len(v["appl"]), v["appl"][len(v["appl"])-1], v["zzz"])
	}
	phrase, _ := Parse("english", "appl <-> zzz")
	if ok, err := phrase.MatchText("english", text); ok || err != nil {
		t.Errorf("appl <-> zzz: %v %v, PostgreSQL false", ok, err)
	}
	and, _ := Parse("english", "appl & zzz")
	if got := Score(and.Rank(v)); got != 0.0021691974 {
		t.Errorf("rank %v, PostgreSQL 0.0021691974", got)
	}
}
