package sqlite

import (
	"reflect"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/parse"
)

// TestDecodeValue reads each column form the store writes back to the
// value encodeValue was given.
func TestDecodeValue(t *testing.T) {
	date, err := parse.ParseDate("2026-11-29T10:20:30.456Z")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		f parse.Field
		n parse.Normalized
	}{
		{parse.Field{Type: parse.TypeNumber}, parse.Normalized{Number: 2.5}},
		{parse.Field{Type: parse.TypeBoolean}, parse.Normalized{Bool: true}},
		{parse.Field{Type: parse.TypeString}, parse.Normalized{String: "héllo \"x\""}},
		{parse.Field{Type: parse.TypeDate}, parse.Normalized{Time: date}},
		{parse.Field{Type: parse.TypeObject}, parse.Normalized{JSON: map[string]any{"a": []any{1.0, "b", nil, true}, "c": map[string]any{}}}},
		{parse.Field{Type: parse.TypeArray}, parse.Normalized{JSON: []any{"x", 1e21, map[string]any{"k": "<&>"}}}},
		{parse.Field{Type: parse.TypeGeoPoint}, parse.Normalized{Lat: 40.5, Lng: -73.25}},
	} {
		col, err := encodeValue(c.f, c.n)
		if err != nil {
			t.Fatalf("%s: %v", c.f.Type, err)
		}
		got, err := decodeValue(c.f, col)
		if err != nil {
			t.Fatalf("%s: decode %v: %v", c.f.Type, col, err)
		}
		if !reflect.DeepEqual(got, c.n) {
			t.Errorf("%s: %#v read back as %#v", c.f.Type, c.n, got)
		}
	}
	for _, bad := range []string{`{"a":`, `[1,]`, `nul`, `{"a":1}x`} {
		if _, err := decodeValue(parse.Field{Type: parse.TypeObject}, bad); err == nil {
			t.Errorf("the Object column %q was read without an error", bad)
		}
		if _, _, err := permArray(bad); err == nil {
			t.Errorf("the permission array %q was read without an error", bad)
		}
	}
	// A column written by other hands and nested past encoding/json's
	// 10,000 levels is refused, as before; one nested 5,000 levels is read
	// (in encoding/json's time, jsonenc.Unmarshal).
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	if _, err := decodeValue(parse.Field{Type: parse.TypeArray}, deep(10001)); err == nil {
		t.Error("an Array column nested 10,001 levels was read without an error")
	}
	if _, _, err := permArray(deep(10001)); err == nil {
		t.Error("a permission array nested 10,001 levels was read without an error")
	}
	if n, err := decodeValue(parse.Field{Type: parse.TypeArray}, deep(5000)); err != nil || n.JSON == nil {
		t.Errorf("an Array column nested 5,000 levels: %v", err)
	}
	perms, ok, err := permArray(`["*","role:admin"]`)
	if err != nil || !ok || !reflect.DeepEqual(perms, []string{"*", "role:admin"}) {
		t.Errorf("permArray: %v %v %v", perms, ok, err)
	}
}

// TestDecodeValueAllocs holds reading a scalar column (a find reads one
// per field per row) to no allocation: the value is built on the stack.
func TestDecodeValueAllocs(t *testing.T) {
	for _, c := range []struct {
		f parse.Field
		v any
	}{
		{parse.Field{Type: parse.TypeNumber}, 2.5},
		{parse.Field{Type: parse.TypeNumber}, int64(7)},
		{parse.Field{Type: parse.TypeBoolean}, int64(1)},
		{parse.Field{Type: parse.TypeString}, "open"},
		{parse.Field{Type: parse.TypeDate}, "2026-11-29T10:20:30.456Z"},
	} {
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := decodeValue(c.f, c.v); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("reading a %s column allocated %v times", c.f.Type, allocs)
		}
	}
}
