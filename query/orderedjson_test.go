package query

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// decodeOrdered gives encoding/json's decoder's answers (decodeOrderedStd)
// on every input: values, key order, duplicates, numbers, escapes, depth,
// and the refusals' words.
func TestDecodeOrderedAsEncodingJSON(t *testing.T) {
	nest := func(n int, inner string) string { return strings.Repeat("[", n) + inner + strings.Repeat("]", n) }
	inputs := []string{
		`[{"$group":{"_id":"$status","count":{"$sum":1}}}]`,
		`[{"$match":{"status":{"$in":["open","closed"]},"priority":{"$gte":2}}},{"$sort":{"b":1,"a":-1}},{"$limit":10}]`,
		` [ { "b" : 1 , "a" : [ 1 , 2.5 , -3e2 , 0 , -0 ] } ] `,
		"\t[\n{\"x\"\r:\ntrue}]\n",
		`{"a":1,"b":2,"a":3}`,
		`{"a":{"z":1},"a":{"y":2}}`,
		`[]`, `{}`, `[[],{},[{}]]`, `[null,true,false]`, `null`, `true`, `"s"`, `12`, `1e400`, `-1e400`, `[1e309]`,
		`0.1`, `123456789012345678901234567890`, `1E-7`, `[4.9e-324]`,
		`["a\"b","c\\d","e\/f","\n\t\r\b\f"]`,
		`["é","日本","😀","a\u00e9b","\ud83d\ude00","\ud800","\udc00x"]`,
		`{"k\u0041y":1}`, `["\ud83d\u0041","\ud83dx","\udbff\udfff","\u0000","\uFFFF","\ud83d\ud83d\ude00","\u00"]`,
		"[\"\xff\"]", "{\"\xc3\x28\":1}",
		nest(63, "1"), nest(64, "1"), nest(65, "1"), nest(66, "{}"), nest(64, `{"a":1}`), `{"a":` + nest(64, "1") + `}`,
		``, ` `, `[`, `]`, `[1,]`, `{"a":}`, `{"a" 1}`, `{1:2}`, `[1 2]`, `[1]]`, `[1] x`, `[1][2]`, `nul`, `tru`, `01`, `1.`, `.5`, `+1`,
		`"unterminated`, `["a",`, `{"a":1,}`, `[NaN]`, `[Infinity]`, `'a'`,
	}
	for _, in := range inputs {
		same(t, in)
	}
	// Random valid values, and random bytes cut out of and put into them.
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		v := randomJSON(rng, 0)
		same(t, v)
		b := []byte(v)
		i := rng.IntN(len(b) + 1)
		cut := string(b[:i]) + string(b[min(len(b), i+1+rng.IntN(3)):])
		same(t, cut)
		const junk = `[]{}:,"\ 1e-x`
		same(t, string(b[:i])+string(junk[rng.IntN(len(junk))])+string(b[i:]))
	}
}

func same(t *testing.T, in string) {
	t.Helper()
	got, gotErr := decodeOrdered([]byte(in))
	want, wantErr := decodeOrderedStd([]byte(in))
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %#v, %v\nwant %#v, %v", in, got, gotErr, want, wantErr)
	}
}

// randomJSON writes a random JSON value: objects with repeated keys,
// escapes, numbers of every form, deep nesting now and then.
func randomJSON(rng *rand.Rand, depth int) string {
	keys := []string{"a", "b", "$group", "_id", "a", `q\"x`, "é", "$sum"}
	strs := []string{"", "x", `a\nb`, `\/`, "😀", `\\`, "$status", "日本"}
	nums := []string{"0", "-0", "1", "-12", "3.25", "1e3", "-2.5E-3", "1e400", "12345678901234567890", "0.000001"}
	kind := rng.IntN(8)
	if depth > 70 || (depth > 3 && kind < 6 && rng.IntN(3) > 0) {
		kind = 6 + rng.IntN(2)
	}
	switch kind {
	case 0, 1, 2:
		var b strings.Builder
		b.WriteByte('{')
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`"` + keys[rng.IntN(len(keys))] + `":` + randomJSON(rng, depth+1))
		}
		b.WriteByte('}')
		return b.String()
	case 3, 4, 5:
		var b strings.Builder
		b.WriteString(" [ ")
		for i := range rng.IntN(4) {
			if i > 0 {
				b.WriteString(" ,")
			}
			b.WriteString(randomJSON(rng, depth+1))
		}
		b.WriteString("]")
		return b.String()
	case 6:
		return nums[rng.IntN(len(nums))]
	}
	switch rng.IntN(4) {
	case 0:
		return []string{"null", "true", "false"}[rng.IntN(3)]
	}
	return `"` + strs[rng.IntN(len(strs))] + `"`
}

// Only whitespace may follow the value: text after it, whether it reads
// as a token or as none, is refused on both paths (the caller's pipeline
// text is shown back as it is, so what is accepted must be JSON alone).
func TestDecodeOrderedRefusesTrailingText(t *testing.T) {
	for _, in := range []string{`[1]]`, `[1] x`, "[1] \"\nx", `[1]}`, `[1][2]`, `[1] 2`, `{"a":1}}`, `[1]"`, `[1],`} {
		if v, err := decodeOrdered([]byte(in)); err == nil || err.Error() != "text after the pipeline" {
			t.Errorf("%q: %v, %v; want the text after the pipeline refused", in, v, err)
		}
	}
	for _, in := range []string{"[1] ", "[1]\n\t", " [1]\r\n"} {
		if _, err := decodeOrdered([]byte(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}
