package tools

// The rendered table of an export: how many rows fit the byte bound and
// the rendering in each format (the line renderers are in export_csv.go,
// export_markdown.go and export_text.go).

import "strings"

// textTable is the rendered cells of an export.
type textTable struct {
	headers []string
	right   []bool // right-align the column in text tables
	rows    [][]string
}

// fit returns how many rows fit in maxBytes of output.
func (t *textTable) fit(format string, maxBytes int) int {
	switch format {
	case ExportTable:
		widths := make([]int, len(t.headers))
		extra := 0 // bytes beyond one per display column (multi-byte runes)
		for i, h := range t.headers {
			h = textCell(h)
			widths[i] = textWidth(h)
			extra += len(h) - widths[i]
		}
		for n, row := range t.rows {
			for i, c := range row {
				c = textCell(c)
				w := textWidth(c)
				widths[i] = max(widths[i], w)
				extra += len(c) - w
			}
			line := 2 // leading "|" or "+", newline
			for _, w := range widths {
				line += w + 3
			}
			if (n+5)*line+extra > maxBytes { // border, header, border, rows, border
				return n
			}
		}
	default:
		line := csvLine
		total := len(csvLine(t.headers))
		if format == ExportMarkdown {
			line = mdLine
			total = len(mdLine(t.headers)) + len(t.headers)*6 + 2
		}
		for n, row := range t.rows {
			total += len(line(row))
			if total > maxBytes {
				return n
			}
		}
	}
	return len(t.rows)
}

func (t *textTable) render(format string) string {
	var b strings.Builder
	switch format {
	case ExportMarkdown:
		b.WriteString(mdLine(t.headers))
		b.WriteString("|")
		for range t.headers {
			b.WriteString(" --- |")
		}
		b.WriteString("\n")
		for _, row := range t.rows {
			b.WriteString(mdLine(row))
		}
	case ExportTable:
		headers := make([]string, len(t.headers))
		widths := make([]int, len(t.headers))
		for i, h := range t.headers {
			headers[i] = textCell(h)
			widths[i] = textWidth(headers[i])
		}
		rows := make([][]string, len(t.rows))
		for r, row := range t.rows {
			rows[r] = make([]string, len(row))
			for i, c := range row {
				rows[r][i] = textCell(c)
				widths[i] = max(widths[i], textWidth(rows[r][i]))
			}
		}
		border := "+"
		for _, w := range widths {
			border += strings.Repeat("-", w+2) + "+"
		}
		border += "\n"
		line := func(cells []string, align []bool) {
			b.WriteString("|")
			for i, c := range cells {
				pad := strings.Repeat(" ", widths[i]-textWidth(c))
				if align != nil && align[i] {
					b.WriteString(" " + pad + c + " |")
				} else {
					b.WriteString(" " + c + pad + " |")
				}
			}
			b.WriteString("\n")
		}
		b.WriteString(border)
		line(headers, nil)
		b.WriteString(border)
		for _, row := range rows {
			line(row, t.right)
		}
		if len(rows) > 0 {
			b.WriteString(border)
		}
	default:
		b.WriteString(csvLine(t.headers))
		for _, row := range t.rows {
			b.WriteString(csvLine(row))
		}
	}
	return b.String()
}
