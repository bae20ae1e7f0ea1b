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

func getSchemaTool() *Tool {
	return &Tool{
		Name:        "get_schema",
		Title:       "Class schema",
		Category:    CategorySchema,
		Description: "One class in detail: fields, targets, permissions, methods.",
		Permission:  agent.Readonly,
		Timeout:     10 * time.Second,
		ReadOnly:    true,
		Input:       schemaFor[classArgs](nil),
		Handler:     getSchema,
	}
}

type classArgs struct {
	ClassName string `json:"class_name"`
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

// DescribeSchema is the get_schema result for a class the scope may see,
// without index names (the parse://{class_name}/schema resource).
func DescribeSchema(ctx context.Context, s *agent.Scope, class string) (map[string]any, error) {
	sch, err := s.Schema(ctx, class)
	if err != nil {
		return nil, err
	}
	return describeSchema(s, sch, false), nil
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

// MethodsFor lists the methods declared on class that the scope's agent
// may call (its tier reaches them and its method filter admits them), for
// get_schema: name, description, permission, instance, destructive,
// supports_dry_run and the parameters schema. It returns nil when there
// are none or the class is not accessible. The field template of a method
// (which fields it writes) is not disclosed.
func MethodsFor(scope *agent.Scope, class string) []map[string]any {
	if scope == nil || !scope.Accessible(class) {
		return nil
	}
	a := scope.Agent()
	var out []map[string]any
	for _, m := range a.Policy.Catalog.MethodsOf(class) {
		if !a.Can(m.Permission) || !a.Policy.Methods.AllowsMethod(class, m.Name) {
			continue
		}
		params := m.Parameters
		if params == nil {
			params = &jsonschema.Schema{Type: "object"}
		}
		entry := map[string]any{
			"name":             m.Name,
			"permission":       m.Permission.String(),
			"instance":         m.Instance,
			"destructive":      m.Destructive,
			"supports_dry_run": m.SupportsDryRun,
			"parameters":       params,
		}
		if m.Description != "" {
			entry["description"] = m.Description
		}
		out = append(out, entry)
	}
	return out
}
