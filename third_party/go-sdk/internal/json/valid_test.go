// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by the license
// that can be found in the LICENSE file.

package json

import (
	stdjson "encoding/json"
	"math/rand"
	"strings"
	"testing"
)

// Valid answers as encoding/json.Valid does: on a corpus of valid and
// invalid texts, at and past its nesting limit, and on 100,000 random
// mutations of a valid text.
func TestValidAsEncodingJSON(t *testing.T) {
	inputs := []string{`{}`, `[]`, `null`, `true`, `false`, `tru`, `nul`, `0`, `01`, `-0`, `-`, `1.`, `1.5e`, `1e5`, `1E+5`, `+1`, `.5`, `1.5e-3`,
		`"a"`, "\"\xff\"", "\"\x01\"", "\"\t\"", `"\u00"`, `"\ud800"`, `"\x"`, `"\/"`, `[1,]`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":1}}`, `[1] [2]`,
		" \t\r\n{} \n", "\v{}", "{}\v", `{"a":[1,2,{"b":null}]}`, ``, ` `, `"`, `"abc`, `[`, `]`, `{"a":}`, `{"a"}`, `[1 2]`, "\xef\xbb\xbf{}",
		`1 `, ` 1`, `{"\u0000":1}`, `"\u0041"`, `1e400`, `-1e-400`, `123456789012345678901234567890`, `"[[[[{{{{"`}
	for _, n := range []int{9999, 10000, 10001, 20000} {
		inputs = append(inputs, strings.Repeat("[", n)+strings.Repeat("]", n), strings.Repeat(`{"a":`, n)+"1"+strings.Repeat("}", n),
			`"`+strings.Repeat("[", n)+`"`, strings.Repeat("[", n))
	}
	for _, s := range inputs {
		if got, want := Valid([]byte(s)), stdjson.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%.40q…) = %v, encoding/json says %v", s, got, want)
		}
	}
	base := []byte(`{"content":[{"type":"text","text":"{\"a\":[1,2]}"}],"structuredContent":{"x":[1,{"a":"b\u0041","c":[true,false,null,-1.5e3]}]},"isError":false}`)
	chars := []byte("{}[]\",:\\ 0123456789.eE+-tfnaul\x00\xff\t\n")
	r := rand.New(rand.NewSource(1))
	for range 100000 {
		d := append([]byte(nil), base...)
		for range 1 + r.Intn(3) {
			d[r.Intn(len(d))] = chars[r.Intn(len(chars))]
		}
		if got, want := Valid(d), stdjson.Valid(d); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", d, got, want)
		}
	}
}
