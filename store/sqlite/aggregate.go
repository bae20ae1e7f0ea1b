package sqlite

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store/internal/sqlkit"
)

// The aggregation pipeline on SQLite: JSON-form values are JSON text
// (JSON1), dates fixed-width ISO text (strftime reads them), booleans 0/1.

var _ sqlcompile.PipelineDialect = dialect{}

// PipelineDialect returns the SQLite dialect of the pipeline compiler, for
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

var pipelineCodec = sqlcompile.ValueCodec{Scalar: decodeValue, JSON: jsonText}

func jsonText(v any) (any, error) {
	s, ok := asText(v)
	if !ok {
		// A JSON scalar that SQLite handed back as a number.
		switch x := v.(type) {
		case int64:
			return float64(x), nil
		case float64:
			return x, nil
		}
		return nil, fmt.Errorf("unexpected %T for a JSON value", v)
	}
	var out any
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("JSON value: %w", err)
	}
	return out, nil
}

var sqliteDateFormats = map[string]string{
	"$year": "%Y", "$month": "%m", "$dayOfMonth": "%d", "$hour": "%H", "$minute": "%M",
	"$second": "%S", "$dayOfYear": "%j", "$week": "%U", "$isoWeek": "%V",
	"$isoWeekYear": "%G", "$isoDayOfWeek": "%u",
}

func (dialect) DatePart(op, expr, tz string, offset bool) string {
	if tz != "" { // local wall-clock text in the zone (Go's time zone database)
		expr = "parsemcp_localtime(" + expr + ", " + tz + ")"
	}
	switch op {
	case "$dayOfWeek":
		return "(CAST(strftime('%w', " + expr + ") AS INTEGER) + 1)"
	case "$millisecond":
		return "CAST(substr(strftime('%f', " + expr + "), 4) AS INTEGER)"
	}
	f, ok := sqliteDateFormats[op]
	if !ok {
		panic("sqlite: unknown date operator " + op)
	}
	return "CAST(strftime('" + f + "', " + expr + ") AS INTEGER)"
}

func (dialect) ToJSON(expr string, t query.Type) string {
	switch {
	case t.Kind == query.TypeJSON, t.Kind == parse.TypeObject, t.Kind == parse.TypeArray, t.JSON,
		t.Kind == parse.TypeGeoPoint, t.Kind == parse.TypePolygon:
		return "json(" + expr + ")"
	case t.Kind == parse.TypeBoolean:
		return "(CASE " + expr + " WHEN 1 THEN json('true') WHEN 0 THEN json('false') END)"
	}
	return expr // text and numbers are their own JSON normal form
}

func (dialect) FromJSON(expr string, t query.Type) string {
	switch t.Kind {
	case parse.TypeString, parse.TypePointer, parse.TypeDate:
		return "(CASE WHEN json_type(" + expr + ") = 'text' THEN json_extract(" + expr + ", '$') END)"
	case parse.TypeNumber:
		return "(CASE WHEN json_type(" + expr + ") IN ('integer', 'real') THEN json_extract(" + expr + ", '$') END)"
	case parse.TypeBoolean:
		return "(CASE json_type(" + expr + ") WHEN 'true' THEN 1 WHEN 'false' THEN 0 END)"
	}
	return expr
}

func (dialect) JSONAt(expr string, sub []string, param func(any) string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, s := range sub {
		b.WriteString(`."`)
		b.WriteString(s) // segments are validated [A-Za-z0-9_-]; bound, not spliced
		b.WriteString(`"`)
	}
	return "(" + expr + " -> " + param(b.String()) + ")"
}

const jsonObjectChunk = 50

func (dialect) JSONObject(keys, vals []string) string {
	var parts []string
	for i := 0; i < len(keys); i += jsonObjectChunk {
		end := min(i+jsonObjectChunk, len(keys))
		args := make([]string, 0, 2*(end-i))
		for j := i; j < end; j++ {
			args = append(args, keys[j], vals[j])
		}
		parts = append(parts, "json_object("+strings.Join(args, ", ")+")")
	}
	if len(parts) == 0 {
		return "json_object()"
	}
	out := parts[0]
	for _, p := range parts[1:] {
		out = "json_patch(" + out + ", " + p + ")"
	}
	return out
}

func (dialect) JSONArrayAgg(elem, filter, order string) string {
	agg := "json_group_array(" + elem + ")"
	if order != "" {
		agg = "json_group_array(" + elem + " ORDER BY " + order + ")"
	}
	if filter != "" {
		agg += " FILTER (WHERE " + filter + ")"
	}
	return agg
}

func (dialect) JSONSortKeys(expr string) []string {
	return []string{
		"(CASE json_type(" + expr + ") WHEN 'null' THEN 0 WHEN 'integer' THEN 1 WHEN 'real' THEN 1 WHEN 'text' THEN 2 " +
			"WHEN 'object' THEN 3 WHEN 'array' THEN 4 WHEN 'true' THEN 5 WHEN 'false' THEN 5 END)",
		"(CASE WHEN json_type(" + expr + ") IN ('integer', 'real') THEN json_extract(" + expr + ", '$') END)",
		"(CASE WHEN json_type(" + expr + ") = 'text' THEN json_extract(" + expr + ", '$') END)",
		"(CASE json_type(" + expr + ") WHEN 'false' THEN 0 WHEN 'true' THEN 1 END)",
	}
}

func (d dialect) First(expr, order string, t query.Type) string {
	if t.Kind == query.TypeJSON || t.Kind == parse.TypeObject || t.Kind == parse.TypeArray || t.JSON {
		// Keep the JSON text of the first value (a JSON null is no value).
		return "NULLIF(json_group_array(json(" + expr + ") ORDER BY " + order + ") -> '$[0]', 'null')"
	}
	return "json_extract(json_group_array(" + expr + " ORDER BY " + order + "), '$[0]')"
}

func (dialect) MinMax(expr string, _ query.Type, max bool) string {
	if max {
		return "max(" + expr + ")"
	}
	return "min(" + expr + ")"
}

func (dialect) Literal(ph string, t query.Type) string {
	switch t.Kind {
	case parse.TypeObject, parse.TypeArray, query.TypeJSON:
		if ph == "NULL" {
			return ph
		}
		return "json(" + ph + ")"
	}
	return ph
}

func (dialect) Number(expr string) string { return expr }

func (dialect) Unwind(arr string, preserve bool) (join, elem, index, order string) {
	kw := "JOIN"
	if preserve {
		kw = "LEFT JOIN"
	}
	join = kw + " json_each(CASE WHEN json_type(" + arr + ") = 'array' THEN " + arr + " END) AS je ON 1"
	return join, "(" + arr + " -> je.fullkey)", "je.key", "je.key"
}

// localTime renders an ISO date as wall-clock text in a time zone (an IANA
// name or a ±hh:mm offset), in a form strftime reads.
func localTime(iso, tz string) (string, error) {
	t, err := parse.ParseDate(iso)
	if err != nil {
		return "", err
	}
	var loc *time.Location
	if len(tz) == 6 && (tz[0] == '+' || tz[0] == '-') {
		h, m := int(tz[1]-'0')*10+int(tz[2]-'0'), int(tz[4]-'0')*10+int(tz[5]-'0')
		secs := (h*60 + m) * 60
		if tz[0] == '-' {
			secs = -secs
		}
		loc = time.FixedZone(tz, secs)
	} else if loc, err = time.LoadLocation(tz); err != nil {
		return "", err
	}
	return t.In(loc).Format("2006-01-02 15:04:05.000"), nil
}

func init() {
	sqlite.MustRegisterDeterministicScalarFunction("parsemcp_localtime", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		iso, ok1 := args[0].(string)
		tz, ok2 := args[1].(string)
		if !ok1 || !ok2 {
			return nil, nil
		}
		return localTime(iso, tz)
	})
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
