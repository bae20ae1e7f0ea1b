package tools

// The cells of an export: a column's value read from a row and rendered as
// the text of a cell.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// lookup walks path through a row (and its included objects).
func lookup(row parse.Object, path []string) any {
	var v any = row[path[0]]
	for _, seg := range path[1:] {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[seg]
	}
	return v
}

// cellText renders one value as the text of a cell.
func cellText(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return formatNumber(x)
	case map[string]any:
		switch parse.TypeOf(x) {
		case "Date":
			if iso, ok := x["iso"].(string); ok {
				return iso
			}
		case "Pointer", "Object":
			if id, ok := x[parse.FieldObjectID].(string); ok {
				return id
			}
		case "File":
			if u, ok := x["url"].(string); ok && u != "" {
				return u
			}
			if n, ok := x["name"].(string); ok {
				return n
			}
		case "GeoPoint":
			lat, ok1 := x["latitude"].(float64)
			lng, ok2 := x["longitude"].(float64)
			if ok1 && ok2 {
				return formatNumber(lat) + "," + formatNumber(lng)
			}
		case "Polygon":
			if c, ok := x["coordinates"]; ok {
				return compactJSON(c)
			}
		case "Bytes":
			if b, ok := x["base64"].(string); ok {
				return b
			}
		}
	}
	return compactJSON(v)
}

// formatNumber renders a number without exponent for the usual range and
// without a fractional part for integers (1000, not 1e+03 or 1000.0).
func formatNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	if a := math.Abs(f); a != 0 && (a >= 1e21 || a < 1e-6) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
