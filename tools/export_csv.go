package tools

// CSV lines of an export.

import "strings"

func csvField(s string) string {
	if !strings.ContainsAny(s, "\",\r\n") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

func csvLine(cells []string) string {
	if len(cells) == 1 && cells[0] == "" {
		return "\"\"\n" // a lone empty field must not read as a blank line
	}
	fields := make([]string, len(cells))
	for i, c := range cells {
		fields[i] = csvField(c)
	}
	return strings.Join(fields, ",") + "\n"
}
