package sqlkit

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// RowWriter writes rows read by FindSQL as JSON text: for each row, the
// bytes jsonenc gives for the object DecodeRow builds (keys sorted),
// without the fields keep refuses, and without building that object.
type RowWriter struct {
	c      ColumnCodec
	sch    parse.Schema
	fields []string
	// f holds, by index in fields, how each field is written and the
	// current row's value of it.
	f []rowField
	// order lists the indexes in fields of the fields written, sorted by
	// name (the key order of an encoded object).
	order []int
	// hooks and set are readRow's callbacks, bound once (a method value
	// made per row would be allocated per row).
	hooks rowHooks
	set   func(i int, name string, v any)
	// num is the Number being written: jsonenc is handed its address,
	// which (unlike a float64) goes into an interface without allocating.
	num float64
	// text holds every field's key and Pointer prefix.
	text []byte
}

// rowField is one field of RowWriter's rows.
type rowField struct {
	name string // its key in a row
	key  []byte // name quoted, and a colon
	// kind says how the field is written: through jsonenc from its REST
	// value, or (a String, Number, Boolean, Pointer or Date, the ACL)
	// straight from what its columns hold, the bytes jsonenc gives for
	// its REST value (parse.Denormalize's), without building that value
	// (boxing a string or a number, formatting a date, a Pointer's or a
	// Date's map).
	kind   fieldKind
	prefix []byte // a Pointer's JSON text before its objectId
	// Where key and prefix end in the writer's text, while it is built.
	keyEnd, prefixEnd int
	// The current row: has is set when the row holds the field; its value
	// is val (REST), or, with direct set, norm or perms (the ACL).
	has, direct bool
	val         any
	norm        parse.Normalized
	perms       [2][]string
	// raw, when not nil, is a String's or a Pointer's objectId as the
	// database sent it (a *RawText's bytes), written instead of norm.
	raw []byte
}

// fieldKind is how RowWriter writes a field.
type fieldKind uint8

const (
	viaREST fieldKind = iota
	directString
	directNumber
	directBool
	directPointer
	directDate  // {"__type":"Date","iso":…}
	directStamp // createdAt and updatedAt: the bare ISO string
	directACL
)

// appendPointerPrefix appends the JSON text of a Pointer of class before
// its objectId, keys in jsonenc's order.
func appendPointerPrefix(dst []byte, class string) []byte {
	dst = jsonenc.AppendString(append(dst, `{"__type":"Pointer","className":`...), class)
	return append(dst, `,"objectId":`...)
}

// rowWriters holds RowWriters between pages: a writer's per-field state
// and its keys' text are reused, not allocated for each page.
var rowWriters = sync.Pool{New: func() any { return new(RowWriter) }}

// Writers whose buffers grew past these bounds are not kept for reuse.
const (
	maxPooledFields = 256
	maxPooledText   = 16 << 10
)

// NewRowWriter returns the writer of rows of fields of sch (as FindSQL
// returned them) keeping the fields keep admits (nil: every field). The
// caller hands it back with Release once its rows are written.
func NewRowWriter(c ColumnCodec, sch parse.Schema, fields []string, keep func(field string) bool) *RowWriter {
	w := rowWriters.Get().(*RowWriter)
	w.c, w.sch, w.fields = c, sch, fields
	w.f = slices.Grow(w.f[:0], len(fields))[:len(fields)]
	w.order = w.order[:0]
	// Every key and Pointer prefix in one buffer, sliced once it is
	// complete (appending may move it).
	text := w.text[:0]
	for i, name := range fields {
		rf := &w.f[i] // zero: a new slice's, or cleared by Release
		var target string
		switch f := sch.Fields[name]; {
		case name == query.ScoreKey:
			name = query.ScoreField // the rank's name in a row
		case name == parse.FieldACL:
			rf.kind = directACL
		case f.Type == parse.TypePointer:
			rf.kind, target = directPointer, f.TargetClass
		case f.Type == parse.TypeDate && (name == parse.FieldCreatedAt || name == parse.FieldUpdatedAt):
			rf.kind = directStamp
		case f.Type == parse.TypeDate:
			rf.kind = directDate
		case f.Type == parse.TypeString:
			rf.kind = directString
		case f.Type == parse.TypeNumber:
			rf.kind = directNumber
		case f.Type == parse.TypeBoolean:
			rf.kind = directBool
		}
		rf.name = name
		if keep == nil || keep(name) {
			w.order = append(w.order, i)
		}
		text = append(jsonenc.AppendString(text, name), ':')
		rf.keyEnd = len(text)
		if rf.kind == directPointer {
			text = appendPointerPrefix(text, target)
		}
		rf.prefixEnd = len(text)
	}
	start := 0
	for i := range w.f {
		rf := &w.f[i]
		rf.key = text[start:rf.keyEnd:rf.keyEnd]
		if rf.prefixEnd > rf.keyEnd {
			rf.prefix = text[rf.keyEnd:rf.prefixEnd:rf.prefixEnd]
		}
		start = rf.prefixEnd
	}
	w.text = text
	slices.SortFunc(w.order, func(a, b int) int { return strings.Compare(w.f[a].name, w.f[b].name) })
	if w.set == nil { // bound once per writer, which the pool keeps
		w.set = w.setREST
		w.hooks = rowHooks{typed: w.setTyped, acl: w.setACL, text: w.setText}
	}
	return w
}

// Release hands w back for another page. Neither w nor anything it
// returned before (its keys) may be used after; the rows Append wrote are
// the caller's own.
func (w *RowWriter) Release() {
	clear(w.f[:cap(w.f)]) // for the next page, and the last row's values (pgx's bytes among them) let go
	w.c, w.sch, w.fields = ColumnCodec{}, parse.Schema{}, nil
	if cap(w.f) > maxPooledFields || cap(w.text) > maxPooledText {
		return
	}
	rowWriters.Put(w)
}

// setREST takes field i's REST value.
func (w *RowWriter) setREST(i int, _ string, v any) { w.f[i].val, w.f[i].has = v, true }

// setTyped takes field i's normalized value when it is written from it.
func (w *RowWriter) setTyped(i int, n parse.Normalized) bool {
	rf := &w.f[i]
	switch k := rf.kind; {
	case k == viaREST, k == directACL, n.Null:
		return false
	case k == directNumber && (math.IsNaN(n.Number) || math.IsInf(n.Number, 0)):
		return false // jsonenc's error, from the REST value
	}
	rf.norm, rf.has, rf.direct = n, true, true
	return true
}

// setText takes field i's text as the database sent it when the field is
// written from it: a String, or a Pointer's objectId.
func (w *RowWriter) setText(i int, b []byte) bool {
	rf := &w.f[i]
	if rf.kind != directString && rf.kind != directPointer {
		return false
	}
	// norm is cleared: an empty text may come as nil bytes, which
	// appendDirect writes from norm.
	rf.raw, rf.norm, rf.has, rf.direct = b, parse.Normalized{}, true, true
	return true
}

// setACL takes the ACL's entries.
func (w *RowWriter) setACL(i int, r, wr []string) bool {
	rf := &w.f[i]
	rf.perms, rf.has, rf.direct = [2][]string{r, wr}, true, true
	return true
}

// Append appends the JSON object of one row to dst.
func (w *RowWriter) Append(dst []byte, vals []any) ([]byte, error) {
	for i := range w.f {
		w.f[i].has, w.f[i].direct, w.f[i].val, w.f[i].raw = false, false, nil, nil
	}
	err := readRow(w.c, w.sch, w.fields, vals, w.set, w.hooks)
	if err != nil {
		return dst, err
	}
	dst = append(dst, '{')
	first := true
	for _, i := range w.order {
		rf := &w.f[i]
		if !rf.has {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, rf.key...)
		if rf.direct {
			if dst, err = w.appendDirect(dst, rf); err != nil {
				return dst, err
			}
			continue
		}
		if dst, err = jsonenc.Append(dst, rf.val); err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

// appendDirect writes field rf of the row from what its columns hold.
func (w *RowWriter) appendDirect(dst []byte, rf *rowField) ([]byte, error) {
	n := &rf.norm
	switch rf.kind {
	case directACL:
		return appendACL(dst, rf.perms[0], rf.perms[1]), nil
	case directString:
		return rf.appendText(dst), nil
	case directNumber:
		w.num = n.Number
		return jsonenc.Append(dst, &w.num)
	case directBool:
		return strconv.AppendBool(dst, n.Bool), nil
	case directStamp: // "…", as parse.FormatDate
		dst = append(dst, '"')
		dst = n.Time.UTC().AppendFormat(dst, parse.DateLayout)
		return append(dst, '"'), nil
	case directDate: // {"__type":"Date","iso":"…"}
		dst = append(dst, `{"__type":"Date","iso":"`...)
		dst = n.Time.UTC().AppendFormat(dst, parse.DateLayout)
		return append(dst, '"', '}'), nil
	}
	dst = append(dst, rf.prefix...)
	return append(rf.appendText(dst), '}'), nil
}

// appendText writes a String's value or a Pointer's objectId: the bytes
// the database sent when the row has them (setText), else the normalized
// string.
func (rf *rowField) appendText(dst []byte) []byte {
	if rf.raw != nil {
		return jsonenc.AppendQuoted(dst, rf.raw)
	}
	return jsonenc.AppendString(dst, rf.norm.String)
}

// appendACL writes the ACL of a row's _rperm and _wperm entries as
// jsonenc writes parse.ACLFromPerms(r, w).Encode(): entries sorted, each
// {"read":true}, {"write":true} or both.
func appendACL(dst []byte, r, w []string) []byte {
	entries := make([]string, 0, len(r)+len(w))
	entries = append(append(entries, r...), w...)
	slices.Sort(entries)
	entries = slices.Compact(entries)
	dst = append(dst, '{')
	for j, e := range entries {
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = jsonenc.AppendString(dst, e)
		read, write := slices.Contains(r, e), slices.Contains(w, e)
		switch {
		case read && write:
			dst = append(dst, `:{"read":true,"write":true}`...)
		case read:
			dst = append(dst, `:{"read":true}`...)
		default:
			dst = append(dst, `:{"write":true}`...)
		}
	}
	return append(dst, '}')
}

// presizeRows bounds the pages whose buffer FindJSON sizes after the
// first row.
const presizeRows = 1000

// FindJSON is store.JSONFinder's FindJSON: Find's rows as JSON text, one
// buffer for the page.
func (k *Kit[T]) FindJSON(ctx context.Context, q *query.Query, keep func(field string) bool) ([]json.RawMessage, error) {
	if err := query.CheckScore(q); err != nil {
		return nil, err
	}
	sch, err := k.Schemas.Shared(ctx, q.Class)
	if err != nil {
		return nil, err
	}
	sqlText, args, fields := k.FindSQL(sch, q)
	w := NewRowWriter(k.Codec, sch, fields, keep)
	defer w.Release()
	var buf []byte
	var ends []int
	err = traced(ctx, rawTextQuery(k.DB), sqlText, args, func(vals []any) error {
		var err error
		if buf, err = w.Append(buf, vals); err != nil {
			return err
		}
		ends = append(ends, len(buf))
		if len(ends) == 1 && q.Limit > 1 && q.Limit <= presizeRows {
			// Room for the page at the first row's size (and an eighth
			// more) instead of doubling the buffer as it fills.
			buf = slices.Grow(buf, (q.Limit-1)*len(buf)*9/8)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	rows := make([]json.RawMessage, len(ends))
	start := 0
	for i, end := range ends {
		rows[i] = json.RawMessage(buf[start:end:end])
		start = end
	}
	return rows, nil
}
