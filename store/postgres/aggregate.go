package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// The aggregation pipeline on PostgreSQL: JSON-form values are jsonb,
// Numbers double precision, dates timestamptz (date parts in UTC).

var _ sqlcompile.PipelineDialect = dialect{}

// PipelineDialect returns the PostgreSQL dialect of the pipeline compiler, for
// tools and tests that render a pipeline's SQL (sqlcompile.CompilePipeline)
// without running it.
func PipelineDialect() sqlcompile.PipelineDialect { return dialect{} }

// Aggregate runs a parsed pipeline on class.
func (s *Store) Aggregate(ctx context.Context, class string, p *query.Pipeline, readACL query.ACLFilter) ([]map[string]any, error) {
	if p.Class != class {
		return nil, fmt.Errorf("pipeline was parsed for class %s, not %s", p.Class, class)
	}
	if _, err := s.schemas.Shared(ctx, class); err != nil {
		return nil, err
	}
	sqlText, args := sqlcompile.CompilePipeline(s.d, p, readACL)
	out, err := sqlkit.Collect(ctx, s.kit.DB, sqlText, args, func(vals []any) (map[string]any, error) { return sqlcompile.DecodeRow(p, pipelineCodec, vals) })
	if out == nil && err == nil {
		out = []map[string]any{}
	}
	return out, err
}

// pgx hands jsonb back decoded (encoding/json's generic form).
var pipelineCodec = sqlcompile.ValueCodec{Scalar: decodeValue, JSON: func(v any) (any, error) { return v, nil }}

var pgDateFields = map[string]string{
	"$year": "YEAR", "$month": "MONTH", "$dayOfMonth": "DAY", "$hour": "HOUR", "$minute": "MINUTE",
	"$dayOfYear": "DOY", "$isoWeek": "WEEK", "$isoWeekYear": "ISOYEAR", "$isoDayOfWeek": "ISODOW",
}

func (dialect) DatePart(op, expr, tz string, offset bool) string {
	v := "(" + expr + " AT TIME ZONE 'UTC')"
	switch {
	case tz != "" && offset: // a fixed offset: AT TIME ZONE would read "+05:30" the POSIX way (inverted)
		v = "((" + expr + " AT TIME ZONE 'UTC') + CAST(" + tz + " AS text)::interval)"
	case tz != "":
		v = "(" + expr + " AT TIME ZONE CAST(" + tz + " AS text))"
	}
	var e string
	switch op {
	case "$second":
		e = "floor(EXTRACT(SECOND FROM " + v + "))"
	case "$millisecond":
		e = "(floor(EXTRACT(MILLISECONDS FROM " + v + ")) - floor(EXTRACT(SECOND FROM " + v + ")) * 1000)"
	case "$dayOfWeek":
		e = "(EXTRACT(DOW FROM " + v + ") + 1)"
	case "$week":
		// C's %U: (day of year, 0-based, + 7 - day of week) / 7.
		e = "floor((EXTRACT(DOY FROM " + v + ") + 6 - EXTRACT(DOW FROM " + v + ")) / 7)"
	default:
		f, ok := pgDateFields[op]
		if !ok {
			panic("postgres: unknown date operator " + op)
		}
		e = "EXTRACT(" + f + " FROM " + v + ")"
	}
	return "CAST(" + e + " AS double precision)"
}

func (dialect) ToJSON(expr string, t query.Type) string {
	if t.Kind == query.TypeJSON || t.Kind == parse.TypeObject || t.Kind == parse.TypeArray || t.JSON {
		return expr
	}
	switch t.Kind {
	case parse.TypeDate:
		return `to_jsonb(to_char(` + expr + ` AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))`
	case parse.TypeGeoPoint:
		return "(CASE WHEN " + expr + " IS NOT NULL THEN jsonb_build_object('latitude', (" + expr + ")[1], 'longitude', (" + expr + ")[0]) END)"
	case parse.TypePolygon:
		return `(SELECT jsonb_agg(jsonb_build_array(CAST(r.m[2] AS double precision), CAST(r.m[1] AS double precision)) ORDER BY r.n) ` +
			`FROM regexp_matches(CAST(` + expr + ` AS text), '\(([^(),]+),([^(),]+)\)', 'g') WITH ORDINALITY AS r(m, n))`
	case parse.TypeBytes:
		return "(" + expr + " -> 'base64')"
	}
	return "to_jsonb(" + expr + ")"
}

func (dialect) FromJSON(expr string, t query.Type) string {
	switch t.Kind {
	case parse.TypeString, parse.TypePointer:
		return "(CASE WHEN jsonb_typeof(" + expr + ") = 'string' THEN " + expr + " #>> '{}' END)"
	case parse.TypeNumber:
		return "(CASE WHEN jsonb_typeof(" + expr + ") = 'number' THEN CAST(" + expr + " AS double precision) END)"
	case parse.TypeBoolean:
		return "(CASE WHEN jsonb_typeof(" + expr + ") = 'boolean' THEN CAST(" + expr + " AS boolean) END)"
	case parse.TypeDate:
		return "(CASE WHEN jsonb_typeof(" + expr + ") = 'string' THEN CAST(" + expr + " #>> '{}' AS timestamp with time zone) END)"
	}
	return expr
}

func (dialect) JSONAt(expr string, sub []string, param func(any) string) string {
	return "(" + expr + " #> CAST(" + param(sub) + " AS text[]))"
}

// jsonb_build_object takes at most 100 arguments.
const jsonObjectChunk = 50

func (dialect) JSONObject(keys, vals []string) string {
	var parts []string
	for i := 0; i < len(keys); i += jsonObjectChunk {
		end := min(i+jsonObjectChunk, len(keys))
		args := make([]string, 0, 2*(end-i))
		for j := i; j < end; j++ {
			args = append(args, "CAST("+keys[j]+" AS text)", vals[j])
		}
		parts = append(parts, "jsonb_build_object("+strings.Join(args, ", ")+")")
	}
	if len(parts) == 0 {
		return "jsonb_build_object()"
	}
	return "(" + strings.Join(parts, " || ") + ")"
}

func (dialect) JSONArrayAgg(elem, filter, order string) string {
	agg := "jsonb_agg(" + elem + ")"
	if order != "" {
		agg = "jsonb_agg(" + elem + " ORDER BY " + order + ")"
	}
	if filter != "" {
		agg += " FILTER (WHERE " + filter + ")"
	}
	return "COALESCE(" + agg + ", '[]'::jsonb)"
}

func (dialect) JSONSortKeys(expr string) []string {
	return []string{
		"(CASE jsonb_typeof(" + expr + ") WHEN 'null' THEN 0 WHEN 'number' THEN 1 WHEN 'string' THEN 2 " +
			"WHEN 'object' THEN 3 WHEN 'array' THEN 4 WHEN 'boolean' THEN 5 END)",
		"(CASE WHEN jsonb_typeof(" + expr + ") = 'number' THEN CAST(" + expr + " AS double precision) END)",
		"(CASE WHEN jsonb_typeof(" + expr + ") = 'string' THEN " + expr + " #>> '{}' END)",
		"(CASE WHEN jsonb_typeof(" + expr + ") = 'boolean' THEN CAST(" + expr + " AS boolean) END)",
	}
}

func (dialect) First(expr, order string, _ query.Type) string {
	return "(array_agg(" + expr + " ORDER BY " + order + "))[1]"
}

func (dialect) MinMax(expr string, t query.Type, max bool) string {
	if t.Kind == parse.TypeBoolean {
		if max {
			return "bool_or(" + expr + ")"
		}
		return "bool_and(" + expr + ")"
	}
	if max {
		return "max(" + expr + ")"
	}
	return "min(" + expr + ")"
}

func (dialect) Literal(ph string, t query.Type) string {
	var typ string
	switch t.Kind {
	case parse.TypeNumber:
		typ = "double precision"
	case parse.TypeBoolean:
		typ = "boolean"
	case parse.TypeDate:
		typ = "timestamp with time zone"
	case parse.TypeObject, parse.TypeArray, query.TypeJSON:
		typ = "jsonb"
	default:
		typ = "text"
	}
	return "CAST(" + ph + " AS " + typ + ")"
}

func (dialect) Number(expr string) string { return "CAST(" + expr + " AS double precision)" }

func (dialect) Unwind(arr string, preserve bool) (join, elem, index, order string) {
	kw := "JOIN"
	if preserve {
		kw = "LEFT JOIN"
	}
	join = kw + " LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(" + arr + ") = 'array' THEN " + arr + " END) WITH ORDINALITY AS je(v, i) ON true"
	return join, "je.v", "(je.i - 1)", "je.i"
}

// SQLShape exposes the store's dialect and pipeline codec, so benchmarks
// can run the store's exact aggregation SQL directly and decode it the same
// way.
func (s *Store) SQLShape() (sqlcompile.PipelineDialect, sqlcompile.ValueCodec) {
	return s.d, pipelineCodec
}

// FindSQL renders the statement Find runs for q on sch (the stored schema)
// and returns the decoder of its rows (one row's column values, in order),
// so benchmarks can run it directly as a baseline.
func (s *Store) FindSQL(sch parse.Schema, q *query.Query) (sqlText string, args []any, decode func(vals []any) (parse.Object, error)) {
	return s.kit.FindStatement(sch, q)
}

// CountSQL renders the statement Count runs for q.
func (s *Store) CountSQL(q *query.Query) (sqlText string, args []any) {
	return sqlkit.CountSQL(s.kit.D, q)
}
