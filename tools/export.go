package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Export limits.
const (
	DefaultExportLimit = 1000
	MaxExportLimit     = 10_000
	// MaxExportColumns bounds an explicit column list.
	MaxExportColumns = 100
	// MaxExportBytes bounds the rendered output. An export that would grow
	// past it stops at the last whole row that fits and reports truncated
	// with next_skip, as when the row limit is reached.
	MaxExportBytes = 4 << 20
)

// The export formats.
const (
	ExportCSV      = "csv"
	ExportMarkdown = "markdown"
	ExportText     = "text"
)

func exportTools() []*Tool {
	return []*Tool{{
		Name:        "export_data",
		Category:    CategoryExport,
		Title:       "Export",
		Description: "Render objects (or pipeline rows) as a table for the user." + seeDocs,
		Permission:  agent.Readonly,
		Timeout:     30 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[exportArgs](map[string]*jsonschema.Schema{
			"where":    whereRef,
			"order":    orderRef,
			"columns":  columnsSchema,
			"keys":     listSchema("field paths (not with columns)"),
			"include":  includeSchema,
			"format":   enumSchema("", ExportCSV, ExportCSV, ExportMarkdown, ExportText),
			"limit":    intSchema("", 1, MaxExportLimit, DefaultExportLimit),
			"skip":     skipSchema,
			"pipeline": {Type: "array", Items: &jsonschema.Schema{Type: "object"}, Description: "see aggregate"},
		}),
		Handler: exportData,
	}}
}

var columnsSchema = &jsonschema.Schema{
	Description: "paths or {field, as}",
	Examples:    []any{[]any{"title", map[string]any{"field": "project.name", "as": "Project"}}},
	AnyOf: []*jsonschema.Schema{
		{Type: "array", Items: &jsonschema.Schema{Types: []string{"string", "object"}}},
		{Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}},
		{Type: "string"},
	},
}

type exportArgs struct {
	ClassName string          `json:"class_name"`
	Where     Where           `json:"where,omitempty"`
	Order     string          `json:"order,omitempty" jsonschema:"comma-separated sort keys, - for descending, e.g. -createdAt,title"`
	Columns   json.RawMessage `json:"columns,omitempty"`
	Keys      StringList      `json:"keys,omitempty"`
	Include   StringList      `json:"include,omitempty"`
	Format    string          `json:"format,omitempty"`
	Limit     *int            `json:"limit,omitempty"`
	// Pipeline exports an aggregation's rows instead of the class's
	// objects (as aggregate runs it); columns and keys then name its
	// output fields.
	Pipeline Stages `json:"pipeline,omitempty"`
	Skip     int    `json:"skip,omitempty"`
}

// columnSpec is one requested column: a field path and its header.
type columnSpec struct {
	field, header string
}

// exportColumn is a column resolved against the schema.
type exportColumn struct {
	header  string
	path    []string // field, then segments into an Object or an included object
	include string   // the pointer path the column reads through ("project.owner"), if any
	numeric bool     // a Number field: right-aligned in text tables
}

func exportData(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[exportArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	format, err := exportFormat(args.Format)
	if err != nil {
		return nil, err
	}
	if len(args.Pipeline) > 0 {
		return exportPipeline(ctx, c, sch, args, format)
	}
	spec, err := parseFind(ctx, c.Scope, sch, args.Where, args.Order, args.Limit, DefaultExportLimit, MaxExportLimit, args.Skip)
	if err != nil {
		return nil, err
	}
	where, order, limit := spec.where, spec.order, spec.limit
	// include is checked first: without columns it decides the columns.
	// Its deeper segments are checked by the scope when it includes them.
	_, _, included, err := projection(sch, nil, args.Include)
	if err != nil {
		return nil, err
	}
	specs, argName, err := exportSpecs(args)
	if err != nil {
		return nil, err
	}
	r := &columnResolver{ctx: ctx, scope: c.Scope, sch: sch, schemas: map[string]*parse.Schema{}}
	var cols []exportColumn
	if specs == nil {
		cols = r.defaults(sch, "", included)
	} else {
		for i, s := range specs {
			col, err := r.resolve(s, fmt.Sprintf("%s[%d]", argName, i), argName)
			if err != nil {
				return nil, err
			}
			cols = append(cols, col)
		}
	}
	// Fetch only the fields the columns read; include what was asked for
	// and every pointer path a column reaches through.
	include := included
	var keys []string
	for _, col := range cols {
		if col.include != "" {
			keys = append(keys, col.path[0]+"."+col.path[1]) // projects the first included object
			if !containsStr(include, col.include) {
				include = append(include, col.include)
			}
			continue
		}
		keys = append(keys, col.path[0])
	}
	top, sub, include, err := projection(sch, keys, include)
	if err != nil {
		return nil, err
	}
	q := &query.Query{Class: sch.ClassName, Where: where, Order: order, Limit: limit + 1, Skip: args.Skip, Keys: top}
	if err := guardFullScan(ctx, c, q); err != nil {
		return nil, err
	}
	rows, err := c.Scope.Find(ctx, q)
	if err != nil {
		return nil, err
	}
	hasMore := len(rows) > limit
	if hasMore {
		rows = rows[:limit]
	}
	if err := c.Scope.Include(ctx, sch, rows, include, sub); err != nil {
		return nil, err
	}

	next := map[string]any{"class_name": sch.ClassName}
	if spec.whereObj != nil {
		next["where"] = spec.whereObj
	}
	if args.Order != "" {
		next["order"] = args.Order
	}
	if len(args.Include) > 0 {
		next["include"] = []string(args.Include)
	}
	return renderExport(sch.ClassName, format, cols, rows, hasMore, limit, args, next)
}

// renderExport renders rows into the columns and pages the result; next
// holds the arguments of the next page besides format, columns, keys,
// limit and skip.
func renderExport(class, format string, cols []exportColumn, rows []parse.Object, hasMore bool, limit int, args exportArgs, next map[string]any) (*ExportResult, error) {
	t := &textTable{headers: make([]string, len(cols)), right: make([]bool, len(cols))}
	for i, col := range cols {
		t.headers[i] = col.header
		t.right[i] = col.numeric
	}
	for _, row := range rows {
		cells := make([]string, len(cols))
		for i, col := range cols {
			cells[i] = cellText(lookup(row, col.path))
		}
		t.rows = append(t.rows, cells)
	}
	n := t.fit(format, MaxExportBytes)
	if n == 0 && len(t.rows) > 0 {
		hint := ""
		if format == ExportText {
			hint = ", or use csv (a text table repeats its widest cell's width on every line)"
		}
		return nil, &Error{Code: CodeTooLarge, Message: fmt.Sprintf("a single row renders to more than %d bytes of %s; export fewer or narrower columns%s", MaxExportBytes, format, hint), Details: map[string]any{"max_bytes": MaxExportBytes}}
	}
	next["format"], next["limit"] = format, limit
	if len(bytes.TrimSpace(args.Columns)) > 0 {
		next["columns"] = args.Columns
	}
	if args.Keys != nil {
		next["keys"] = []string(args.Keys)
	}
	res := &ExportResult{ClassName: class, Format: format, Headers: t.headers, table: t, all: t.rows[:n]}
	res.Page = newPage("export_data", next, limit, args.Skip, n, hasMore || n < len(t.rows))
	res.keep(n)
	return res, nil
}

// exportPipeline exports the rows of an aggregation pipeline run on the
// class (governed as aggregate runs it): the columns are its output fields,
// or the columns/keys asked for, paths into its rows.
func exportPipeline(ctx context.Context, c *Call, sch parse.Schema, args exportArgs, format string) (any, error) {
	for name, set := range map[string]bool{"where": len(bytes.TrimSpace(args.Where)) > 0 && string(bytes.TrimSpace(args.Where)) != "null", "order": args.Order != "", "include": len(args.Include) > 0} {
		if set {
			return nil, argErr(name, "does not combine with pipeline (use $match, $sort, $lookup stages)")
		}
	}
	limit, err := intArg("limit", args.Limit, DefaultExportLimit, 1, MaxExportLimit)
	if err != nil {
		return nil, err
	}
	if args.Skip < 0 || args.Skip > MaxSkip {
		return nil, argErr("skip", "must be between 0 and %d", MaxSkip)
	}
	raw, err := args.Pipeline.raw()
	if err != nil {
		return nil, err
	}
	// The page: the caller's stages, then $skip and one row past the limit.
	paged := raw
	if args.Skip > 0 {
		paged = withStage(paged, fmt.Sprintf(`{"$skip":%d}`, args.Skip))
	}
	paged = withStage(paged, fmt.Sprintf(`{"$limit":%d}`, limit+1))
	p, err := query.ParsePipelineJSON(sch, c.Scope.Parser(ctx).Resolve, paged)
	if err != nil {
		return nil, err
	}
	out, err := c.Scope.Aggregate(ctx, p)
	if err != nil {
		return nil, err
	}
	hasMore := len(out) > limit
	if hasMore {
		out = out[:limit]
	}
	specs, argName, err := exportSpecs(args)
	if err != nil {
		return nil, err
	}
	var cols []exportColumn
	if specs == nil {
		for _, f := range p.Output {
			cols = append(cols, exportColumn{header: f.Name, path: []string{f.Name}, numeric: f.Type.Kind == parse.TypeNumber})
		}
	} else {
		names := map[string]query.Field{}
		for _, f := range p.Output {
			names[f.Name] = f
		}
		for i, s := range specs {
			path := strings.Split(s.field, ".")
			f, ok := names[path[0]]
			if !ok {
				return nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("%s[%d] %q: the pipeline's rows have no field %q", argName, i, s.field, path[0]), Details: map[string]any{"argument": argName, "column": s.field}}
			}
			cols = append(cols, exportColumn{header: s.header, path: path, numeric: len(path) == 1 && f.Type.Kind == parse.TypeNumber})
		}
	}
	rows := make([]parse.Object, len(out))
	for i, r := range out {
		rows[i] = r
	}
	next := map[string]any{"class_name": sch.ClassName, "pipeline": json.RawMessage(raw)}
	return renderExport(sch.ClassName, format, cols, rows, hasMore, limit, args, next)
}

// withStage appends a stage (JSON text) to a raw pipeline, keeping its
// text and so its $sort key order.
func withStage(raw []byte, stage string) []byte {
	body := bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(raw), []byte("]")))
	if len(bytes.TrimSpace(bytes.TrimPrefix(body, []byte("[")))) == 0 {
		return []byte("[" + stage + "]")
	}
	return []byte(string(body) + "," + stage + "]")
}

// ExportResult is the answer of export_data: the rendered rows.
type ExportResult struct {
	ClassName string   `json:"class_name"`
	Format    string   `json:"format"`
	Headers   []string `json:"headers"`
	RowCount  int      `json:"row_count"`
	Output    string   `json:"output"`
	Page
	table *textTable
	all   [][]string
}

func (r *ExportResult) keep(n int) {
	r.table.rows = r.all[:n]
	r.RowCount = n
	r.Output = r.table.render(r.Format)
}

func (r *ExportResult) pageRows() int { return len(r.all) }

func (r *ExportResult) keepRows(n int) {
	r.keep(n)
	r.cut(n, len(r.all))
}

// exportFormat canonicalises the format argument ("md" and "table" are
// accepted as the names models often use).
func exportFormat(f string) (string, error) {
	if strings.TrimSpace(f) == "" {
		return ExportCSV, nil
	}
	if m, ok := enumMember(exportFormats, f); ok {
		return m, nil
	}
	return "", &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument \"format\" must be csv, markdown or text, got %q", f), Details: map[string]any{"argument": "format"}}
}

// exportFormats is the closed set of the format argument.
var exportFormats = []string{ExportCSV, ExportMarkdown, ExportText}

// exportSpecs returns the requested columns (nil: the defaults) and the
// argument that named them.
func exportSpecs(args exportArgs) ([]columnSpec, string, error) {
	raw := bytes.TrimSpace(args.Columns)
	hasColumns := len(raw) > 0 && string(raw) != "null"
	if hasColumns && args.Keys != nil {
		return nil, "", &Error{Code: CodeInvalidArgument, Message: "give either \"columns\" or \"keys\", not both", Details: map[string]any{"argument": "columns"}}
	}
	var specs []columnSpec
	argName := "columns"
	switch {
	case hasColumns:
		var err error
		if specs, err = parseColumns(raw); err != nil {
			return nil, "", err
		}
	case args.Keys != nil:
		argName = "keys"
		specs = []columnSpec{}
		for _, k := range args.Keys {
			k = strings.TrimSpace(k)
			if k != "" {
				specs = append(specs, columnSpec{field: k, header: k})
			}
		}
	default:
		return nil, argName, nil
	}
	if len(specs) == 0 {
		return nil, "", &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must name at least one column (omit it for every field)", argName), Details: map[string]any{"argument": argName}}
	}
	if len(specs) > MaxExportColumns {
		return nil, "", &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q names %d columns; at most %d", argName, len(specs), MaxExportColumns), Details: map[string]any{"argument": argName, "max": MaxExportColumns}}
	}
	return specs, argName, nil
}

func columnsError(at, format string, args ...any) error {
	return &Error{Code: CodeInvalidArgument, Message: at + ": " + fmt.Sprintf(format, args...), Details: map[string]any{"argument": "columns"}}
}

// parseColumns decodes the columns argument: an array whose entries are a
// path string, {"field": path, "as": header} or {path: header}; one object
// {path: header, …}; or a comma-separated string of paths.
func parseColumns(raw []byte) ([]columnSpec, error) {
	if raw[0] == '"' {
		var l StringList
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, columnsError("columns", "not a valid string")
		}
		specs := make([]columnSpec, 0, len(l))
		for _, f := range l {
			specs = append(specs, columnSpec{field: f, header: f})
		}
		return specs, nil
	}
	if raw[0] == '{' {
		return parseColumnMap(raw)
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, columnsError("columns", `must be an array of columns, e.g. ["title", {"field": "project.name", "as": "Project"}]`)
	}
	specs := make([]columnSpec, 0, len(items))
	for i, item := range items {
		at := fmt.Sprintf("columns[%d]", i)
		var v any
		if err := json.Unmarshal(item, &v); err != nil {
			return nil, columnsError(at, "not valid JSON")
		}
		var s columnSpec
		switch x := v.(type) {
		case string:
			s = columnSpec{field: x, header: x}
		case map[string]any:
			if _, explicit := x["field"]; explicit {
				field, ok := x["field"].(string)
				if !ok {
					return nil, columnsError(at, `"field" must be a string path`)
				}
				s = columnSpec{field: field, header: field}
				for k, hv := range x {
					switch k {
					case "field":
					case "as":
						h, ok := hv.(string)
						if !ok {
							return nil, columnsError(at, `"as" must be a string header`)
						}
						if h != "" {
							s.header = h
						}
					default:
						return nil, columnsError(at, `unknown key %q (use "field" and "as")`, k)
					}
				}
				break
			}
			if len(x) != 1 {
				return nil, columnsError(at, `an object column is {"field": "<path>", "as": "<header>"} or a single {"<path>": "<header>"}; got %d keys`, len(x))
			}
			for field, hv := range x {
				h, ok := hv.(string)
				if !ok {
					return nil, columnsError(at, "the header of %q must be a string", field)
				}
				s = columnSpec{field: field, header: field}
				if h != "" {
					s.header = h
				}
			}
		default:
			return nil, columnsError(at, `must be a field path or {"field": "<path>", "as": "<header>"}, got %s`, jsonKindOf(v))
		}
		s.field = strings.TrimSpace(s.field)
		if s.field == "" {
			return nil, columnsError(at, "empty field path")
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// parseColumnMap decodes the object form {"title": "Title", "project.name":
// "Project"}: one column per key, in the order written.
func parseColumnMap(raw []byte) ([]columnSpec, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, columnsError("columns", "not valid JSON")
	}
	var specs []columnSpec
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, columnsError("columns", "not valid JSON")
		}
		field, _ := tok.(string)
		var hv any
		if err := dec.Decode(&hv); err != nil {
			return nil, columnsError("columns", "not valid JSON")
		}
		h, ok := hv.(string)
		if !ok {
			return nil, columnsError(fmt.Sprintf("columns.%s", field), "the header must be a string, got %s", jsonKindOf(hv))
		}
		s := columnSpec{field: strings.TrimSpace(field), header: field}
		if h != "" {
			s.header = h
		}
		if s.field == "" {
			return nil, columnsError("columns", "empty field path")
		}
		specs = append(specs, s)
	}
	return specs, nil
}

func jsonKindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	}
	return "an unexpected value"
}

// columnResolver checks columns against the visible schemas of the class
// and of the classes its pointers reach.
type columnResolver struct {
	ctx     context.Context
	scope   *agent.Scope
	sch     parse.Schema
	schemas map[string]*parse.Schema // class → visible schema (nil: not accessible)
}

func (r *columnResolver) schemaOf(class string) *parse.Schema {
	if sch, ok := r.schemas[class]; ok {
		return sch
	}
	var out *parse.Schema
	if sch, err := r.scope.Schema(r.ctx, class); err == nil {
		out = &sch
	}
	r.schemas[class] = out
	return out
}

// exportable reports whether a field gets a default column.
func exportable(name string, f parse.Field) bool {
	return name != parse.FieldACL && f.Type != parse.TypeRelation
}

// defaults lists every exportable field of sch in schema order; an
// included pointer is followed by the fields of its target (without the
// system fields: the pointer's own column is the objectId), recursively
// for the include paths that go deeper.
func (r *columnResolver) defaults(sch parse.Schema, prefix string, include []string) []exportColumn {
	var cols []exportColumn
	for _, name := range sch.FieldNames() {
		f, ok := sch.Fields[name]
		if !ok || !exportable(name, f) {
			continue
		}
		if prefix != "" && (name == parse.FieldObjectID || name == parse.FieldCreatedAt || name == parse.FieldUpdatedAt) {
			continue
		}
		path := prefix + name
		cols = append(cols, exportColumn{header: path, path: strings.Split(path, "."), include: strings.TrimSuffix(prefix, "."), numeric: f.Type == parse.TypeNumber})
		if f.Type != parse.TypePointer {
			continue
		}
		var deeper []string
		included := false
		for _, inc := range include {
			head, tail, dotted := strings.Cut(inc, ".")
			if head != name {
				continue
			}
			included = true
			if dotted {
				deeper = append(deeper, tail)
			}
		}
		if !included {
			continue
		}
		if ts := r.schemaOf(f.TargetClass); ts != nil && strings.Count(path, ".") < agent.MaxIncludeDepth {
			cols = append(cols, r.defaults(*ts, path+".", deeper)...)
		}
	}
	return cols
}

// resolve checks a requested column: each segment but the last names a
// Pointer (followed to its target class, at most agent.MaxIncludeDepth
// deep) or an Object (whose contents are free-form).
func (r *columnResolver) resolve(s columnSpec, at, argName string) (exportColumn, error) {
	fail := func(format string, args ...any) (exportColumn, error) {
		return exportColumn{}, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("%s %q: ", at, s.field) + fmt.Sprintf(format, args...), Details: map[string]any{"argument": argName, "column": s.field}}
	}
	path := strings.Split(s.field, ".")
	for _, seg := range path {
		if seg == "" {
			return fail("empty segment in the field path")
		}
	}
	col := exportColumn{header: s.header, path: path}
	cur := r.sch
	pointers := 0
	for i, seg := range path {
		f, ok := cur.Fields[seg]
		if !ok {
			if i == 0 {
				return fail("unknown field %q on class %s", seg, cur.ClassName)
			}
			return fail("unknown field %q on class %s (the target of %q)", seg, cur.ClassName, strings.Join(path[:i], "."))
		}
		if f.Type == parse.TypeRelation {
			return fail("Relation field %q of %s has no value in the row; export %s with a $relatedTo where instead", seg, cur.ClassName, f.TargetClass)
		}
		if i == len(path)-1 {
			col.numeric = f.Type == parse.TypeNumber
			return col, nil
		}
		switch f.Type {
		case parse.TypeObject:
			return col, nil
		case parse.TypePointer:
			if pointers++; pointers > agent.MaxIncludeDepth {
				return fail("a column follows at most %d pointers", agent.MaxIncludeDepth)
			}
			ts := r.schemaOf(f.TargetClass)
			if ts == nil {
				return fail("the %s objects %q points to are not accessible", f.TargetClass, strings.Join(path[:i+1], "."))
			}
			col.include = strings.Join(path[:i+1], ".")
			cur = *ts
		default:
			return fail("%q is a %s field: dotted paths reach into Pointer and Object fields", seg, f.Type)
		}
	}
	return col, nil
}

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

// textTable is the rendered cells of an export.
type textTable struct {
	headers []string
	right   []bool // right-align the column in text tables
	rows    [][]string
}

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

// fit returns how many rows fit in maxBytes of output.
func (t *textTable) fit(format string, maxBytes int) int {
	switch format {
	case ExportText:
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
	case ExportText:
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
