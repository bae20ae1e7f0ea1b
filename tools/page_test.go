package tools

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
)

// TestFitKeepsLongestPrefix: a page over the budget keeps exactly the
// longest prefix of its rows whose whole result fits (checked against
// encoding every prefix), whatever the rows' sizes; a page whose first
// row does not fit is refused.
func TestFitKeepsLongestPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	page := func(sizes []int) *QueryResult {
		rows := make([]json.RawMessage, len(sizes))
		for i, n := range sizes {
			rows[i] = json.RawMessage(fmt.Sprintf(`{"objectId":"o%d","t":%q}`, i, strings.Repeat("x", n)))
		}
		r := &QueryResult{ClassName: "Ticket", Results: rows, ResultCount: len(rows), all: rows,
			Page: newPage("query_class", map[string]any{"class_name": "Ticket"}, len(rows), 7, len(rows), false)}
		return r
	}
	longest := func(sizes []int, budget int) int {
		best := -1
		for k := 0; k <= len(sizes); k++ {
			r := page(sizes)
			if k < len(sizes) {
				r.keepRows(k)
			}
			if b, _ := jsonenc.Marshal(r); len(b) <= budget {
				best = k
			}
		}
		return best
	}
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		sizes := make([]int, n)
		for i := range sizes {
			sizes[i] = rng.IntN(400)
			if rng.IntN(10) == 0 {
				sizes[i] = 2000 + rng.IntN(3000) // a few heavy rows
			}
		}
		budget := 300 + rng.IntN(8000)
		r := page(sizes)
		out, err := Fit(r, budget)
		want := longest(sizes, budget)
		switch {
		case want == len(sizes):
			if err != nil || r.ResultCount != n || r.Truncated {
				t.Fatalf("trial %d: everything fits, got %d rows, %v", trial, r.ResultCount, err)
			}
		case want <= 0:
			if err == nil {
				t.Fatalf("trial %d: not even one row fits, got %d rows", trial, r.ResultCount)
			}
		default:
			if err != nil || r.ResultCount != want || len(out) > budget || r.RowsLeftOut != n-want {
				t.Fatalf("trial %d (sizes %v, budget %d): kept %d rows (%d bytes, %d left out), %v; want %d", trial, sizes, budget, r.ResultCount, len(out), r.RowsLeftOut, err, want)
			}
			if b, _ := jsonenc.Marshal(r); string(b) != string(out) {
				t.Fatalf("trial %d: the bytes returned are not the result's state", trial)
			}
		}
	}
}
