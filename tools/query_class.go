package tools

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Query limits (query_class's; explain_query takes the same limit).
const (
	DefaultQueryLimit = 100
	MaxQueryLimit     = 1000
)

// queryClassName is the tool's name (its next_call names it too).
const queryClassName = "query_class"

func queryClassTool() *Tool {
	return &Tool{
		Name:        queryClassName,
		Op:          parse.OpFind,
		Category:    CategoryQuery,
		Title:       "Query a class",
		Description: "Find objects matching a where; next_call pages." + seeDocs,
		Permission:  agent.Readonly,
		Timeout:     30 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[queryArgs](map[string]*jsonschema.Schema{
			"where":                  whereSchema,
			"limit":                  intSchema("rows per page", 1, MaxQueryLimit, DefaultQueryLimit),
			"skip":                   skipSchema,
			"order":                  orderSchema,
			"keys":                   keysSchema,
			"include":                includeSchema,
			"apply_canonical_filter": canonicalSchema,
			"format":                 enumSchema("", QueryJSON, QueryJSON, ExportCSV, ExportMarkdown, ExportTable),
		}),
		Handler: queryClass,
	}
}

type queryArgs struct {
	ClassName string     `json:"class_name"`
	Where     Where      `json:"where,omitempty"`
	Limit     *int       `json:"limit,omitempty" jsonschema:"rows to return, 1 to 1000 (default 100)"`
	Skip      int        `json:"skip,omitempty"`
	Order     string     `json:"order,omitempty" jsonschema:"comma-separated sort keys, - for descending, e.g. -createdAt,title"`
	Keys      StringList `json:"keys,omitempty"`
	Include   StringList `json:"include,omitempty"`
	// ApplyCanonicalFilter false includes rows outside the class's
	// canonical filter (soft-deleted, drafts…).
	ApplyCanonicalFilter *bool `json:"apply_canonical_filter,omitempty"`
	// Format renders the page as one text (csv, markdown, table) with
	// export_data's renderers instead of returning the rows.
	Format string `json:"format,omitempty"`
}

// QueryJSON is query_class's default format: the rows themselves.
const QueryJSON = "json"

// largeFieldKeys returns the keys of a query that names none: every
// visible field but the class's large fields, and the large fields left
// out (nil, nil when the class declares none).
func largeFieldKeys(cls *agent.Class) (keys, omitted []string) {
	sch, m := cls.Schema, cls.Meta()
	if m == nil || len(m.LargeFields) == 0 {
		return nil, nil
	}
	for _, name := range sch.FieldNames() {
		if _, ok := sch.Fields[name]; !ok || name == parse.FieldACL {
			continue
		}
		if slices.Contains(m.LargeFields, name) {
			omitted = append(omitted, name)
			continue
		}
		keys = append(keys, name)
	}
	if len(omitted) == 0 {
		return nil, nil
	}
	return keys, omitted
}

func queryClass(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[queryArgs](c.Args)
	if err != nil {
		return nil, err
	}
	c = c.withScope(canonicalScope(c.Scope, args.ApplyCanonicalFilter))
	cls, err := openClass(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	if f := strings.TrimSpace(args.Format); f != "" && !strings.EqualFold(f, QueryJSON) {
		return queryFormatted(ctx, c, cls, args)
	}
	sch := cls.Schema
	spec, err := parseFind(ctx, cls, args.Where, args.Order, args.Limit, DefaultQueryLimit, MaxQueryLimit, args.Skip)
	if err != nil {
		return nil, err
	}
	where, whereObj, order, limit := spec.where, spec.whereObj, spec.order, spec.limit
	keys, sub, include, err := projection(sch, args.Keys, args.Include)
	if err != nil {
		return nil, err
	}
	var omitted []string
	if args.Keys == nil {
		keys, omitted = largeFieldKeys(cls)
	}
	q := &query.Query{Class: sch.ClassName, Where: where, Order: order, Limit: limit + 1, Skip: args.Skip, Keys: keys}
	if err := guardFullScan(ctx, c, cls, q); err != nil {
		return nil, err
	}
	rows, hasMore, err := findRows(ctx, cls, q, limit, include, sub)
	if err != nil {
		return nil, err
	}
	elided, err := elideLargeJSON(rows, args.Keys)
	if err != nil {
		return nil, err
	}
	next := map[string]any{"class_name": sch.ClassName, "limit": limit}
	if whereObj != nil {
		next["where"] = whereObj
	}
	if args.Order != "" {
		next["order"] = args.Order
	}
	if args.Keys != nil {
		next["keys"] = []string(args.Keys)
	}
	if len(args.Include) > 0 {
		next["include"] = []string(args.Include)
	}
	if args.ApplyCanonicalFilter != nil {
		next["apply_canonical_filter"] = *args.ApplyCanonicalFilter
	}
	if rows == nil {
		rows = []json.RawMessage{}
	}
	res := &QueryResult{
		ClassName:              sch.ClassName,
		ResultCount:            len(rows),
		Results:                rows,
		OmittedLargeFields:     omitted,
		ElidedFields:           elided,
		TruncatedIncludeFields: c.Scope.TruncatedIncludeFields(),
		Page:                   newPage(queryClassName, next, limit, args.Skip, len(rows), hasMore),
		all:                    rows,
	}
	if args.ApplyCanonicalFilter != nil && !*args.ApplyCanonicalFilter {
		res.CanonicalFilterApplied = new(false)
	}
	return res, nil
}

// findRows reads a find's page (q reads limit+1 rows: one more says more
// follow) as JSON text: straight from the store without includes, else as
// objects whose pointers the scope replaces by the included objects.
func findRows(ctx context.Context, cls *agent.Class, q *query.Query, limit int, include []string, sub map[string][]string) (rows []json.RawMessage, hasMore bool, err error) {
	if len(include) == 0 {
		rows, err := cls.FindJSON(ctx, q)
		if err != nil {
			return nil, false, err
		}
		rows, hasMore = pageOf(rows, limit)
		return rows, hasMore, nil
	}
	objs, err := cls.Find(ctx, q)
	if err != nil {
		return nil, false, err
	}
	objs, hasMore = pageOf(objs, limit)
	if err := cls.Include(ctx, objs, include, sub); err != nil {
		return nil, false, err
	}
	rows, err = agent.EncodeRows(objs)
	return rows, hasMore, err
}

// QueryResult is the answer of query_class.
type QueryResult struct {
	ClassName   string            `json:"class_name"`
	ResultCount int               `json:"result_count"`
	Results     []json.RawMessage `json:"results"`
	// OmittedLargeFields are the class's declared large fields, left out
	// because the call named no keys.
	OmittedLargeFields []string `json:"omitted_large_fields,omitempty"`
	// ElidedFields are fields some row held a value over LargeValueBytes
	// of, replaced by its size; name them in keys to get them.
	ElidedFields           []string            `json:"elided_fields,omitempty"`
	TruncatedIncludeFields map[string][]string `json:"truncated_include_fields,omitempty"`
	CanonicalFilterApplied *bool               `json:"canonical_filter_applied,omitempty"`
	Page
	all []json.RawMessage
}

func (r *QueryResult) pageRows() int { return len(r.all) }

func (r *QueryResult) rowBytes(i int) int { return len(r.all[i]) }

func (r *QueryResult) keepRows(n int) {
	r.Results = r.all[:n]
	r.ResultCount = n
	r.cut(n, len(r.all))
}

func (r *QueryResult) objectRows() []map[string]any { return decodeRows(r.all) }

// queryFormatted is query_class with a format other than json: the page
// rendered as export_data renders a find (its columns: the keys asked
// for, else every visible field), paged by query_class's limits.
func queryFormatted(ctx context.Context, c *Call, cls *agent.Class, args queryArgs) (any, error) {
	format, err := exportFormat(args.Format)
	if err != nil {
		return nil, err
	}
	pg := exportPaging{tool: queryClassName, def: DefaultQueryLimit, max: MaxQueryLimit, next: map[string]any{}}
	if args.ApplyCanonicalFilter != nil {
		pg.next["apply_canonical_filter"] = *args.ApplyCanonicalFilter
	}
	return exportFind(ctx, c, cls, exportArgs{ClassName: args.ClassName, Where: args.Where, Order: args.Order, Keys: args.Keys,
		Include: args.Include, Format: format, Limit: args.Limit, Skip: args.Skip}, format, pg)
}
