package jsonenc

import (
	"strings"
	"testing"
)

func TestNestingDepth(t *testing.T) {
	for _, c := range []struct {
		in          string
		limit, want int
	}{
		{`1`, 5, 0},
		{`{"a":[1,{"b":2}]}`, 5, 3},
		{`{"a":"[[[[{{{{"}`, 5, 1},
		{`{"a":"\"[[[["}`, 5, 1},
		{`{"a":"\\"}`, 5, 1},
		{strings.Repeat("[", 100), 5, 6}, // stops once past the limit
		{`[[[`, 5, 3},                    // not JSON: counted all the same
	} {
		if got := NestingDepth([]byte(c.in), c.limit); got != c.want {
			t.Errorf("NestingDepth(%.20s, %d) = %d, want %d", c.in, c.limit, got, c.want)
		}
	}
}
