package jsonenc

import (
	"encoding/json"
	"fmt"
	"testing"
)

// findPage is a query_class result shaped like the demo's: 100 Ticket
// rows of strings, numbers, dates, a pointer and an ACL.
func findPage() map[string]any {
	rows := make([]map[string]any, 100)
	for i := range rows {
		rows[i] = map[string]any{
			"objectId": fmt.Sprintf("t%09d", i), "createdAt": "2025-03-04T05:06:07.089Z", "updatedAt": "2025-03-05T05:06:07.089Z",
			"title":  fmt.Sprintf("Ticket %d: the \"export\" button fails on <Safari> & Firefox", i),
			"body":   "Steps to reproduce: open the project, click export, wait. Expected a CSV; got an empty file. Logs attached. é ü",
			"status": "open", "priority": float64(i % 5), "estimate": 2.5, "tags": []any{"ui", "export"},
			"dueDate": map[string]any{"__type": "Date", "iso": "2025-04-01T00:00:00.000Z"},
			"project": map[string]any{"__type": "Pointer", "className": "Project", "objectId": "p000000001"},
			"ACL":     map[string]any{"role:org-acme": map[string]any{"read": true, "write": true}},
		}
	}
	return map[string]any{"class_name": "Ticket", "results": rows, "result_count": 100,
		"pagination": map[string]any{"limit": 100, "skip": 0, "has_more": true}}
}

// BenchmarkFindPage compares encoding/json with the package's encoder on
// one find page (about 60 KB), each followed by the escaping of the JSON
// text into a string.
func BenchmarkFindPage(b *testing.B) {
	v := findPage()
	for _, c := range []struct {
		name string
		enc  func(any) ([]byte, error)
	}{{"encoding-json", json.Marshal}, {"jsonenc", Marshal}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var out []byte
			for b.Loop() {
				raw, err := c.enc(v)
				if err != nil {
					b.Fatal(err)
				}
				out = AppendQuoted(out[:0], raw)
			}
			b.SetBytes(int64(len(out)))
		})
	}
}
