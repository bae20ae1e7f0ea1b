package tools

import (
	"encoding/json"
	"fmt"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
)

// Rows of query_class and get_object travel as JSON text from the store
// (agent.Scope.FindJSON) to the response: no object is built per row.
// The few steps that look into values work on decoded copies of only the
// rows that need it.

// elideLargeJSON is elideLarge for rows held as JSON text. A row whose
// text is no longer than LargeValueBytes holds no value over it, so only
// longer rows are decoded, go through elideLarge and are encoded again.
func elideLargeJSON(rows []json.RawMessage, asked []string) ([]string, error) {
	var big []int
	var objs []map[string]any
	for i, r := range rows {
		if len(r) <= LargeValueBytes {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		big, objs = append(big, i), append(objs, m)
	}
	if len(big) == 0 {
		return nil, nil
	}
	out := elideLarge(objs, asked)
	for j, i := range big {
		b, err := jsonenc.Marshal(objs[j])
		if err != nil {
			return nil, err
		}
		rows[i] = b
	}
	return out, nil
}

// decodeRows decodes rows held as JSON text (for the too_large
// diagnostic, which ranks fields by size).
func decodeRows(rows []json.RawMessage) []map[string]any {
	out := make([]map[string]any, 0, len(rows))
	for _, r := range rows {
		var m map[string]any
		if json.Unmarshal(r, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}
