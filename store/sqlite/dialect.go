package sqlite

import (
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"modernc.org/sqlite"

	"github.com/parsemcp/parsemcp/internal/sqlcompile"
	"github.com/parsemcp/parsemcp/parse/geo"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/query/textsearch"
)

// dialect renders the query compiler's SQL for SQLite. JSON columns (Object,
// Array, _rperm/_wperm) hold JSON text and are read with json_extract and
// json_each; booleans are 0/1; dates are fixed-width ISO-8601 text.
type dialect struct{}

func (dialect) Param(n int) string { return "?" + strconv.Itoa(n) }

func (dialect) Ident(name string) string { return sqlcompile.QuoteIdent(name) }

// JSONScalar extracts the scalar at sub of the same JSON type as cmp, as
// PostgreSQL's dialect does: json_extract alone reports JSON true/false as
// 1/0 and SQLite orders numbers before text and a nested object or array
// as its JSON text, so a boolean would equal 1 and "z" would order after
// every number. Here a value of another JSON type (or a nested object or
// array) is NULL: booleans are 1/0 (as Value binds them) only when the JSON
// is true/false, numbers only JSON integers and reals, text only JSON
// strings. With a nil cmp it is NULL when the path is missing or JSON null.
// The path is bound once and its placeholder used twice.
func (dialect) JSONScalar(col string, sub []string, param func(any) string, cmp any) string {
	var b strings.Builder
	b.WriteString("$")
	for _, s := range sub {
		b.WriteString(`."`)
		b.WriteString(s) // segments are validated [A-Za-z0-9_-]; bound, not spliced
		b.WriteString(`"`)
	}
	path := param(b.String())
	extract := "json_extract(" + col + ", " + path + ")"
	typ := "json_type(" + col + ", " + path + ")"
	switch cmp.(type) {
	case nil:
		return extract
	case float64:
		return "(CASE WHEN " + typ + " IN ('integer', 'real') THEN " + extract + " END)"
	case bool:
		return "(CASE " + typ + " WHEN 'true' THEN 1 WHEN 'false' THEN 0 END)"
	}
	return "(CASE WHEN " + typ + " = 'text' THEN " + extract + " END)"
}

// arrayElem is the element json_each yields, typed as MongoDB compares
// array elements: json_each reports true/false as 1/0, so booleans become
// one-byte BLOBs (which never equal a number or a string, and match what
// ArrayElem binds for a boolean); nested arrays and objects (their JSON
// text) and nulls become the BLOB x'ff', which equals nothing ArrayElem
// binds but, unlike NULL, is not unknown: it is NOT IN every list, so
// $containedBy and $nor see such an element as PostgreSQL sees its jsonb
// null or nested value (none of the scalars). An object becomes the BLOB
// "o" and its minified JSON (this store writes objects with sorted keys,
// as encoding/json does), which equals what ArrayElem binds for the same
// object (a Pointer in an array of Pointers) and never a scalar.
const arrayElem = "(CASE je.type WHEN 'true' THEN x'01' WHEN 'false' THEN x'00' " +
	"WHEN 'text' THEN je.value WHEN 'integer' THEN je.value WHEN 'real' THEN je.value " +
	"WHEN 'object' THEN CAST('o' || json(je.value) AS BLOB) ELSE x'ff' END)"

func (dialect) ArrayAny(col string, cond func(string) string) string {
	return "EXISTS (SELECT 1 FROM json_each(" + col + ") AS je WHERE " + cond(arrayElem) + ")"
}

func (dialect) ACLOverlap(col string, params []string) string {
	return "EXISTS (SELECT 1 FROM json_each(" + col + ") AS ae WHERE ae.value IN (" + strings.Join(params, ", ") + "))"
}

// Regex runs Go's regexp (as query.Match does), the flags an inline group
// in front of the pattern.
func (dialect) Regex(expr, pattern string, flags query.RegexFlags, param func(any) string) string {
	return "parsemcp_regexp(" + param(query.GoRegexPrefix(flags)+pattern) + ", " + expr + ")"
}

// ArrayElem binds a value compared with arrayElem: booleans and objects
// as the BLOBs arrayElem renders them as.
func (d dialect) ArrayElem(v any) (any, string) {
	switch x := v.(type) {
	case bool:
		if x {
			return []byte{1}, ""
		}
		return []byte{0}, ""
	case map[string]any:
		b, _ := json.Marshal(x)
		return append([]byte("o"), b...), ""
	}
	return d.Value(v), ""
}

func (dialect) NullsOrder(desc bool) string {
	if desc {
		return " NULLS LAST"
	}
	return " NULLS FIRST"
}

func (dialect) Value(v any) any {
	if b, ok := v.(bool); ok {
		if b {
			return int64(1)
		}
		return int64(0)
	}
	return v
}

// regexCache keeps compiled patterns; a query evaluates one pattern per row.
var regexCache sync.Map // string → *regexp.Regexp

const maxCachedPatterns = 1024

var cachedPatterns int64
var cacheMu sync.Mutex

func compiled(pat string) (*regexp.Regexp, error) {
	if re, ok := regexCache.Load(pat); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, err
	}
	cacheMu.Lock()
	if cachedPatterns >= maxCachedPatterns {
		regexCache.Clear()
		cachedPatterns = 0
	}
	cachedPatterns++
	cacheMu.Unlock()
	regexCache.Store(pat, re)
	return re, nil
}

func init() {
	sqlite.MustRegisterDeterministicScalarFunction("parsemcp_regexp", 2, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		pat, ok := args[0].(string)
		if !ok {
			return nil, fmt.Errorf("regexp pattern must be text")
		}
		var s string
		switch v := args[1].(type) {
		case nil:
			return int64(0), nil
		case string:
			s = v
		case []byte:
			s = string(v)
		default:
			s = fmt.Sprint(v)
		}
		re, err := compiled(pat)
		if err != nil {
			return nil, err
		}
		if re.MatchString(s) {
			return int64(1), nil
		}
		return int64(0), nil
	})
}

func (dialect) GeoLat(col string) string { return "json_extract(" + col + ", '$.latitude')" }
func (dialect) GeoLng(col string) string { return "json_extract(" + col + ", '$.longitude')" }
func (dialect) Least(a, b string) string { return "min(" + a + ", " + b + ")" }

// TextMatch runs query/textsearch, PostgreSQL's text search in Go (the
// same code as query.Match).
func (dialect) TextMatch(expr, lang, term string, param func(any) string) string {
	return "parsemcp_text_match(" + param(lang) + ", " + param(term) + ", " + expr + ") = 1"
}

// textArgs reads the arguments of parsemcp_text_match: the parsed term
// and the text (ok false for NULL).
func textArgs(args []driver.Value) (q *textsearch.Query, lang, text string, ok bool, err error) {
	lang, _ = args[0].(string)
	term, _ := args[1].(string)
	switch v := args[2].(type) {
	case string:
		text = v
	case []byte:
		text = string(v)
	default:
		return nil, "", "", false, nil
	}
	if !textsearch.Supported(lang) {
		return nil, "", "", false, fmt.Errorf("unsupported text search language %q", lang)
	}
	q, err = textsearch.Parse(lang, term)
	return q, lang, text, err == nil, err
}

func init() {
	sqlite.MustRegisterDeterministicScalarFunction("parsemcp_text_match", 3, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		q, lang, text, ok, err := textArgs(args)
		if !ok || err != nil {
			return nil, err
		}
		match, err := q.MatchText(lang, text)
		switch {
		case err != nil: // PostgreSQL's error for a text too long for a tsvector
			return nil, err
		case match:
			return int64(1), nil
		}
		return int64(0), nil
	})
	sqlite.MustRegisterDeterministicScalarFunction("parsemcp_text_rank", 3, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		q, lang, text, ok, err := textArgs(args)
		if !ok || err != nil {
			return nil, err
		}
		v, err := textsearch.Vectorize(lang, text)
		if err != nil {
			return nil, err
		}
		return textsearch.Score(q.Rank(v)), nil
	})
}

// TextRank is PostgreSQL's ts_rank_cd(…, 32) computed by query/textsearch,
// as the number PostgreSQL prints for it (textsearch.Score).
func (dialect) TextRank(expr, lang, term string, param func(any) string) string {
	return "parsemcp_text_rank(" + param(lang) + ", " + param(term) + ", " + expr + ")"
}

// CodePointOrder: the store's text columns and json_extract's text have
// SQLite's BINARY collation, which compares UTF-8 bytes (code points).
func (dialect) CodePointOrder(expr string) string { return expr }

func (dialect) InPolygon(lat, lng, polygon string) string {
	return "parsemcp_in_polygon(" + lat + ", " + lng + ", " + polygon + ") = 1"
}

// PolygonArg binds the points as JSON text [[lat,lng],…].
func (dialect) PolygonArg(points [][2]float64) any {
	b, _ := json.Marshal(points)
	return string(b)
}

func init() {
	sqlite.MustRegisterDeterministicScalarFunction("parsemcp_in_polygon", 3, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		lat, ok1 := number(args[0])
		lng, ok2 := number(args[1])
		raw, ok3 := args[2].(string)
		if !ok1 || !ok2 || !ok3 {
			return int64(0), nil
		}
		var pts [][2]float64
		if err := json.Unmarshal([]byte(raw), &pts); err != nil {
			return nil, err
		}
		if geo.InPolygon(lat, lng, pts) {
			return int64(1), nil
		}
		return int64(0), nil
	})
}

// number reads an SQLite numeric value (JSON integers come back as int64).
func number(v driver.Value) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// NoLimit is the LIMIT parameter that reads every row.
func (dialect) NoLimit() any { return int64(-1) }
