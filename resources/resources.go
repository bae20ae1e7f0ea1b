// Package resources serves the parse:// resources: for every class an agent
// may see, parse://{class_name}/schema, /count and /samples.
package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/tools"
)

// Scheme is the URI scheme of the resources.
const Scheme = "parse://"

// The resource kinds.
const (
	KindSchema  = "schema"
	KindCount   = "count"
	KindSamples = "samples"
)

// Kinds lists the kinds in display order.
var Kinds = []string{KindSchema, KindCount, KindSamples}

// SampleLimit is how many objects parse://{class}/samples returns.
const SampleLimit = 5

// MIMEType of every resource.
const MIMEType = "application/json"

// Template describes one URI template.
type Template struct {
	URITemplate, Name, Description string
}

// TemplateVar is the variable of the URI templates: class_name, as the
// tools and prompts name a class. OldTemplateVar ({className}) is still
// accepted where a client cites a template (completion).
const (
	TemplateVar    = "class_name"
	OldTemplateVar = "className"
)

// IsTemplate reports whether uri is one of the URI templates, in the
// current or the old spelling.
func IsTemplate(uri string) bool {
	for _, v := range []string{TemplateVar, OldTemplateVar} {
		if strings.HasPrefix(uri, Scheme+"{"+v+"}/") {
			return true
		}
	}
	return false
}

// Templates are the three URI templates (static metadata: they do not
// reveal which classes exist).
func Templates() []Template {
	return []Template{
		{Scheme + "{class_name}/schema", "Parse class schema", "Fields, types, pointer targets, permissions and indexes of a class."},
		{Scheme + "{class_name}/count", "Parse class object count", "How many objects of the class you can see."},
		{Scheme + "{class_name}/samples", "Parse class sample objects", fmt.Sprintf("The %d most recently created objects of the class you can see.", SampleLimit)},
	}
}

// Resource is one concrete resource.
type Resource struct {
	URI, Name, Description string
	// MIMEType is MIMEType unless said otherwise.
	MIMEType string
}

// DocMIMEType is the type of the documentation resources.
const DocMIMEType = "text/markdown"

// Docs are the static documentation resources, the same for every agent:
// what the tool descriptions point to instead of repeating it.
func Docs() []Resource {
	return []Resource{{URI: tools.QueryLanguageURI, Name: "query-language", MIMEType: DocMIMEType,
		Description: "The where-language, aggregate pipeline stages, paging (next_call) and export_data columns the tools take."}}
}

// MIMETypeOf is the MIME type of a resource URI.
func MIMETypeOf(uri string) string {
	for _, d := range Docs() {
		if d.URI == uri {
			return d.MIMEType
		}
	}
	return MIMEType
}

// URI builds the resource URI of a class and kind.
func URI(class, kind string) string { return Scheme + class + "/" + kind }

// ErrBadURI is a URI that is not a parse:// resource.
var ErrBadURI = errors.New("invalid resource URI")

// ParseURI splits parse://{class_name}/{kind}.
func ParseURI(uri string) (class, kind string, err error) {
	rest, ok := strings.CutPrefix(uri, Scheme)
	if !ok {
		return "", "", fmt.Errorf("%w: %q does not start with %s", ErrBadURI, uri, Scheme)
	}
	class, kind, ok = strings.Cut(rest, "/")
	if !ok || strings.Contains(kind, "/") {
		return "", "", fmt.Errorf("%w: %q: expected parse://{class_name}/{schema|count|samples}", ErrBadURI, uri)
	}
	switch kind {
	case KindSchema, KindCount, KindSamples:
	default:
		return "", "", fmt.Errorf("%w: unknown resource kind %q (use schema, count or samples)", ErrBadURI, kind)
	}
	if !parse.ValidClassName(class) {
		return "", "", fmt.Errorf("%w: %q is not a class name", ErrBadURI, class)
	}
	return class, kind, nil
}

// List returns the resources of every class the scope may see.
func List(ctx context.Context, s *agent.Scope) ([]Resource, error) {
	names, err := s.ClassNames(ctx)
	if err != nil {
		return nil, err
	}
	out := append(make([]Resource, 0, 3*len(names)+1), Docs()...)
	for _, n := range names {
		for _, k := range Kinds {
			out = append(out, Resource{URI: URI(n, k), Name: n + " " + k, Description: fmt.Sprintf("The %s of the Parse class %s.", k, n), MIMEType: MIMEType})
		}
	}
	return out, nil
}

// Read returns the JSON text of a resource. Errors are *agent.ClassError
// for a class the scope cannot see, ErrBadURI for a malformed URI.
func Read(ctx context.Context, s *agent.Scope, uri string) (string, error) {
	if uri == tools.QueryLanguageURI {
		return tools.QueryLanguage, nil
	}
	class, kind, err := ParseURI(uri)
	if err != nil {
		// A well-formed URI whose class name could never exist is answered
		// like an unknown (or hidden) class.
		if rest, ok := strings.CutPrefix(uri, Scheme); ok {
			if c, k, ok := strings.Cut(rest, "/"); ok && c != "" && (k == KindSchema || k == KindCount || k == KindSamples) {
				return "", &agent.ClassError{Class: c}
			}
		}
		return "", err
	}
	var v any
	switch kind {
	case KindSchema:
		v, err = tools.DescribeSchema(ctx, s, class)
	case KindCount:
		var n int64
		n, err = s.Count(ctx, &query.Query{Class: class})
		v = map[string]any{"class_name": class, "count": n}
	case KindSamples:
		var rows []parse.Object
		rows, err = tools.Samples(ctx, s, class, SampleLimit)
		if rows == nil {
			rows = []parse.Object{}
		}
		v = map[string]any{"class_name": class, "sample_count": len(rows), "results": rows}
	}
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// Complete returns the visible class names starting with prefix, for
// completion of the {class_name} template argument.
func Complete(ctx context.Context, s *agent.Scope, prefix string) ([]string, error) {
	names, err := s.ClassNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	lp := strings.ToLower(prefix)
	for _, n := range names {
		if strings.HasPrefix(strings.ToLower(n), lp) {
			out = append(out, n)
		}
	}
	return out, nil
}
