package postgres

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/query"
)

// dialect renders the query compiler's SQL for PostgreSQL in Parse Server's
// layout: Object/Array as jsonb, permissions as text[], dates as timestamptz.
type dialect struct{}

func (dialect) Param(n int) string { return "$" + strconv.Itoa(n) }

func (dialect) Ident(name string) string { return sqlcompile.QuoteIdent(name) }

// JSONScalar extracts a scalar of the same JSON type as cmp (so a number
// never equals a string, as in SQLite's json_extract); with a nil cmp it is
// NULL when the path is missing or JSON null.
func (dialect) JSONScalar(col string, sub []string, param func(any) string, cmp any) string {
	p := param(sub) + "::text[]"
	at := "(" + col + " #> " + p + ")"
	text := "(" + col + " #>> " + p + ")"
	switch cmp.(type) {
	case nil:
		return "NULLIF(" + at + ", 'null'::jsonb)"
	case float64:
		return "(CASE WHEN jsonb_typeof(" + at + ") = 'number' THEN " + text + "::double precision END)"
	case bool:
		return "(CASE WHEN jsonb_typeof(" + at + ") = 'boolean' THEN " + text + "::boolean END)"
	}
	return "(CASE WHEN jsonb_typeof(" + at + ") = 'string' THEN " + text + " END)"
}

func (dialect) ArrayAny(col string, cond func(string) string) string {
	return "EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(" + col + ") = 'array' THEN " + col + " END) AS je(v) WHERE " + cond("je.v") + ")"
}

func (dialect) ArrayElem(v any) (any, string) {
	b, _ := json.Marshal(v)
	return string(b), "::jsonb"
}

func (dialect) ACLOverlap(col string, params []string) string {
	return col + " && ARRAY[" + strings.Join(params, ", ") + "]::text[]"
}

// Regex binds the pattern translated to an ARE that matches what RE2 does
// (arePattern), flags included.
func (dialect) Regex(expr, pattern string, f query.RegexFlags, param func(any) string) string {
	return expr + " ~ " + param(arePattern(pattern, f))
}

func (dialect) NullsOrder(desc bool) string {
	if desc {
		return " NULLS LAST"
	}
	return " NULLS FIRST"
}

func (dialect) Value(v any) any { return v }

// A point column is (x, y) = (longitude, latitude), as Parse Server stores it.
func (dialect) GeoLat(col string) string { return "(" + col + ")[1]" }
func (dialect) GeoLng(col string) string { return "(" + col + ")[0]" }
func (dialect) Least(a, b string) string { return "LEAST(" + a + ", " + b + ")" }

// CodePointOrder compares text by code point (UTF-8 bytes): Parse Server's
// databases often have a linguistic collation (en_US.utf8 is the official
// image's default), under which "B" < "alpha" is false, where Go, SQLite,
// Parse on MongoDB and query.Match say true. Equality is the same in every
// deterministic collation, so only ordering comparisons need it. (A
// B-tree index in the column's collation serves no range scan on this;
// equality and $in still use it.)
func (dialect) CodePointOrder(expr string) string { return expr + ` COLLATE "C"` }

// TextMatch is Parse Server's own $text on PostgreSQL.
func (dialect) TextMatch(expr, lang, term string, param func(any) string) string {
	l := param(lang) + "::regconfig"
	return "to_tsvector(" + l + ", " + expr + ") @@ to_tsquery(" + l + ", " + param(term) + ")"
}

// TextRank is Parse Server's $score on PostgreSQL.
func (dialect) TextRank(expr, lang, term string, param func(any) string) string {
	l := param(lang) + "::regconfig"
	return "ts_rank_cd(to_tsvector(" + l + ", " + expr + "), to_tsquery(" + l + ", " + param(term) + "), 32)"
}

func (dialect) InPolygon(lat, lng, polygon string) string {
	return polygon + "::polygon @> point(" + lng + ", " + lat + ")"
}

// PolygonArg binds the points as polygon text ((lng,lat),…).
func (dialect) PolygonArg(points [][2]float64) any {
	parts := make([]string, len(points))
	for i, p := range points {
		parts[i] = "(" + strconv.FormatFloat(p[1], 'g', -1, 64) + "," + strconv.FormatFloat(p[0], 'g', -1, 64) + ")"
	}
	return "(" + strings.Join(parts, ",") + ")"
}

// NoLimit is the LIMIT parameter that reads every row.
func (dialect) NoLimit() any { return nil }
