package tools

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func getAllSchemasTool() *Tool {
	return &Tool{
		Name:        "get_all_schemas",
		Title:       "All schemas",
		Category:    CategorySchema,
		Description: "Start here: the classes you can access, with field types.",
		Permission:  agent.Readonly,
		Timeout:     15 * time.Second,
		ReadOnly:    true,
		Input: schemaFor[getAllSchemasArgs](map[string]*jsonschema.Schema{
			"names": listSchema("exact class names"),
		}),
		Handler: getAllSchemas,
	}
}

type getAllSchemasArgs struct {
	Names  StringList `json:"names,omitempty" jsonschema:"only these classes (exact names)"`
	Prefix string     `json:"prefix,omitempty" jsonschema:"class name prefix"`
}

// typeLabel renders a field type compactly: "Pointer<Project>".
func typeLabel(f parse.Field) string {
	if f.TargetClass != "" {
		return fmt.Sprintf("%s<%s>", f.Type, f.TargetClass)
	}
	return string(f.Type)
}

func getAllSchemas(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[getAllSchemasArgs](c.Args)
	if err != nil {
		return nil, err
	}
	schemas, err := c.Scope.Schemas(ctx)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range args.Names {
		want[n] = true
	}
	builtIn, custom := []any{}, []any{}
	for _, sch := range schemas {
		if len(want) > 0 && !want[sch.ClassName] {
			continue
		}
		if args.Prefix != "" && !strings.HasPrefix(sch.ClassName, args.Prefix) {
			continue
		}
		fields := map[string]string{}
		for name, f := range sch.Fields {
			fields[name] = typeLabel(f)
		}
		entry := map[string]any{"name": sch.ClassName, "field_count": len(fields), "fields": fields}
		if m := c.Scope.ClassMeta(sch.ClassName); m != nil && m.Description != "" {
			entry["description"] = m.Description
		}
		if parse.IsSystemClass(sch.ClassName) {
			builtIn = append(builtIn, entry)
		} else {
			custom = append(custom, entry)
		}
	}
	return map[string]any{
		"total":    len(builtIn) + len(custom),
		"built_in": builtIn,
		"custom":   custom,
		"note":     "Use get_schema(class_name) for required flags, pointer query hints and indexes; count_objects to size a class before querying it.",
	}, nil
}
