package sqlkit

import (
	"fmt"
	"testing"
	"time"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/parse"
)

// testCodec reads the columns as a driver hands them: text as a string or
// a *RawText, numbers as float64, booleans, times, permissions as []string.
var testCodec = ColumnCodec{
	Perms: func(v any) ([]string, bool, error) {
		if v == nil {
			return nil, false, nil
		}
		p, ok := v.([]string)
		if !ok {
			return nil, false, fmt.Errorf("permissions: %T", v)
		}
		return p, true, nil
	},
	Value: func(f parse.Field, v any) (parse.Normalized, error) {
		switch x := v.(type) {
		case string:
			return parse.Normalized{String: x}, nil
		case *RawText:
			return parse.Normalized{String: string(x.B)}, nil
		case float64:
			return parse.Normalized{Number: x}, nil
		case bool:
			return parse.Normalized{Bool: x}, nil
		case time.Time:
			return parse.Normalized{Time: x}, nil
		}
		return parse.Normalized{}, fmt.Errorf("field of type %s: %T", f.Type, v)
	},
}

// TestRowWriterReused writes rows of two classes whose fields differ in
// kind at the same places, alternately, each writer handed back before
// the next is made: a reused writer writes what a fresh one would (the
// object path, encoded), nothing of the class it wrote before.
func TestRowWriterReused(t *testing.T) {
	when := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	a := parse.Schema{ClassName: "A", Fields: map[string]parse.Field{
		"objectId": {Type: parse.TypeString},
		"owner":    {Type: parse.TypePointer, TargetClass: "_User"},
		"score":    {Type: parse.TypeNumber},
		"seen":     {Type: parse.TypeDate},
		"ACL":      {Type: parse.TypeACL},
	}}
	aFields := []string{"objectId", "owner", "score", "seen", "ACL"}
	aRow := []any{"a1", &RawText{B: []byte("u1")}, 2.5, when, []string{"*"}, []string{"u1"}}
	b := parse.Schema{ClassName: "B", Fields: map[string]parse.Field{
		"objectId":  {Type: parse.TypeString},
		"doc":       {Type: parse.TypeFile}, // written from its REST value
		"title":     {Type: parse.TypeString},
		"done":      {Type: parse.TypeBoolean},
		"createdAt": {Type: parse.TypeDate},
		"parent":    {Type: parse.TypePointer, TargetClass: "Post \"quoted\""},
	}}
	bFields := []string{"objectId", "doc", "title", "done", "createdAt", "parent"}
	bRow := []any{"b1", "report.pdf", &RawText{B: []byte("<hello>")}, true, when, "p1"}

	want := func(sch parse.Schema, fields []string, row []any, keep func(string) bool) string {
		t.Helper()
		obj, err := DecodeRow(testCodec, sch, fields, row)
		if err != nil {
			t.Fatal(err)
		}
		for k := range obj {
			if keep != nil && !keep(k) {
				delete(obj, k)
			}
		}
		out, err := jsonenc.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	write := func(sch parse.Schema, fields []string, row []any, keep func(string) bool) (string, *RowWriter) {
		t.Helper()
		w := NewRowWriter(testCodec, sch, fields, keep)
		defer w.Release()
		out, err := w.Append(nil, row)
		if err != nil {
			t.Fatal(err)
		}
		return string(out), w
	}
	noTitle := func(f string) bool { return f != "title" }
	var writers = map[*RowWriter]bool{}
	for i := range 20 {
		got, w := write(a, aFields, aRow, nil)
		writers[w] = true
		if exp := want(a, aFields, aRow, nil); got != exp {
			t.Fatalf("round %d, class A: %s\nwant %s", i, got, exp)
		}
		got, w = write(b, bFields, bRow, noTitle)
		writers[w] = true
		if exp := want(b, bFields, bRow, noTitle); got != exp {
			t.Fatalf("round %d, class B: %s\nwant %s", i, got, exp)
		}
	}
	if len(writers) == 40 {
		t.Log("no writer was reused (the pool dropped them all); the outputs were still checked")
	}
}
