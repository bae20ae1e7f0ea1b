package query

import (
	"maps"
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query/textsearch"
)

// Text is a full-text search of a String field ($text), as Parse Server
// runs it on PostgreSQL: to_tsvector(Language, field) @@
// to_tsquery(Language, Term). A row without the field does not match.
type Text struct {
	Path     Path
	Term     string // to_tsquery syntax: & | ! <-> ( ) 'phrase' :*
	Language string // "english" or "simple"
}

func (Text) isExpr() {}

// Query is the parsed term (Parse accepted it).
func (t Text) Query() *textsearch.Query {
	q, err := textsearch.Parse(t.Language, t.Term)
	if err != nil {
		return &textsearch.Query{} // never: the parser refused such a term
	}
	return q
}

// DefaultTextLanguage is the language of a $text without $language, as
// in Parse Server.
const DefaultTextLanguage = "english"

// MaxTextTerm bounds a $term's length.
const MaxTextTerm = 1000

// text parses {"$search": {"$term": …, "$language": …, "$caseSensitive":
// false, "$diacriticSensitive": true}} on path. Parse Server refuses
// $caseSensitive true and $diacriticSensitive false on PostgreSQL, and so
// does parsemcp; it also refuses what Parse Server ignores (a key it does
// not know), and a term to_tsquery would fail on.
func (p *whereParser) text(path Path, v any, at string) (Expr, error) {
	if path.Type != parse.TypeString || len(path.Sub) > 0 {
		return nil, errAt(at, "$text applies to String fields; %q is %s", path, path.Type)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errAt(at, `$text takes {"$search": {"$term": "…"}}, got %s`, describe(v))
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != "$search" {
			return nil, errAt(at+"."+k, "unknown $text option %s (only $search)", k)
		}
	}
	s, ok := m["$search"].(map[string]any)
	if !ok {
		return nil, errAt(at+".$search", `$search takes an object {"$term": "…"}, got %s`, describe(m["$search"]))
	}
	sat := at + ".$search"
	t := Text{Path: path, Language: DefaultTextLanguage}
	for _, k := range slices.Sorted(maps.Keys(s)) {
		v, kat := s[k], sat+"."+k
		switch k {
		case "$term":
			term, ok := v.(string)
			if !ok || term == "" {
				return nil, errAt(kat, "$term takes a non-empty string, got %s", describe(v))
			}
			if len(term) > MaxTextTerm {
				return nil, errAt(kat, "$term longer than %d characters", MaxTextTerm)
			}
			t.Term = term
		case "$language":
			lang, ok := v.(string)
			if !ok {
				return nil, errAt(kat, "$language takes a string, got %s", describe(v))
			}
			if lang = strings.ToLower(lang); lang != "" {
				if !textsearch.Supported(lang) {
					return nil, errAt(kat, "unsupported $language %q (use %s)", v, strings.Join(textsearch.Languages, " or "))
				}
				t.Language = lang
			}
		case "$caseSensitive":
			b, ok := v.(bool)
			if !ok {
				return nil, errAt(kat, "$caseSensitive takes true or false, got %s", describe(v))
			}
			if b {
				return nil, errAt(kat, "$caseSensitive true is not supported (text search ignores case; use $regex)")
			}
		case "$diacriticSensitive":
			b, ok := v.(bool)
			if !ok {
				return nil, errAt(kat, "$diacriticSensitive takes true or false, got %s", describe(v))
			}
			if !b {
				return nil, errAt(kat, "$diacriticSensitive false is not supported (text search keeps diacritics)")
			}
		default:
			return nil, errAt(kat, "unknown $search option %s (use $term, $language, $caseSensitive, $diacriticSensitive)", k)
		}
	}
	if t.Term == "" {
		return nil, errAt(sat+".$term", "$term is required")
	}
	if _, err := textsearch.Parse(t.Language, t.Term); err != nil {
		return nil, errAt(sat+".$term", "%v (join words with & for all, | for any, <-> for a phrase, or quote a phrase: 'slow load')", err)
	}
	return t, nil
}
