package tools

import (
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
)

// BytesPerToken is the estimate that turns a token budget into bytes (the
// audit's estimate too: JSON text runs about four bytes a token).
const BytesPerToken = 4

// DefaultResponseBudget is the largest tool result, in bytes, when the
// operator sets none: about 4,000 tokens.
const DefaultResponseBudget = 4000 * BytesPerToken

// MaxSkip bounds the skip argument of the paged tools.
const MaxSkip = 10_000_000

// NextCall is the call that continues a result exactly where it stopped.
type NextCall struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// Window is the slice of the matching rows a page was asked for.
type Window struct {
	Limit   int  `json:"limit"`
	Skip    int  `json:"skip"`
	HasMore bool `json:"has_more"`
}

// Page is the paging state every row-listing result embeds (query_class,
// export_data, aggregate, group_by, group_by_date, distinct): the window,
// whether the answer is complete, and the call that fetches the rest. It is
// written once here; the response budget cuts any Page the same way.
type Page struct {
	Pagination Window `json:"pagination"`
	// Truncated: more rows follow (next_call fetches them).
	Truncated bool `json:"truncated,omitempty"`
	// RowsLeftOut counts the rows of this page cut to fit the response
	// budget (they are the first rows of next_call).
	RowsLeftOut int       `json:"rows_left_out,omitempty"`
	NextSkip    *int      `json:"next_skip,omitempty"`
	NextCall    *NextCall `json:"next_call,omitempty"`

	tool string
	args map[string]any
	// resume, when set, writes the continuation at skip into args
	// (aggregate appends a $skip stage); the default sets "skip".
	resume func(args map[string]any, skip int)
}

// newPage starts the page of a call: args are the call's effective
// arguments (without skip); got rows were read and hasMore says whether
// more matched.
func newPage(tool string, args map[string]any, limit, skip, got int, hasMore bool) Page {
	p := Page{Pagination: Window{Limit: limit, Skip: skip, HasMore: hasMore}, tool: tool, args: args}
	if hasMore {
		p.continueAt(skip + got)
	}
	return p
}

// start starts the page of rows read with one more than limit (the extra
// one says more follow) and returns the rows of the page.
func (p *Page) start(rows []any, tool string, next map[string]any, limit, skip int) []any {
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	*p = newPage(tool, next, limit, skip, len(rows), more)
	return rows
}

// continueAt marks the page incomplete, continuing at the given skip.
func (p *Page) continueAt(skip int) {
	p.Pagination.HasMore = true
	p.Truncated = true
	p.NextSkip = &skip
	if p.tool == "" {
		return
	}
	args := maps.Clone(p.args)
	if args == nil {
		args = map[string]any{}
	}
	if p.resume != nil {
		p.resume(args, skip)
	} else {
		args["skip"] = skip
	}
	p.NextCall = &NextCall{Tool: p.tool, Arguments: args}
}

// cut records that only the first kept of the page's had rows are sent.
func (p *Page) cut(kept, had int) {
	p.RowsLeftOut = had - kept
	p.continueAt(p.Pagination.Skip + kept)
}

// pageOf keeps the first limit rows and says whether there were more.
func pageOf[R any](rows []R, limit int) ([]R, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
}

// rowSizer is a Paged result whose rows are encoded already: rowBytes is
// the size of row i of the full page.
type rowSizer interface{ rowBytes(i int) int }

// Paged is a result whose rows the response budget may cut: a type that
// embeds Page and keeps its full row list.
type Paged interface {
	// pageRows is the number of rows the full page holds.
	pageRows() int
	// keepRows keeps the first n rows of the full page (0 ≤ n ≤ pageRows)
	// and records the cut in the Page.
	keepRows(n int)
}

// Fit encodes a tool result within budget bytes. Its rows
// (json.RawMessage) are taken as they are (jsonenc.MarshalTrusted): they
// come from the governed scope's own encoding. A Paged result over the
// budget keeps the longest prefix of its rows that fits (at least the
// envelope) and says so: truncated, rows_left_out and a next_call resuming
// at the first row left out. Any other result over the budget is refused
// with too_large, naming what to narrow.
func Fit(v any, budget int) ([]byte, error) { return FitCopies(v, budget, 1) }

// FitCopies is Fit for a result whose JSON text travels copies times in
// one response (an MCP result sent both as a text block and as
// structuredContent travels twice): the budget holds every copy, so the
// encoding returned is at most budget/copies bytes, and a refusal counts
// the bytes of every copy. copies below 1 count as 1.
func FitCopies(v any, budget, copies int) ([]byte, error) {
	copies = max(copies, 1)
	b, err := jsonenc.AppendTrusted(make([]byte, 0, sizeGuess(v)), v)
	if err != nil {
		return nil, fmt.Errorf("result not serializable: %w", err)
	}
	within := func(n int) bool { return n*copies <= budget }
	if budget <= 0 || within(len(b)) {
		return b, nil
	}
	p, ok := v.(Paged)
	if !ok {
		return nil, tooLarge(len(b), copies, budget, v)
	}
	n := p.pageRows()
	fits := map[int][]byte{} // the encodings that fit, by rows kept
	fit := func(k int) bool {
		p.keepRows(k)
		b, err := jsonenc.MarshalTrusted(v)
		if err == nil && within(len(b)) {
			fits[k] = b
			return true
		}
		return false
	}
	// The longest prefix that fits (binary search; rows only add bytes).
	lo, hi := 0, n-1
	if rs, ok := p.(rowSizer); ok && fit(0) {
		// Rows already encoded: guess from their sizes (an empty page's
		// envelope, then each row and its comma) and check the guess and
		// the next, which usually settles it in two encodings.
		size, k := len(fits[0]), 0
		for k < n-1 && within(size+rs.rowBytes(k)+1) {
			size += rs.rowBytes(k) + 1
			k++
		}
		switch {
		case !fit(k):
			hi = k - 1
		case k == n-1 || !fit(k+1):
			lo, hi = k, k
		default:
			lo = k + 1
		}
	}
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if fit(mid) {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	p.keepRows(lo)
	out, ok := fits[lo]
	if !ok && fit(lo) {
		out, ok = fits[lo], true
	}
	if !ok || (lo == 0 && n > 0) { // not even one row: a next_call would not advance
		p.keepRows(n)
		return nil, tooLarge(len(b), copies, budget, v)
	}
	return out, nil
}

// sizeGuess is how many bytes v's encoding likely takes: for rows already
// encoded, theirs and their commas, plus room for the envelope around
// them; for anything else, the room for an envelope only.
func sizeGuess(v any) int {
	const envelope = 1024
	p, paged := v.(Paged)
	rs, sized := v.(rowSizer)
	if !paged || !sized {
		return envelope
	}
	n := envelope
	for i := range p.pageRows() {
		n += rs.rowBytes(i) + 1
	}
	return n
}

// tooLarge refuses a result over the budget; for rows it names the
// heaviest fields (names and sizes, never values) and a keys list without
// the heaviest. size is the bytes of one copy of the result; result_bytes
// counts every copy, and copies is said when there is more than one.
func tooLarge(size, copies, budget int, v any) error {
	d := map[string]any{"result_bytes": size * copies, "budget_bytes": budget}
	msg := fmt.Sprintf("the result is %d bytes, over the %d-byte response budget (about %d tokens)", size, budget, budget/BytesPerToken)
	if copies > 1 {
		d["copies"] = copies
		msg = fmt.Sprintf("the result is %d bytes, sent %d times (as text and as structured content): %d bytes, over the %d-byte response budget (about %d tokens)", size, copies, size*copies, budget, budget/BytesPerToken)
	}
	if _, paged := v.(Paged); paged {
		msg += ", and even its first row does not fit"
	}
	msg += "."
	if r, ok := v.(rowLister); ok {
		if rows := r.objectRows(); len(rows) > 0 {
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
			msg += fmt.Sprintf(" Ask for fewer fields, e.g. keys %q without %s.", strings.Join(keep, ","), sizes[0].name)
		}
	}
	msg += " Narrowing helps too: fewer ids or rows, a stricter where."
	return &Error{Code: CodeTooLarge, Message: msg, Details: d}
}

// rowLister is a result that holds objects, for the too_large diagnostic.
type rowLister interface {
	objectRows() []map[string]any
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

// LargeValueBytes is the size above which a field value is elided from the
// rows of a listing unless the call names the field in keys.
const LargeValueBytes = 2048

// Elided stands in a row for a field value over LargeValueBytes.
type Elided struct {
	ElidedBytes int `json:"elided_bytes"`
}

// elideLarge replaces, in place, every value over LargeValueBytes of a
// field not in asked by its size, and returns the fields it elided.
func elideLarge[R ~map[string]any](rows []R, asked []string) []string {
	var out []string
	for _, r := range rows {
		for k, v := range r {
			if containsStr(asked, k) {
				continue
			}
			var n int
			switch x := v.(type) {
			case string:
				if len(x) <= LargeValueBytes {
					continue
				}
				n = len(x) + 2
			case nil, bool, float64, int, int64:
				continue
			default:
				if m, ok := v.(map[string]any); ok && m["__type"] == "Object" {
					continue // an included object: its own fields count
				}
				b, _ := jsonenc.Marshal(v)
				if len(b) <= LargeValueBytes {
					continue
				}
				n = len(b)
			}
			r[k] = Elided{ElidedBytes: n}
			if !containsStr(out, k) {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}
