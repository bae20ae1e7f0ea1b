package jsonenc

// NestingDepth returns the deepest array/object nesting of a JSON text
// (brackets inside strings do not count), stopping early once it passes
// limit. It scans the bytes once and needs no valid JSON, so a decoder
// never has to meet a value nested past a bound: the HTTP layer's body
// check and the federation's payload checks both use it.
func NestingDepth(b []byte, limit int) int {
	depth, deepest, inString, escaped := 0, 0, false, false
	for _, c := range b {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > deepest {
				deepest = depth
				if deepest > limit {
					return deepest
				}
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}
