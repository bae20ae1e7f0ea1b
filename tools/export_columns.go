package tools

// The columns of export_data: the column language (the columns and keys
// arguments) and its resolution against the visible schemas.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// columnSpec is one requested column: a field path and its header.
type columnSpec struct {
	field, header string
}

// exportColumn is a column resolved against the schema.
type exportColumn struct {
	header  string
	path    []string // field, then segments into an Object or an included object
	include string   // the pointer path the column reads through ("project.owner"), if any
	numeric bool     // a Number field: right-aligned in text tables
}

// exportSpecs returns the requested columns (nil: the defaults) and the
// argument that named them.
func exportSpecs(args exportArgs) ([]columnSpec, string, error) {
	raw := bytes.TrimSpace(args.Columns)
	hasColumns := len(raw) > 0 && string(raw) != "null"
	if hasColumns && args.Keys != nil {
		return nil, "", &Error{Code: CodeInvalidArgument, Message: "give either \"columns\" or \"keys\", not both", Details: map[string]any{"argument": "columns"}}
	}
	var specs []columnSpec
	argName := "columns"
	switch {
	case hasColumns:
		var err error
		if specs, err = parseColumns(raw); err != nil {
			return nil, "", err
		}
	case args.Keys != nil:
		argName = "keys"
		specs = []columnSpec{}
		for _, k := range args.Keys {
			k = strings.TrimSpace(k)
			if k != "" {
				specs = append(specs, columnSpec{field: k, header: k})
			}
		}
	default:
		return nil, argName, nil
	}
	if len(specs) == 0 {
		return nil, "", &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must name at least one column (omit it for every field)", argName), Details: map[string]any{"argument": argName}}
	}
	if len(specs) > MaxExportColumns {
		return nil, "", &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q names %d columns; at most %d", argName, len(specs), MaxExportColumns), Details: map[string]any{"argument": argName, "max": MaxExportColumns}}
	}
	return specs, argName, nil
}

func columnsError(at, format string, args ...any) error {
	return &Error{Code: CodeInvalidArgument, Message: at + ": " + fmt.Sprintf(format, args...), Details: map[string]any{"argument": "columns"}}
}

// parseColumns decodes the columns argument: an array whose entries are a
// path string, {"field": path, "as": header} or {path: header}; one object
// {path: header, …}; or a comma-separated string of paths.
func parseColumns(raw []byte) ([]columnSpec, error) {
	if raw[0] == '"' {
		var l StringList
		if err := json.Unmarshal(raw, &l); err != nil {
			return nil, columnsError("columns", "not a valid string")
		}
		specs := make([]columnSpec, 0, len(l))
		for _, f := range l {
			specs = append(specs, columnSpec{field: f, header: f})
		}
		return specs, nil
	}
	if raw[0] == '{' {
		return parseColumnMap(raw)
	}
	var items []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &items) != nil {
		return nil, columnsError("columns", `must be an array of columns, e.g. ["title", {"field": "project.name", "as": "Project"}]`)
	}
	specs := make([]columnSpec, 0, len(items))
	for i, item := range items {
		at := fmt.Sprintf("columns[%d]", i)
		var v any
		if err := json.Unmarshal(item, &v); err != nil {
			return nil, columnsError(at, "not valid JSON")
		}
		var s columnSpec
		switch x := v.(type) {
		case string:
			s = columnSpec{field: x, header: x}
		case map[string]any:
			if _, explicit := x["field"]; explicit {
				field, ok := x["field"].(string)
				if !ok {
					return nil, columnsError(at, `"field" must be a string path`)
				}
				s = columnSpec{field: field, header: field}
				for k, hv := range x {
					switch k {
					case "field":
					case "as":
						h, ok := hv.(string)
						if !ok {
							return nil, columnsError(at, `"as" must be a string header`)
						}
						if h != "" {
							s.header = h
						}
					default:
						return nil, columnsError(at, `unknown key %q (use "field" and "as")`, k)
					}
				}
				break
			}
			if len(x) != 1 {
				return nil, columnsError(at, `an object column is {"field": "<path>", "as": "<header>"} or a single {"<path>": "<header>"}; got %d keys`, len(x))
			}
			for field, hv := range x {
				h, ok := hv.(string)
				if !ok {
					return nil, columnsError(at, "the header of %q must be a string", field)
				}
				s = columnSpec{field: field, header: field}
				if h != "" {
					s.header = h
				}
			}
		default:
			return nil, columnsError(at, `must be a field path or {"field": "<path>", "as": "<header>"}, got %s`, jsonKindOf(v))
		}
		s.field = strings.TrimSpace(s.field)
		if s.field == "" {
			return nil, columnsError(at, "empty field path")
		}
		specs = append(specs, s)
	}
	return specs, nil
}

// parseColumnMap decodes the object form {"title": "Title", "project.name":
// "Project"}: one column per key, in the order written.
func parseColumnMap(raw []byte) ([]columnSpec, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // {
		return nil, columnsError("columns", "not valid JSON")
	}
	var specs []columnSpec
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, columnsError("columns", "not valid JSON")
		}
		field, _ := tok.(string)
		var hv any
		if err := dec.Decode(&hv); err != nil {
			return nil, columnsError("columns", "not valid JSON")
		}
		h, ok := hv.(string)
		if !ok {
			return nil, columnsError(fmt.Sprintf("columns.%s", field), "the header must be a string, got %s", jsonKindOf(hv))
		}
		s := columnSpec{field: strings.TrimSpace(field), header: field}
		if h != "" {
			s.header = h
		}
		if s.field == "" {
			return nil, columnsError("columns", "empty field path")
		}
		specs = append(specs, s)
	}
	return specs, nil
}

func jsonKindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	}
	return "an unexpected value"
}

// columnResolver checks columns against the visible schemas of the class
// and of the classes its pointers reach.
type columnResolver struct {
	ctx     context.Context
	scope   *agent.Scope
	sch     parse.Schema
	schemas map[string]*parse.Schema // class → visible schema (nil: not accessible)
}

func (r *columnResolver) schemaOf(class string) *parse.Schema {
	if sch, ok := r.schemas[class]; ok {
		return sch
	}
	var out *parse.Schema
	if sch, err := r.scope.Schema(r.ctx, class); err == nil {
		out = &sch
	}
	r.schemas[class] = out
	return out
}

// exportable reports whether a field gets a default column.
func exportable(name string, f parse.Field) bool {
	return name != parse.FieldACL && f.Type != parse.TypeRelation
}

// defaults lists every exportable field of sch in schema order; an
// included pointer is followed by the fields of its target (without the
// system fields: the pointer's own column is the objectId), recursively
// for the include paths that go deeper.
func (r *columnResolver) defaults(sch parse.Schema, prefix string, include []string) []exportColumn {
	var cols []exportColumn
	for _, name := range sch.FieldNames() {
		f, ok := sch.Fields[name]
		if !ok || !exportable(name, f) {
			continue
		}
		if prefix != "" && (name == parse.FieldObjectID || name == parse.FieldCreatedAt || name == parse.FieldUpdatedAt) {
			continue
		}
		path := prefix + name
		cols = append(cols, exportColumn{header: path, path: strings.Split(path, "."), include: strings.TrimSuffix(prefix, "."), numeric: f.Type == parse.TypeNumber})
		if f.Type != parse.TypePointer {
			continue
		}
		var deeper []string
		included := false
		for _, inc := range include {
			head, tail, dotted := strings.Cut(inc, ".")
			if head != name {
				continue
			}
			included = true
			if dotted {
				deeper = append(deeper, tail)
			}
		}
		if !included {
			continue
		}
		if ts := r.schemaOf(f.TargetClass); ts != nil && strings.Count(path, ".") < agent.MaxIncludeDepth {
			cols = append(cols, r.defaults(*ts, path+".", deeper)...)
		}
	}
	return cols
}

// resolve checks a requested column: each segment but the last names a
// Pointer (followed to its target class, at most agent.MaxIncludeDepth
// deep) or an Object (whose contents are free-form).
func (r *columnResolver) resolve(s columnSpec, at, argName string) (exportColumn, error) {
	fail := func(format string, args ...any) (exportColumn, error) {
		return exportColumn{}, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("%s %q: ", at, s.field) + fmt.Sprintf(format, args...), Details: map[string]any{"argument": argName, "column": s.field}}
	}
	path := strings.Split(s.field, ".")
	for _, seg := range path {
		if seg == "" {
			return fail("empty segment in the field path")
		}
	}
	col := exportColumn{header: s.header, path: path}
	cur := r.sch
	pointers := 0
	for i, seg := range path {
		f, ok := cur.Fields[seg]
		if !ok {
			// The class's (or, past a pointer, its target's) view lacks it.
			return exportColumn{}, query.DenyField(cur, seg, at, "")
		}
		if f.Type == parse.TypeRelation {
			return fail("Relation field %q of %s has no value in the row; export %s with a $relatedTo where instead", seg, cur.ClassName, f.TargetClass)
		}
		if i == len(path)-1 {
			col.numeric = f.Type == parse.TypeNumber
			return col, nil
		}
		switch f.Type {
		case parse.TypeObject:
			return col, nil
		case parse.TypePointer:
			if pointers++; pointers > agent.MaxIncludeDepth {
				return fail("a column follows at most %d pointers", agent.MaxIncludeDepth)
			}
			ts := r.schemaOf(f.TargetClass)
			if ts == nil {
				return fail("the %s objects %q points to are not accessible", f.TargetClass, strings.Join(path[:i+1], "."))
			}
			col.include = strings.Join(path[:i+1], ".")
			cur = *ts
		default:
			return fail("%q is a %s field: dotted paths reach into Pointer and Object fields", seg, f.Type)
		}
	}
	return col, nil
}
