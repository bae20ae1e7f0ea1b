package tools_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/parsemcp/parsemcp/tools"
)

// The built-in tools' arguments are what a form or a CLI can fill in and a
// model can read: plain JSON types (no null unions: an optional argument
// is omitted for its default), integers bounded with a minimum (and a
// limit with its default and maximum), closed sets as enums, and an
// example for each structured argument (an object or a list of objects),
// given or pointed to ("see query_class", "see get_schema").
func TestArgumentSchemasAreComplete(t *testing.T) {
	for _, tl := range tools.Builtin() {
		if tl.Title == "" || tl.Output == nil {
			t.Errorf("%s: title %q, output schema %v", tl.Name, tl.Title, tl.Output)
		}
		for name, p := range tl.Input.Properties {
			at := tl.Name + "." + name
			if slices.Contains(p.Types, "null") || p.Type == "null" {
				t.Errorf("%s: a null union (%v)", at, p.Types)
			}
			switch p.Type {
			case "integer":
				if p.Minimum == nil {
					t.Errorf("%s: an integer without a minimum", at)
				}
				if name == "limit" && (p.Default == nil || p.Maximum == nil) {
					t.Errorf("%s: a limit without its default and maximum", at)
				}
			case "object":
				if len(p.Examples) == 0 && !strings.HasPrefix(p.Description, "see ") {
					t.Errorf("%s: an object argument with no example (%q)", at, p.Description)
				}
			case "array":
				if p.Items != nil && p.Items.Type == "object" && len(p.Examples) == 0 && !strings.HasPrefix(p.Description, "see ") {
					t.Errorf("%s: a list of objects with no example (%q)", at, p.Description)
				}
			}
			if p.Enum != nil && p.Default == nil && !slices.Contains(tl.Input.Required, name) && name != "category" {
				t.Errorf("%s: an optional closed set without its default", at)
			}
		}
	}
	// The closed sets the tools take are enums.
	for at, want := range map[string][]any{
		"export_data.format":     {"csv", "markdown", "table"},
		"query_class.format":     {"json", "csv", "markdown", "table"},
		"group_by.operation":     {"count", "sum", "avg", "min", "max"},
		"group_by.sort":          {"value_desc", "value_asc", "key_asc", "key_desc"},
		"group_by_date.interval": {"second", "minute", "hour", "day", "week", "month", "quarter", "year"},
		"distinct.sort":          {"asc", "desc"},
	} {
		tool, arg, _ := strings.Cut(at, ".")
		var got []any
		for _, tl := range tools.Builtin() {
			if tl.Name == tool {
				got = tl.Input.Properties[arg].Enum
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: enum %v, want %v", at, got, want)
		}
	}
}
