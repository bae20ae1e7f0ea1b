package tools

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func schemaTools() []*Tool {
	return []*Tool{
		{
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
		},
		{
			Name:        "get_schema",
			Title:       "Class schema",
			Category:    CategorySchema,
			Description: "One class in detail: fields, targets, permissions, methods.",
			Permission:  agent.Readonly,
			Timeout:     10 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[classArgs](nil),
			Handler:     getSchema,
		},
	}
}

type getAllSchemasArgs struct {
	Names  StringList `json:"names,omitempty" jsonschema:"only these classes (exact names)"`
	Prefix string     `json:"prefix,omitempty" jsonschema:"class name prefix"`
}

type classArgs struct {
	ClassName string `json:"class_name"`
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

func getSchema(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[classArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	return describeSchema(c.Scope, sch, c.config().ExposeExplain), nil
}

// describeSchema is the get_schema result (also the parse://{class}/schema
// resource): the agent's view of the class with the operator's metadata.
func describeSchema(scope *agent.Scope, sch parse.Schema, exposeIndexes bool) map[string]any {
	meta := scope.ClassMeta(sch.ClassName)
	fields := make([]any, 0, len(sch.Fields))
	for _, name := range sch.FieldNames() {
		f, ok := sch.Fields[name]
		if !ok {
			continue
		}
		entry := map[string]any{"name": name, "type": string(f.Type), "required": f.Required}
		if f.TargetClass != "" {
			entry["target_class"] = f.TargetClass
		}
		if f.DefaultValue != nil {
			entry["default_value"] = f.DefaultValue
		}
		switch f.Type {
		case parse.TypePointer:
			entry["query_hint"] = fmt.Sprintf(`Pointer to %s. Equality: {"%s":"<objectId>"} or {"%s":{"__type":"Pointer","className":"%s","objectId":"<id>"}}. $in/$nin take bare objectIds: {"%s":{"$in":["<id1>","<id2>"]}}. Add include:["%s"] to fetch the %s objects inline.`,
				f.TargetClass, name, name, f.TargetClass, name, name, f.TargetClass)
		case parse.TypeRelation:
			entry["query_hint"] = fmt.Sprintf("Relation to %s: a many-to-many link stored outside the row; it cannot be filtered with a plain where on this field.", f.TargetClass)
		case parse.TypeDate:
			entry["query_hint"] = fmt.Sprintf(`Compare with {"%s":{"$gte":{"__type":"Date","iso":"2025-01-01T00:00:00.000Z"}}}.`, name)
		case parse.TypeACL:
			entry["description"] = "Access control list: who may read and write this object."
		}
		if meta != nil {
			if fm := meta.Fields[name]; fm != nil {
				if fm.Description != "" {
					entry["description"] = fm.Description
				}
				if len(fm.Enum) > 0 {
					entry["allowed_values"] = fm.Enum
				}
			}
			if slices.Contains(meta.LargeFields, name) {
				entry["large"] = true
			}
		}
		fields = append(fields, entry)
	}
	var indexes []any
	names := make([]string, 0, len(sch.Indexes))
	for n := range sch.Indexes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		// An index on a field the agent cannot see would name the field.
		if !indexVisible(sch, sch.Indexes[n]) {
			continue
		}
		indexes = append(indexes, map[string]any{"name": n, "keys": sch.Indexes[n]})
	}
	kind := "custom"
	if parse.IsSystemClass(sch.ClassName) {
		kind = "built_in"
	}
	out := map[string]any{
		"class_name":              sch.ClassName,
		"type":                    kind,
		"fields":                  fields,
		"class_level_permissions": sch.CLP,
	}
	if exposeIndexes {
		out["indexes"] = append([]any{map[string]any{"name": "_id_", "keys": map[string]int{"objectId": 1}}}, indexes...)
	}
	if meta != nil {
		// The operator's field lists name only fields of the agent's view:
		// a protected field, or a pointer into a class the agent cannot
		// see, must read as a field that does not exist.
		if meta.Description != "" {
			out["description"] = meta.Description
		}
		if meta.AgentFields != nil {
			out["agent_fields"] = visibleFields(sch, meta.AgentFields)
		}
		if join := visibleFields(sch, meta.JoinFields); len(join) > 0 {
			out["join_fields"] = join
		}
		if large := visibleFields(sch, meta.LargeFields); len(large) > 0 {
			out["large_fields"] = large
			out["large_fields_hint"] = "Large fields are left out of query_class results unless named in keys."
		}
		if len(meta.CanonicalFilter) > 0 {
			if slices.ContainsFunc(whereFieldNames(meta.CanonicalFilter, nil), func(f string) bool { _, ok := sch.Fields[f]; return !ok }) {
				out["canonical_filter"] = "set by the operator on fields this agent cannot see"
			} else {
				out["canonical_filter"] = meta.CanonicalFilter
			}
			out["canonical_filter_hint"] = "Applied to every read but get_object; pass apply_canonical_filter:false to query_class, count_objects or aggregate to include the other rows."
		}
		if meta.Tenant != nil {
			if _, ok := sch.Fields[meta.Tenant.Field]; ok {
				out["tenant_field"] = meta.Tenant.Field
			}
		}
	}
	if methods := MethodsFor(scope, sch.ClassName); len(methods) > 0 {
		out["methods"] = methods
	}
	return out
}

// visibleFields keeps the names of names that are fields of the agent's
// view sch (nil stays nil; an allowlist with nothing visible is empty).
func visibleFields(sch parse.Schema, names []string) []string {
	if names == nil {
		return nil
	}
	out := []string{}
	for _, n := range names {
		if _, ok := sch.Fields[n]; ok {
			out = append(out, n)
		}
	}
	return out
}

// indexVisible reports whether every key of an index is a field of the
// agent's view sch (Parse's storage names of objectId, the timestamps and
// pointers included).
func indexVisible(sch parse.Schema, keys map[string]int) bool {
	for k := range keys {
		switch k {
		case "_id", "_created_at", "_updated_at":
			continue
		}
		if _, ok := sch.Fields[strings.TrimPrefix(k, "_p_")]; !ok {
			return false
		}
	}
	return true
}

// whereFieldNames appends the field names a where-constraint tests (at
// any depth of $or, $and and $nor) to acc.
func whereFieldNames(where map[string]any, acc []string) []string {
	for k, v := range where {
		switch k {
		case "$or", "$and", "$nor":
			list, _ := v.([]any)
			for _, e := range list {
				if sub, ok := e.(map[string]any); ok {
					acc = whereFieldNames(sub, acc)
				}
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			continue
		}
		head, _, _ := strings.Cut(k, ".")
		acc = append(acc, head)
	}
	return acc
}
