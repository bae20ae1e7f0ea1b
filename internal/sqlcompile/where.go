// Package sqlcompile renders parsed queries (package query) as SQL for
// the SQL backends: store/sqlite, store/postgres, the kit they share
// (store/internal/sqlkit) and the benchmarks' direct baseline. Builder
// renders a where, its ACL clause and its order through a Dialect;
// CompilePipeline renders an aggregation pipeline as one SELECT through a
// PipelineDialect, and DecodeRow reads that SELECT's rows back. Values
// always reach SQL as bind arguments, never as text. The dialects differ,
// the semantics do not: both backends hold the Parse Server PostgreSQL
// layout.
package sqlcompile

import (
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Dialect is what differs between the SQL backends. Semantics do not.
type Dialect interface {
	// Param renders the n-th (1-based) bind parameter.
	Param(n int) string
	// Ident quotes an identifier.
	Ident(name string) string
	// JSONScalar extracts the scalar at sub inside a JSON column; param
	// binds an argument and returns its placeholder. cmp is the value the
	// expression will be compared with: the expression holds only a JSON
	// value of cmp's type (string, float64 number, bool) and is NULL for a
	// value of another type or a nested object or array, so values never
	// compare across types; with a nil cmp it is NULL only when the path is
	// missing or JSON null.
	JSONScalar(col string, sub []string, param func(any) string, cmp any) string
	// ArrayAny renders a predicate true when the JSON array column has an
	// element satisfying "elem <cond>", where cond is built from the element
	// expression the dialect chooses.
	ArrayAny(col string, cond func(elem string) string) string
	// ACLOverlap is true when the permission array column holds one of the
	// bound entries.
	ACLOverlap(col string, params []string) string
	// Regex matches expr against pattern (RE2 syntax, as query.Match reads
	// it) with flags; param binds an argument and returns its placeholder. The
	// dialect renders the pattern in its engine's syntax so that it
	// matches exactly what Go's regexp matches.
	Regex(expr, pattern string, flags query.RegexFlags, param func(any) string) string
	// ArrayElem converts a value compared with JSON array elements to its
	// bind argument and the cast its placeholder needs.
	ArrayElem(v any) (arg any, cast string)
	// NullsOrder renders the null placement for an ORDER BY key so both
	// backends sort nulls the same way (smallest, as Parse on MongoDB).
	NullsOrder(desc bool) string
	// Value converts a storage-form value to a bind argument.
	Value(v any) any
	// GeoLat and GeoLng extract the latitude and longitude of a GeoPoint column.
	GeoLat(col string) string
	GeoLng(col string) string
	// CodePointOrder renders a text expression so that <, <=, > and >=
	// order it by code point, as Go compares strings (and query.Match
	// orders them), whatever collation the database or the column has.
	CodePointOrder(expr string) string
	// Least is the smaller of two numeric expressions.
	Least(a, b string) string
	// InPolygon is true when the point lies inside the bound polygon.
	InPolygon(lat, lng, polygon string) string
	// PolygonArg converts [lat, lng] points to the polygon bind argument.
	PolygonArg(points [][2]float64) any
	// TextMatch is true when the text expr satisfies the $text term in
	// language: PostgreSQL's to_tsvector(language, expr) @@
	// to_tsquery(language, term), as Parse Server runs it (query.Text).
	TextMatch(expr, language, term string, param func(any) string) string
	// TextRank is the rank of the text expr for the $text term in
	// language: PostgreSQL's ts_rank_cd(to_tsvector(language, expr),
	// to_tsquery(language, term), 32), as Parse Server ranks $score.
	TextRank(expr, language, term string, param func(any) string) string
}

// Builder accumulates SQL text and bind arguments.
type Builder struct {
	D    Dialect
	Args []any
}

// Param binds v and returns its placeholder.
func (b *Builder) Param(v any) string {
	b.Args = append(b.Args, b.D.Value(v))
	return b.D.Param(len(b.Args))
}

func (b *Builder) column(p query.Path, cmp any) string {
	col := b.D.Ident(p.Field)
	if len(p.Sub) == 0 {
		return col
	}
	return b.D.JSONScalar(col, p.Sub, b.Param, cmp)
}

// elemParam binds a value compared with JSON array elements.
func (b *Builder) elemParam(v any) string {
	arg, cast := b.D.ArrayElem(v)
	b.Args = append(b.Args, arg)
	return b.D.Param(len(b.Args)) + cast
}

// Where renders the predicate of q (constraint and read ACL) or "" when
// every row matches.
func (b *Builder) Where(q *query.Query) string {
	var parts []string
	if q.Where != nil {
		if s := b.expr(q.Where); s != "" {
			parts = append(parts, s)
		}
	}
	if acl := b.ACLClause(b.D.Ident("_rperm"), q.ReadACL); acl != "" {
		parts = append(parts, acl)
	}
	return strings.Join(parts, " AND ")
}

// Constraint renders e alone (no ACL) or "" when every row matches: a
// where-constraint that narrows rows an ACL clause already governs (a
// write's row, a $lookup's joined rows).
func (b *Builder) Constraint(e query.Expr) string {
	if e == nil {
		return ""
	}
	return b.expr(e)
}

func (b *Builder) join(exprs []query.Expr, sep, empty string) string {
	if len(exprs) == 0 {
		return empty
	}
	parts := make([]string, 0, len(exprs))
	for _, e := range exprs {
		s := b.expr(e)
		if s == "" {
			s = "1=1"
		}
		parts = append(parts, s)
	}
	return "(" + strings.Join(parts, sep) + ")"
}

func (b *Builder) expr(e query.Expr) string {
	switch x := e.(type) {
	case query.And:
		return b.join(x.Exprs, " AND ", "1=1")
	case query.Or:
		return b.join(x.Exprs, " OR ", "1=0")
	case query.Nor:
		// IS NOT TRUE, not NOT: a clause on a missing field is NULL, and a
		// row without the field matches $nor (Mongo semantics).
		return "(" + b.join(x.Exprs, " OR ", "1=0") + " IS NOT TRUE)"
	case query.Cmp:
		return b.cmp(x)
	case query.In:
		return b.in(x)
	case query.All:
		parts := make([]string, 0, len(x.Values))
		for _, v := range x.Values {
			ph := b.elemParam(v)
			parts = append(parts, b.D.ArrayAny(b.D.Ident(x.Path.Field), func(el string) string { return el + " = " + ph }))
		}
		if len(parts) == 0 {
			return "1=1"
		}
		return "(" + strings.Join(parts, " AND ") + ")"
	case query.Exists:
		col := b.column(x.Path, nil)
		if x.Exists {
			return col + " IS NOT NULL"
		}
		return col + " IS NULL"
	case query.InQuery:
		col := b.column(x.Path, nil)
		sub := b.subquery(x.Query, x.Key)
		if x.Not {
			return "(" + col + " IS NULL OR " + col + " NOT IN (" + sub + "))"
		}
		return col + " IN (" + sub + ")"
	case query.RelatedTo:
		jt := b.D.Ident(joinTable(x.Field, x.Owner.Class))
		return b.D.Ident(parse.FieldObjectID) + ` IN (SELECT "relatedId" FROM ` + jt + ` WHERE "owningId" IN (` + b.subquery(x.Owner, parse.FieldObjectID) + "))"
	case query.RelationHas:
		phs := make([]string, len(x.IDs))
		for i, id := range x.IDs {
			phs[i] = b.Param(id)
		}
		if len(phs) == 0 {
			if x.Not {
				return "1=1"
			}
			return "1=0"
		}
		in := " IN (SELECT \"owningId\" FROM " + b.D.Ident(joinTable(x.Field, x.Class)) + ` WHERE "relatedId" IN (` + strings.Join(phs, ", ") + "))"
		if x.Not {
			return b.D.Ident(parse.FieldObjectID) + " NOT" + in
		}
		return b.D.Ident(parse.FieldObjectID) + in
	case query.ContainedBy:
		col := b.D.Ident(x.Path.Field)
		if len(x.Values) == 0 {
			return "(" + col + " IS NOT NULL AND NOT " + b.D.ArrayAny(col, func(string) string { return "1=1" }) + ")"
		}
		phs := make([]string, len(x.Values))
		for i, v := range x.Values {
			phs[i] = b.elemParam(v)
		}
		list := strings.Join(phs, ", ")
		return "(" + col + " IS NOT NULL AND NOT " + b.D.ArrayAny(col, func(el string) string { return el + " NOT IN (" + list + ")" }) + ")"
	case query.GeoBox:
		col := b.D.Ident(x.Path.Field)
		lat, lng := b.D.GeoLat(col), b.D.GeoLng(col)
		return "(" + col + " IS NOT NULL AND " + lat + " BETWEEN " + b.Param(x.SWLat) + " AND " + b.Param(x.NELat) +
			" AND " + lng + " BETWEEN " + b.Param(x.SWLng) + " AND " + b.Param(x.NELng) + ")"
	case query.GeoNear:
		col := b.D.Ident(x.Path.Field)
		if x.MaxRadians == 0 && x.Sort {
			return col + " IS NOT NULL"
		}
		return "(" + col + " IS NOT NULL AND " + b.distance(col, x.Lat, x.Lng) + " <= " + b.Param(x.MaxRadians) + ")"
	case query.GeoPolygon:
		col := b.D.Ident(x.Path.Field)
		return "(" + col + " IS NOT NULL AND " + b.D.InPolygon(b.D.GeoLat(col), b.D.GeoLng(col), b.Param(b.D.PolygonArg(x.Points))) + ")"
	case query.Regex:
		col := b.column(x.Path, "")
		return "(" + col + " IS NOT NULL AND " + b.D.Regex(col, x.Pattern, x.Flags, b.Param) + ")"
	case query.Text:
		col := b.D.Ident(x.Path.Field)
		return "(" + col + " IS NOT NULL AND " + b.D.TextMatch(col, x.Language, x.Term, b.Param) + ")"
	}
	panic(fmt.Sprintf("query: unknown expression %T", e))
}

func (b *Builder) cmp(c query.Cmp) string {
	if c.ArrayElem {
		col := b.D.Ident(c.Path.Field)
		ph := b.elemParam(c.Value)
		has := b.D.ArrayAny(col, func(el string) string { return el + " = " + ph })
		if c.Op == query.OpNe {
			return "(" + col + " IS NULL OR NOT " + has + ")"
		}
		return has
	}
	col := b.column(c.Path, c.Value)
	if c.Value == nil {
		if c.Op == query.OpNe {
			return col + " IS NOT NULL"
		}
		return col + " IS NULL"
	}
	ph := b.Param(c.Value)
	if c.Op == query.OpNe { // Mongo semantics: rows without the field match $ne
		return "(" + col + " IS NULL OR " + col + " <> " + ph + ")"
	}
	if c.Op != query.OpEq && textOrdered(c.Path, c.Value) {
		col = b.D.CodePointOrder(col)
	}
	return col + " " + string(c.Op) + " " + ph
}

// textOrdered reports whether an ordering comparison of p with v compares
// text: a String column (objectId included) or a string inside an Object.
// Dates are not: PostgreSQL holds them as timestamps, and their canonical
// ISO text orders the same way in every collation SQLite has.
func textOrdered(p query.Path, v any) bool {
	if _, ok := v.(string); !ok {
		return false
	}
	return len(p.Sub) > 0 || p.Type == parse.TypeString
}

func (b *Builder) in(x query.In) string {
	if len(x.Values) == 0 {
		if x.Not {
			return "1=1"
		}
		return "1=0"
	}
	if len(x.Path.Sub) > 0 && !x.ArrayElem {
		return b.jsonIn(x)
	}
	var sample any = x.Values[0]
	phs := make([]string, 0, len(x.Values))
	hasNull := false
	for _, v := range x.Values {
		if v == nil {
			hasNull = true
			continue
		}
		if x.ArrayElem {
			phs = append(phs, b.elemParam(v))
		} else {
			phs = append(phs, b.Param(v))
		}
	}
	list := strings.Join(phs, ", ")
	if x.ArrayElem {
		col := b.D.Ident(x.Path.Field)
		has := "1=0"
		if len(phs) > 0 {
			has = b.D.ArrayAny(col, func(el string) string { return el + " IN (" + list + ")" })
		}
		if x.Not {
			return "(" + col + " IS NULL OR NOT " + has + ")"
		}
		return has
	}
	col := b.column(x.Path, sample)
	in := "1=0"
	if len(phs) > 0 {
		in = col + " IN (" + list + ")"
	}
	if x.Not {
		if hasNull {
			return "(" + col + " IS NOT NULL AND NOT (" + in + "))"
		}
		return "(" + col + " IS NULL OR NOT (" + in + "))"
	}
	if hasNull {
		return "(" + col + " IS NULL OR " + in + ")"
	}
	return in
}

// jsonIn renders $in/$nin on a path inside an Object field. JSONScalar
// extracts a scalar of one JSON type, so the values are grouped by type and
// each group is compared with the scalar of its own type: a string in the
// list never matches a number or a boolean, and a mixed list binds each
// value with its own type. A value of no listed type (or a nested object or
// array) is in no group and is not null, so it matches $nin, with or
// without null in the list; the null test reads the path untyped.
func (b *Builder) jsonIn(x query.In) string {
	var (
		kinds   []string
		groups  = map[string][]string{}
		samples = map[string]any{}
		hasNull bool
	)
	for _, v := range x.Values {
		if v == nil {
			hasNull = true
			continue
		}
		k := fmt.Sprintf("%T", v)
		if _, ok := groups[k]; !ok {
			kinds = append(kinds, k)
			samples[k] = v
		}
		groups[k] = append(groups[k], b.Param(v))
	}
	terms := make([]string, 0, len(kinds))
	for _, k := range kinds {
		terms = append(terms, b.column(x.Path, samples[k])+" IN ("+strings.Join(groups[k], ", ")+")")
	}
	hit := "1=0"
	switch len(terms) {
	case 0:
	case 1:
		hit = terms[0]
	default:
		hit = "(" + strings.Join(terms, " OR ") + ")"
	}
	switch {
	case x.Not && hasNull:
		return "(" + b.column(x.Path, nil) + " IS NOT NULL AND (" + hit + ") IS NOT TRUE)"
	case x.Not:
		return "((" + hit + ") IS NOT TRUE)"
	case hasNull:
		return "(" + b.column(x.Path, nil) + " IS NULL OR " + hit + ")"
	}
	return hit
}

// subquery renders SELECT key FROM q.Class WHERE … (its own ReadACL
// included), sharing this builder's arguments.
func (b *Builder) subquery(q *query.Query, key string) string {
	k := b.D.Ident(key)
	sqlText := "SELECT " + k + " FROM " + b.D.Ident(q.Class) + " WHERE " + k + " IS NOT NULL"
	if w := b.Where(q); w != "" {
		sqlText += " AND " + w
	}
	return sqlText
}

// distance renders the great-circle distance in radians between a GeoPoint
// column and a bound point (haversine).
func (b *Builder) distance(col string, lat, lng float64) string {
	la, ln := b.D.GeoLat(col), b.D.GeoLng(col)
	plat, plng := b.Param(lat), b.Param(lng)
	h := "power(sin((radians(" + la + ") - radians(" + plat + ")) / 2), 2) + cos(radians(" + plat + ")) * cos(radians(" + la + ")) * power(sin((radians(" + ln + ") - radians(" + plng + ")) / 2), 2)"
	return "(2 * asin(sqrt(" + b.D.Least(h, "1.0") + ")))"
}

func joinTable(field, class string) string { return "_Join:" + field + ":" + class }

// Order renders q's ORDER BY clause: a $nearSphere without an explicit order
// sorts nearest first; "$score" sorts by the rank of q's $text
// (query.ScoreText).
func (b *Builder) Order(q *query.Query) string {
	if len(q.Order) == 0 && q.Where != nil {
		if n := query.Near(q.Where); n != nil {
			return b.distance(b.D.Ident(n.Path.Field), n.Lat, n.Lng) + " ASC, " + b.orderBy(nil, nil)
		}
	}
	return b.orderBy(q.Order, q)
}

// orderBy renders the ORDER BY clause (without the keyword), with objectId
// as the final tie-breaker so pagination is stable.
func (b *Builder) orderBy(keys []query.OrderKey, q *query.Query) string {
	keys = query.StableOrder(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		dir := " ASC"
		if k.Desc {
			dir = " DESC"
		}
		var col string
		switch {
		case k.Field == query.ScoreKey:
			col = b.Score(q)
		case len(k.Sub) > 0:
			col = b.D.JSONScalar(b.D.Ident(k.Field), k.Sub, b.Param, nil)
		default:
			col = b.D.Ident(k.Field)
		}
		parts = append(parts, col+dir+b.D.NullsOrder(k.Desc))
	}
	return strings.Join(parts, ", ")
}

// Score renders the rank of q's $text (query.ScoreText), or NULL when q
// has none to rank by (query.CheckScore refuses such a query first).
func (b *Builder) Score(q *query.Query) string {
	t, ok, err := query.ScoreText(q)
	if !ok || err != nil {
		return "NULL"
	}
	return b.D.TextRank(b.D.Ident(t.Path.Field), t.Language, t.Term, b.Param)
}
