package jsonenc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// sameAsStd checks Append against encoding/json.Marshal.
func sameAsStd(t *testing.T, v any) {
	t.Helper()
	want, werr := json.Marshal(v)
	got, gerr := Marshal(v)
	if (werr != nil) != (gerr != nil) {
		t.Fatalf("%#v: error %v, encoding/json's %v", v, gerr, werr)
	}
	if werr == nil && !bytes.Equal(got, want) {
		t.Fatalf("%#v:\n got %s\nwant %s", v, got, want)
	}
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", `quote " backslash \ slash /`, "<a href='x'>&amp;</a>",
		"tab\tnew\nline\rcr\x00\x01\x1f\x7f", "é ü 日本 🎉", "\u2028\u2029", "bad utf8 \xff\xfe end", string([]byte{0xe2, 0x82}),
		0.0, 1.0, -1.5, 3.14159, 1e20, 1e21, 1e-6, 1e-7, 123456789012345678.0, -0.0, 5e-324, math.MaxFloat64,
		0, 42, -7, int64(1) << 60, int32(-3),
		[]any{}, []any{1.0, "a", nil, map[string]any{}}, []string{"x", "<y>"}, []string(nil),
		map[string]any{}, map[string]any{"b": 1.0, "a": []any{true}, "A": nil, "é": "x", "<": ">"},
		[]map[string]any{{"objectId": "abc", "createdAt": "2025-01-01T00:00:00.000Z", "ACL": map[string]any{"*": map[string]any{"read": true}}}},
		map[string]any{"raw": json.RawMessage(`{ "x" : [1, 2] }`), "t": time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), "n": json.Number("12")},
		map[string]any{"ints": map[string]int64{"b": 2, "a": 1}, "s": struct{ A int }{1}},
		map[string]any{"many": strings.Repeat("k", 40)}, manyKeys(50),
	}
	for _, v := range values {
		sameAsStd(t, v)
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := Marshal(map[string]any{"x": f}); err == nil {
			t.Fatalf("%v: no error", f)
		}
	}
}

func manyKeys(n int) map[string]any {
	m := map[string]any{}
	for i := range n {
		m[fmt.Sprintf("k%03d", n-i)] = float64(i)
	}
	return m
}

func TestAppendQuotedMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", `{"a":"<b> & \"c\" \\ é \u2028"}`, "\x00\xff ok", "🎉"} {
		want, _ := json.Marshal(s)
		if got := AppendQuoted(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
}

func FuzzAppendQuoted(f *testing.F) {
	for _, s := range []string{"", "abc", `"\`, "<>&", "\u2028", "\xff", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := AppendQuoted(nil, []byte(s)); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
		sameAsStd(t, map[string]any{s: []any{s, 1.5}})
	})
}

// TestMarshalTrusted: a value whose raw parts this package made encodes
// as Marshal encodes it, byte for byte.
func TestMarshalTrusted(t *testing.T) {
	var rows []json.RawMessage
	for _, r := range findPage()["results"].([]map[string]any) {
		b, err := Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, b)
	}
	page := map[string]any{"class_name": "Ticket", "results": rows, "note": "<&>", "pipeline": json.RawMessage(`[{"$match":{"a":"\u003cb\u003e"}}]`)}
	want, err := Marshal(page)
	if err != nil {
		t.Fatal(err)
	}
	got, err := MarshalTrusted(page)
	if err != nil || string(got) != string(want) {
		t.Fatalf("MarshalTrusted differs from Marshal (%v):\n%.300s\n%.300s", err, got, want)
	}
}
