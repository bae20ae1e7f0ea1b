package tools

import _ "embed"

// QueryLanguageURI is the resource documenting the where-language, the
// pipeline stages, paging and export columns once; tool descriptions point
// to it instead of repeating it.
const QueryLanguageURI = "parse://docs/query-language"

// QueryLanguage is the text of QueryLanguageURI (Markdown).
//
//go:embed docs/query-language.md
var QueryLanguage string

// seeDocs is the pointer each argument description ends with.
const seeDocs = " See " + QueryLanguageURI + "."
