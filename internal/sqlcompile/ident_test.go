package sqlcompile

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// QuoteIdent quotes as both dialects need, whether the name is kept or
// not: past the cache's size and length limits, and from many goroutines
// at once (go test -race).
func TestQuoteIdent(t *testing.T) {
	cases := map[string]string{
		"title":                      `"title"`,
		`a"b`:                        `"a""b"`,
		`""`:                         `""""""`,
		"":                           `""`,
		strings.Repeat("x", 200):     `"` + strings.Repeat("x", 200) + `"`,
		`Robert"); DROP TABLE x; --`: `"Robert""); DROP TABLE x; --"`,
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2 * identCacheMax {
				name := fmt.Sprintf("f%d_%d\"", g%2, i)
				if got, want := QuoteIdent(name), `"`+strings.ReplaceAll(name, `"`, `""`)+`"`; got != want {
					t.Errorf("QuoteIdent(%q) = %s, want %s", name, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	for name, want := range cases {
		for range 2 { // the second time from the cache, when kept
			if got := QuoteIdent(name); got != want {
				t.Errorf("QuoteIdent(%q) = %s, want %s", name, got, want)
			}
		}
	}
	if n := len(*quoted.Load()); n > identCacheMax {
		t.Errorf("%d names kept, at most %d", n, identCacheMax)
	}
}
