// Copyright 2026 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package mcp

import "math/rand"

// mutations calls f with n random mutations of the texts of corpus, the
// same ones on every run: in each, one to three bytes replaced, dropped or
// inserted, drawn from alphabet (JSON's own, so that many stay valid).
// The tests that hold a patched function to v1.8.0's use it.
func mutations(corpus []string, alphabet string, n int, f func(rng *rand.Rand, text string)) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		b := []byte(corpus[rng.Intn(len(corpus))])
		for k := 1 + rng.Intn(3); k > 0; k-- {
			switch op := rng.Intn(3); {
			case len(b) == 0 || op == 0:
				p := rng.Intn(len(b) + 1)
				b = append(b[:p], append([]byte{alphabet[rng.Intn(len(alphabet))]}, b[p:]...)...)
			case op == 1:
				b[rng.Intn(len(b))] = alphabet[rng.Intn(len(alphabet))]
			default:
				p := rng.Intn(len(b))
				b = append(b[:p], b[p+1:]...)
			}
		}
		f(rng, string(b))
	}
}
