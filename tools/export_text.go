package tools

// Cells of an export's plain-text table.

import (
	"strings"
	"unicode/utf8"
)

// textCell keeps a text-table cell on one line.
func textCell(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return s
	}
	s = strings.NewReplacer("\r\n", `\n`, "\n", `\n`, "\r", `\n`).Replace(s)
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// textWidth is the display width of a cell (one column per rune).
func textWidth(s string) int { return utf8.RuneCountInString(s) }
