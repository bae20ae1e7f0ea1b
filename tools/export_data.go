package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

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
	ExportTable    = "table"
)

// exportDataName is the tool's name (its next_call names it too).
const exportDataName = "export_data"

func exportDataTool() *Tool {
	return &Tool{
		Name:        exportDataName,
		Op:          parse.OpFind,
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
			"format":   enumSchema("", ExportCSV, ExportCSV, ExportMarkdown, ExportTable),
			"limit":    intSchema("", 1, MaxExportLimit, DefaultExportLimit),
			"skip":     skipSchema,
			"pipeline": {Type: "array", Items: &jsonschema.Schema{Type: "object"}, Description: "see aggregate"},
		}),
		Handler: exportData,
	}
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

func exportData(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[exportArgs](c.Args)
	if err != nil {
		return nil, err
	}
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	format, err := exportFormat(args.Format)
	if err != nil {
		return nil, err
	}
	if len(args.Pipeline) > 0 {
		return exportPipeline(ctx, c, cls, args, format)
	}
	return exportFind(ctx, c, cls, args, format, exportPaging{tool: exportDataName, def: DefaultExportLimit, max: MaxExportLimit})
}

// exportPaging says which tool renders a find (export_data, or
// query_class with a format), its row limits, and what else its next_call
// carries.
type exportPaging struct {
	tool     string
	def, max int
	next     map[string]any
}

// exportFind renders the rows of a find on cls as format: the columns
// asked for (columns or keys), else every visible field and the included
// objects' fields.
func exportFind(ctx context.Context, c *Call, cls *agent.Class, args exportArgs, format string, pg exportPaging) (*ExportResult, error) {
	sch := cls.Schema
	spec, err := parseFind(ctx, cls, args.Where, args.Order, args.Limit, pg.def, pg.max, args.Skip)
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
	if err := guardFullScan(ctx, c, cls, q); err != nil {
		return nil, err
	}
	rows, err := cls.Find(ctx, q)
	if err != nil {
		return nil, err
	}
	hasMore := len(rows) > limit
	if hasMore {
		rows = rows[:limit]
	}
	if err := cls.Include(ctx, rows, include, sub); err != nil {
		return nil, err
	}

	next := map[string]any{"class_name": sch.ClassName}
	for k, v := range pg.next {
		next[k] = v
	}
	if spec.whereObj != nil {
		next["where"] = spec.whereObj
	}
	if args.Order != "" {
		next["order"] = args.Order
	}
	if len(args.Include) > 0 {
		next["include"] = []string(args.Include)
	}
	return renderExport(pg.tool, sch.ClassName, format, cols, rows, hasMore, limit, args, next)
}

// renderExport renders rows into the columns and pages the result; next
// holds the arguments of the next page besides format, columns, keys,
// limit and skip.
func renderExport(tool, class, format string, cols []exportColumn, rows []parse.Object, hasMore bool, limit int, args exportArgs, next map[string]any) (*ExportResult, error) {
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
		if format == ExportTable {
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
	res.Page = newPage(tool, next, limit, args.Skip, n, hasMore || n < len(t.rows))
	res.keep(n)
	return res, nil
}

// exportPipeline exports the rows of an aggregation pipeline run on the
// class (governed as aggregate runs it): the columns are its output fields,
// or the columns/keys asked for, paths into its rows.
func exportPipeline(ctx context.Context, c *Call, cls *agent.Class, args exportArgs, format string) (any, error) {
	sch := cls.Schema
	for name, set := range map[string]bool{"where": len(bytes.TrimSpace(args.Where)) > 0 && string(bytes.TrimSpace(args.Where)) != "null", "order": args.Order != "", "include": len(args.Include) > 0} {
		if set {
			return nil, argErr(name, "does not combine with pipeline (use $match, $sort, $lookup stages)")
		}
	}
	limit, err := intArg("limit", args.Limit, DefaultExportLimit, 1, MaxExportLimit)
	if err != nil {
		return nil, err
	}
	if err := skipArg(args.Skip); err != nil {
		return nil, err
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
	if err := guardPipelineScan(ctx, c, cls, p); err != nil {
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
	return renderExport(exportDataName, sch.ClassName, format, cols, rows, hasMore, limit, args, next)
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
	return "", &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument \"format\" must be csv, markdown or table, got %q", f), Details: map[string]any{"argument": "format"}}
}

// exportFormats is the closed set of the format argument.
var exportFormats = []string{ExportCSV, ExportMarkdown, ExportTable}
