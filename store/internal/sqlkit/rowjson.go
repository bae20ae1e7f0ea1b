package sqlkit

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strconv"

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
	// order lists the indexes in fields of the fields written, sorted by
	// name (the key order of an encoded object); key holds each one's
	// quoted name and colon.
	order []int
	key   [][]byte
	// vals holds one row's REST values by field index; has marks the
	// ones the row holds.
	vals []any
	has  []bool
	// kind[i] says how field i is written: through jsonenc from its REST
	// value, or (a String, Number, Boolean, Pointer or Date, the ACL)
	// straight from what its columns hold, the bytes jsonenc gives for
	// its REST value (parse.Denormalize's), without building that value
	// (boxing a string or a number, formatting a date, a Pointer's or a
	// Date's map). For such a field of the row, direct[i] is set and
	// norm[i] or perms[i] (the ACL) hold its value.
	kind   []fieldKind
	prefix [][]byte // a Pointer field's JSON text before its objectId
	direct []bool
	norm   []parse.Normalized
	perms  [][2][]string
	hooks  rowHooks
	// num is the Number being written: jsonenc is handed its address,
	// which (unlike a float64) goes into an interface without allocating.
	num float64
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

// pointerPrefix is the JSON text of a Pointer of class before its
// objectId, keys in jsonenc's order.
func pointerPrefix(class string) []byte {
	b := jsonenc.AppendString([]byte(`{"__type":"Pointer","className":`), class)
	return append(b, `,"objectId":`...)
}

// NewRowWriter returns the writer of rows of fields of sch (as FindSQL
// returned them) keeping the fields keep admits (nil: every field).
func NewRowWriter(c ColumnCodec, sch parse.Schema, fields []string, keep func(field string) bool) *RowWriter {
	w := &RowWriter{c: c, sch: sch, fields: fields, vals: make([]any, len(fields)), has: make([]bool, len(fields)), key: make([][]byte, len(fields))}
	names := make([]string, len(fields))
	// Every key in one buffer, sliced once it is complete.
	var keys []byte
	ends := make([]int, len(fields))
	for i, name := range fields {
		if name == query.ScoreKey {
			name = query.ScoreField // the rank's name in a row
		}
		names[i] = name
		if keep == nil || keep(name) {
			w.order = append(w.order, i)
		}
		keys = append(jsonenc.AppendString(keys, name), ':')
		ends[i] = len(keys)
	}
	start := 0
	for i, end := range ends {
		w.key[i] = keys[start:end:end]
		start = end
	}
	sort.Slice(w.order, func(a, b int) bool { return names[w.order[a]] < names[w.order[b]] })
	n := len(fields)
	w.kind, w.prefix, w.direct, w.norm, w.perms = make([]fieldKind, n), make([][]byte, n), make([]bool, n), make([]parse.Normalized, n), make([][2][]string, n)
	for i, name := range fields {
		switch f := sch.Fields[name]; {
		case name == parse.FieldACL:
			w.kind[i] = directACL
		case f.Type == parse.TypePointer:
			w.kind[i], w.prefix[i] = directPointer, pointerPrefix(f.TargetClass)
		case f.Type == parse.TypeDate && (name == parse.FieldCreatedAt || name == parse.FieldUpdatedAt):
			w.kind[i] = directStamp
		case f.Type == parse.TypeDate:
			w.kind[i] = directDate
		case f.Type == parse.TypeString:
			w.kind[i] = directString
		case f.Type == parse.TypeNumber:
			w.kind[i] = directNumber
		case f.Type == parse.TypeBoolean:
			w.kind[i] = directBool
		}
	}
	w.hooks = rowHooks{
		typed: func(i int, n parse.Normalized) bool {
			switch k := w.kind[i]; {
			case k == viaREST, k == directACL, n.Null:
				return false
			case k == directNumber && (math.IsNaN(n.Number) || math.IsInf(n.Number, 0)):
				return false // jsonenc's error, from the REST value
			}
			w.norm[i], w.has[i], w.direct[i] = n, true, true
			return true
		},
		acl: func(i int, r, wr []string) bool {
			w.perms[i], w.has[i], w.direct[i] = [2][]string{r, wr}, true, true
			return true
		},
	}
	return w
}

// Append appends the JSON object of one row to dst.
func (w *RowWriter) Append(dst []byte, vals []any) ([]byte, error) {
	clear(w.has)
	clear(w.direct)
	err := readRow(w.c, w.sch, w.fields, vals, func(i int, _ string, v any) { w.vals[i], w.has[i] = v, true }, w.hooks)
	if err != nil {
		return dst, err
	}
	dst = append(dst, '{')
	first := true
	for _, i := range w.order {
		if !w.has[i] {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, w.key[i]...)
		if w.direct[i] {
			if dst, err = w.appendDirect(dst, i); err != nil {
				return dst, err
			}
			continue
		}
		if dst, err = jsonenc.Append(dst, w.vals[i]); err != nil {
			return dst, err
		}
	}
	clear(w.vals)
	return append(dst, '}'), nil
}

// appendDirect writes field i of the row from what its columns hold.
func (w *RowWriter) appendDirect(dst []byte, i int) ([]byte, error) {
	n := &w.norm[i]
	switch w.kind[i] {
	case directACL:
		return appendACL(dst, w.perms[i][0], w.perms[i][1]), nil
	case directString:
		return jsonenc.AppendString(dst, n.String), nil
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
	dst = append(dst, w.prefix[i]...)
	dst = jsonenc.AppendString(dst, n.String)
	return append(dst, '}'), nil
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
	var buf []byte
	var ends []int
	err = traced(ctx, k.DB, sqlText, args, func(vals []any) error {
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
