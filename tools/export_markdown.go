package tools

// Markdown table lines of an export.

import "strings"

// Backslashes are escaped too, so a value ending in "\" cannot un-escape
// the next pipe.
var mdEscaper = strings.NewReplacer(`\`, `\\`, "|", `\|`, "\r\n", "<br>", "\n", "<br>", "\r", "<br>")

func mdLine(cells []string) string {
	esc := make([]string, len(cells))
	for i, c := range cells {
		esc[i] = mdEscaper.Replace(c)
	}
	return "| " + strings.Join(esc, " | ") + " |\n"
}
