package jsonenc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// Unmarshal gives encoding/json's values, and refuses what it refuses,
// at every depth (the deep ones are decoded by encoding/json itself).
func TestUnmarshalAsEncodingJSON(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	deepObj := func(n int) string { return strings.Repeat(`{"k":`, n) + "1" + strings.Repeat("}", n) }
	for _, in := range []string{
		`{"a":[1,2.5,-3e-7,1e21,12345678901234567890],"b":{"c":null,"d":true},"e":"\u003c\u0026\u003e é \ud83d\ude00"}`,
		`["*","role:admin","user1"]`, `[]`, `{}`, `null`, `"s"`, `{"a":1,"a":2}`, `["\ud800"]`, `{"k":"[[[[["}`,
		`{"a":`, `[1,]`, `nul`, `{"a":1}x`, `[1e400]`, "\"\xff\"", ``,
		deep(fastDepth), deep(fastDepth + 1), deepObj(fastDepth), deepObj(fastDepth + 1),
		deep(9999), deep(10000), deep(10001), deep(30000), deepObj(10001),
	} {
		var want, got any
		wantErr := json.Unmarshal([]byte(in), &want)
		gotErr := Unmarshal([]byte(in), &got)
		short := in
		if len(short) > 40 {
			short = short[:40] + "…"
		}
		switch {
		case (gotErr != nil) != (wantErr != nil):
			t.Errorf("%q: error %v, want %v", short, gotErr, wantErr)
		case wantErr == nil && !reflect.DeepEqual(got, want):
			t.Errorf("%q: got %v, want %v", short, got, want)
		}
	}
}

// BenchmarkUnmarshalDeep is a value 5,000 levels deep: decoded in the
// time encoding/json takes, not segmentio's (hundreds of times more).
func BenchmarkUnmarshalDeep(b *testing.B) {
	in := []byte(strings.Repeat("[", 5000) + strings.Repeat("]", 5000))
	for b.Loop() {
		var v any
		if err := Unmarshal(in, &v); err != nil {
			b.Fatal(err)
		}
	}
}
