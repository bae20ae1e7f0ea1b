package jsonenc

import (
	"encoding/json"

	segjson "github.com/segmentio/encoding/json"
)

// fastDepth is the deepest nesting Unmarshal hands to segmentio's decoder.
const fastDepth = 64

// Unmarshal decodes JSON text into v with encoding/json's answers: the
// same values (numbers as float64, objects as map[string]any), and an
// error for the text it refuses. Text nested at most 64 levels (every
// value the server writes, whose requests nest at most 20) is decoded by
// segmentio's decoder, a fraction of encoding/json's time; deeper text by
// encoding/json itself, whose time grows with the text's length where
// segmentio's grows much faster with its depth (10,000 levels: about 2 s
// against 1 ms), and which refuses text nested past 10,000 levels. The
// stores decode what others may have written with it (JSON columns,
// Parse Server's answers), so such text costs its length, not its depth
// squared.
func Unmarshal(b []byte, v any) error {
	if NestingDepth(b, fastDepth) > fastDepth {
		return json.Unmarshal(b, v)
	}
	return segjson.Unmarshal(b, v)
}
