package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/tools"
)

// DefaultMaxResponseBytes caps a serialized tool result (4 MiB).
const DefaultMaxResponseBytes = 4 << 20

// capGuard bounds the serialized size of a tool's result. query_class
// results over the cap are truncated and annotated (the heaviest field is
// dropped, then trailing rows); any other tool is refused with too_large,
// naming the heaviest fields and the keys to ask for instead. Field names
// appear in the diagnostic, never values. The returned data is the
// serialized JSON, so it is not marshalled twice.
func capGuard(maxBytes int) Guard {
	return func(next ToolFunc) ToolFunc {
		return func(ctx context.Context, inv *Invocation) (any, error) {
			data, err := next(ctx, inv)
			if err != nil {
				return nil, err
			}
			b, err := jsonenc.Marshal(data)
			if err != nil {
				return nil, fmt.Errorf("tool %s: result not serializable: %w", inv.Tool.Name, err)
			}
			if len(b) <= maxBytes {
				return json.RawMessage(b), nil
			}
			m, _ := data.(map[string]any)
			rows := resultRows(m)
			if inv.Tool.Name == "query_class" && rows != nil {
				return truncateQuery(m, rows, maxBytes, len(b))
			}
			return nil, tooLarge(len(b), maxBytes, rows)
		}
	}
}

// resultRows finds the row objects of a result: "results", "objects" or
// "object".
func resultRows(m map[string]any) []map[string]any {
	if m == nil {
		return nil
	}
	var out []map[string]any
	switch v := m["results"].(type) {
	case []map[string]any: // also []parse.Object
		out = v
	case []any:
		for _, r := range v {
			if o, ok := r.(map[string]any); ok {
				out = append(out, o)
			}
		}
	}
	if objs, ok := m["objects"].(map[string]any); ok {
		for _, o := range objs {
			if r, ok := o.(map[string]any); ok {
				out = append(out, r)
			}
		}
	}
	if o, ok := m["object"].(map[string]any); ok {
		out = append(out, o)
	}
	return out
}

type fieldSize struct {
	name  string
	bytes int
}

// fieldSizes ranks the fields of rows by their total serialized size.
func fieldSizes(rows []map[string]any) []fieldSize {
	total := map[string]int{}
	for _, r := range rows {
		for k, v := range r {
			b, _ := jsonenc.Marshal(v)
			total[k] += len(b) + len(k) + 4
		}
	}
	out := make([]fieldSize, 0, len(total))
	for k, n := range total {
		out = append(out, fieldSize{k, n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].bytes != out[j].bytes {
			return out[i].bytes > out[j].bytes
		}
		return out[i].name < out[j].name
	})
	return out
}

func humanBytes(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.0f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// tooLarge is the refusal of an oversize result, with a per-field byte
// diagnostic and a positive keys list without the heaviest field.
func tooLarge(size, limit int, rows []map[string]any) error {
	d := map[string]any{"result_bytes": size, "max_bytes": limit}
	msg := fmt.Sprintf("the result is %d bytes, over the %d-byte cap.", size, limit)
	if len(rows) > 0 {
		sizes := fieldSizes(rows)
		var parts []string
		var heavy []any
		for i, f := range sizes {
			if i == 3 {
				break
			}
			parts = append(parts, fmt.Sprintf("%s (~%s/row)", f.name, humanBytes(f.bytes/len(rows))))
			heavy = append(heavy, map[string]any{"field": f.name, "bytes_per_row": f.bytes / len(rows)})
		}
		var keep []string
		for _, f := range sizes[1:] {
			keep = append(keep, f.name)
		}
		sort.Strings(keep)
		d["largest_fields"] = heavy
		d["suggested_keys"] = keep
		msg += " Largest fields: " + strings.Join(parts, ", ") + "."
		msg += fmt.Sprintf(" Try keys: %q (drops %s).", strings.Join(keep, ","), sizes[0].name)
	}
	msg += " Or narrow the request: a lower limit, fewer keys, a stricter where."
	return &tools.Error{Code: tools.CodeTooLarge, Message: msg, Details: d}
}

// truncateQuery fits a query_class result under the cap: it drops the
// heaviest field from every row, then trailing rows, and replaces the
// pagination hints with a _truncated block.
func truncateQuery(m map[string]any, rows []map[string]any, limit, size int) (any, error) {
	sizes := fieldSizes(rows)
	dropped := ""
	if len(sizes) > 0 && sizes[0].name != parse.FieldObjectID {
		dropped = sizes[0].name
		for _, r := range rows {
			delete(r, dropped)
		}
	}
	out := make(map[string]any, len(m)+1)
	for k, v := range m {
		out[k] = v
	}
	delete(out, "next_call") // its skip arithmetic no longer holds
	delete(out, "result_count")
	skip := 0
	if p, ok := m["pagination"].(map[string]any); ok {
		skip, _ = p["skip"].(int)
	}
	fit := func(n int) ([]byte, bool) {
		out["results"] = rows[:n]
		out["_truncated"] = truncNote(dropped, n, len(rows), skip, limit)
		b, err := jsonenc.Marshal(out)
		return b, err == nil && len(b) <= limit
	}
	// The largest prefix of rows that fits (binary search; 0 rows always
	// fits unless the envelope alone is too big).
	lo, hi := 0, len(rows)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if _, ok := fit(mid); ok {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	b, ok := fit(lo)
	if !ok {
		return nil, tooLarge(size, limit, rows)
	}
	return json.RawMessage(b), nil
}

func truncNote(dropped string, kept, original, skip, limit int) map[string]any {
	t := map[string]any{"reason": "response_exceeded_max_bytes", "kept_count": kept, "original_count": original}
	var hint []string
	if dropped != "" {
		t["dropped_fields"] = []string{dropped}
		hint = append(hint, fmt.Sprintf("Field %q was dropped from every row", dropped))
	}
	if kept < original {
		t["next_skip"] = skip + kept
		hint = append(hint, fmt.Sprintf("only the first %d of %d rows fit the %d-byte cap; call query_class with skip %d for the next page", kept, original, limit, skip+kept))
	}
	hint = append(hint, "get_object returns a single row in full")
	t["hint"] = strings.Join(hint, "; ") + "."
	return t
}
