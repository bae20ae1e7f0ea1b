package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// Query limits.
const (
	DefaultQueryLimit  = 100
	MaxQueryLimit      = 1000
	MaxSkip            = 10_000_000
	MaxGetObjects      = 50
	DefaultSampleLimit = 5
	MaxSampleLimit     = 20
)

func queryTools() []*Tool {
	return []*Tool{
		{
			Name:        "query_class",
			Category:    CategoryQuery,
			Description: fmt.Sprintf("Find objects of a class with a Parse where-constraint. Returns up to limit rows (default %d, max %d) with pagination; when more rows exist, next_call holds the exact arguments for the next page. Use keys to return only some fields, include to inline pointed-to objects (\"project.owner\" goes deeper), order like \"-createdAt,title\".", DefaultQueryLimit, MaxQueryLimit),
			Permission:  agent.Readonly,
			Timeout:     30 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[queryArgs](map[string]*jsonschema.Schema{
				"where":   whereSchema,
				"keys":    listSchema("Only these fields (objectId, createdAt and updatedAt are always returned). \"pointer.field\" projects an included object."),
				"include": listSchema("Pointer fields whose objects to fetch inline; \"project.owner\" includes through an included object (at most 3 deep)."),
			}),
			Handler: queryClass,
		},
		{
			Name:        "count_objects",
			Category:    CategoryQuery,
			Description: "Count the objects of a class, optionally matching a Parse where-constraint. Cheap: use it to size a class before querying.",
			Permission:  agent.Readonly,
			Timeout:     20 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[countArgs](map[string]*jsonschema.Schema{"where": whereSchema}),
			Handler:     countObjects,
		},
		{
			Name:        "get_object",
			Category:    CategoryQuery,
			Description: "Fetch one object by its objectId. include inlines pointed-to objects (one level).",
			Permission:  agent.Readonly,
			Timeout:     10 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[getObjectArgs](map[string]*jsonschema.Schema{
				"include": listSchema("Pointer fields whose objects to fetch inline."),
			}),
			Handler: getObject,
		},
		{
			Name:        "get_objects",
			Category:    CategoryQuery,
			Description: fmt.Sprintf("Fetch up to %d objects of one class by objectId in a single call (cheaper than repeated get_object). The result maps each found id to its object and lists the ids that were not found.", MaxGetObjects),
			Permission:  agent.Readonly,
			Timeout:     10 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[getObjectsArgs](map[string]*jsonschema.Schema{
				"ids":     {Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(MaxGetObjects), Description: "objectIds to fetch (duplicates are ignored)."},
				"include": listSchema("Pointer fields whose objects to fetch inline."),
			}),
			Handler: getObjects,
		},
		{
			Name:        "get_sample_objects",
			Category:    CategoryQuery,
			Description: fmt.Sprintf("Return a few recent objects of a class (default %d, max %d) to see what its data looks like.", DefaultSampleLimit, MaxSampleLimit),
			Permission:  agent.Readonly,
			Timeout:     15 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[sampleArgs](nil),
			Handler:     getSampleObjects,
		},
	}
}

type queryArgs struct {
	ClassName string     `json:"class_name" jsonschema:"the Parse class to query"`
	Where     Where      `json:"where,omitempty"`
	Limit     *int       `json:"limit,omitempty" jsonschema:"rows to return, 1 to 1000 (default 100)"`
	Skip      int        `json:"skip,omitempty" jsonschema:"rows to skip, for pagination"`
	Order     string     `json:"order,omitempty" jsonschema:"comma-separated sort keys, - for descending, e.g. -createdAt,title; a path into an Object field (address.city) works too"`
	Keys      StringList `json:"keys,omitempty"`
	Include   StringList `json:"include,omitempty"`
	// ApplyCanonicalFilter false includes rows outside the class's
	// canonical filter (soft-deleted, drafts…).
	ApplyCanonicalFilter *bool `json:"apply_canonical_filter,omitempty" jsonschema:"false to include rows outside the class's canonical filter (see get_schema); default true"`
}

type countArgs struct {
	ClassName            string `json:"class_name" jsonschema:"the Parse class to count"`
	Where                Where  `json:"where,omitempty"`
	ApplyCanonicalFilter *bool  `json:"apply_canonical_filter,omitempty" jsonschema:"false to count rows outside the class's canonical filter too; default true"`
}

// canonicalScope is the scope a call runs in: the caller may opt out of
// the classes' canonical filters, never out of anything else.
func canonicalScope(s *agent.Scope, apply *bool) *agent.Scope {
	if apply != nil && !*apply {
		return s.WithoutCanonicalFilter()
	}
	return s
}

// largeFieldKeys returns the keys of a query that names none: every
// visible field but the class's large fields, and the large fields left
// out (nil, nil when the class declares none).
func largeFieldKeys(scope *agent.Scope, sch parse.Schema) (keys, omitted []string) {
	m := scope.ClassMeta(sch.ClassName)
	if m == nil || len(m.LargeFields) == 0 {
		return nil, nil
	}
	for _, name := range sch.FieldNames() {
		if _, ok := sch.Fields[name]; !ok || name == parse.FieldACL {
			continue
		}
		if slices.Contains(m.LargeFields, name) {
			omitted = append(omitted, name)
			continue
		}
		keys = append(keys, name)
	}
	if len(omitted) == 0 {
		return nil, nil
	}
	return keys, omitted
}

type getObjectArgs struct {
	ClassName string     `json:"class_name" jsonschema:"the Parse class"`
	ObjectID  string     `json:"object_id" jsonschema:"the objectId"`
	Include   StringList `json:"include,omitempty"`
}

type getObjectsArgs struct {
	ClassName string     `json:"class_name" jsonschema:"the Parse class"`
	IDs       []string   `json:"ids"`
	Include   StringList `json:"include,omitempty"`
}

type sampleArgs struct {
	ClassName string `json:"class_name" jsonschema:"the Parse class"`
	Limit     *int   `json:"limit,omitempty" jsonschema:"how many objects, 1 to 20 (default 5)"`
}

func intArg(name string, v *int, def, lo, hi int) (int, error) {
	if v == nil {
		return def, nil
	}
	if *v < lo || *v > hi {
		return 0, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q must be between %d and %d, got %d", name, lo, hi, *v), Details: map[string]any{"argument": name, "min": lo, "max": hi}}
	}
	return *v, nil
}

// projection validates keys and include against the visible schema.
func projection(sch parse.Schema, keys, include StringList) (top []string, sub map[string][]string, inc []string, err error) {
	if keys != nil {
		ks, err := query.ParseKeys(sch, keys)
		if err != nil {
			return nil, nil, nil, err
		}
		top, sub = agent.SplitKeys(ks)
	}
	for _, f := range include {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		head, _, _ := strings.Cut(f, ".") // deeper segments are checked by the scope
		fd, ok := sch.Fields[head]
		if !ok {
			return nil, nil, nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("include %q: unknown field on class %s", f, sch.ClassName), Details: map[string]any{"argument": "include"}}
		}
		if fd.Type != parse.TypePointer {
			return nil, nil, nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("include %q: only Pointer fields can be included; it is a %s", f, fd.Type), Details: map[string]any{"argument": "include"}}
		}
		inc = append(inc, f)
	}
	incHeads := make([]string, len(inc))
	for i, f := range inc {
		incHeads[i], _, _ = strings.Cut(f, ".")
	}
	for head := range sub {
		if sch.Fields[head].Type == parse.TypePointer && !containsStr(incHeads, head) {
			return nil, nil, nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("keys %q.…: add %q to include to project the pointed-to object", head, head), Details: map[string]any{"argument": "keys"}}
		}
	}
	return top, sub, inc, nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func queryClass(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[queryArgs](c.Args)
	if err != nil {
		return nil, err
	}
	c = c.withScope(canonicalScope(c.Scope, args.ApplyCanonicalFilter))
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	spec, err := parseFind(ctx, c.Scope, sch, args.Where, args.Order, args.Limit, DefaultQueryLimit, MaxQueryLimit, args.Skip)
	if err != nil {
		return nil, err
	}
	where, whereObj, order, limit := spec.where, spec.whereObj, spec.order, spec.limit
	keys, sub, include, err := projection(sch, args.Keys, args.Include)
	if err != nil {
		return nil, err
	}
	var omitted []string
	if args.Keys == nil {
		keys, omitted = largeFieldKeys(c.Scope, sch)
	}
	q := &query.Query{Class: sch.ClassName, Where: where, Order: order, Limit: limit + 1, Skip: args.Skip, Keys: keys}
	rows, err := c.Scope.Find(ctx, q)
	if err != nil {
		return nil, err
	}
	hasMore := len(rows) > limit
	if hasMore {
		rows = rows[:limit]
	}
	if err := c.Scope.Include(ctx, sch, rows, include, sub); err != nil {
		return nil, err
	}
	res := map[string]any{
		"class_name":   sch.ClassName,
		"result_count": len(rows),
		"pagination":   map[string]any{"limit": limit, "skip": args.Skip, "has_more": hasMore},
		"results":      nonNil(rows),
	}
	if len(omitted) > 0 {
		res["omitted_large_fields"] = omitted
	}
	if tr := c.Scope.TruncatedIncludeFields(); len(tr) > 0 {
		res["truncated_include_fields"] = tr
	}
	if args.ApplyCanonicalFilter != nil && !*args.ApplyCanonicalFilter {
		res["canonical_filter_applied"] = false
	}
	if hasMore {
		next := map[string]any{"class_name": sch.ClassName, "limit": limit, "skip": args.Skip + limit}
		if whereObj != nil {
			next["where"] = whereObj
		}
		if args.Order != "" {
			next["order"] = args.Order
		}
		if args.Keys != nil {
			next["keys"] = []string(args.Keys)
		}
		if len(args.Include) > 0 {
			next["include"] = []string(args.Include)
		}
		if args.ApplyCanonicalFilter != nil {
			next["apply_canonical_filter"] = *args.ApplyCanonicalFilter
		}
		res["next_call"] = map[string]any{"tool": "query_class", "arguments": next}
	}
	return res, nil
}

func nonNil(rows []parse.Object) []parse.Object {
	if rows == nil {
		return []parse.Object{}
	}
	return rows
}

func countObjects(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[countArgs](c.Args)
	if err != nil {
		return nil, err
	}
	c = c.withScope(canonicalScope(c.Scope, args.ApplyCanonicalFilter))
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	where, _, err := args.Where.parse(ctx, c.Scope, sch)
	if err != nil {
		return nil, err
	}
	n, err := c.Scope.Count(ctx, &query.Query{Class: sch.ClassName, Where: where})
	if err != nil {
		return nil, err
	}
	return map[string]any{"class_name": sch.ClassName, "count": n}, nil
}

// classObject checks the class_name and object_id arguments of a tool
// that acts on one object and returns the class's schema.
func classObject(ctx context.Context, s *agent.Scope, class, id string) (parse.Schema, error) {
	sch, err := classSchema(ctx, s, class)
	if err != nil {
		return parse.Schema{}, err
	}
	if err := validID("object_id", id); err != nil {
		return parse.Schema{}, err
	}
	return sch, nil
}

func validID(arg, id string) error {
	if !parse.ValidObjectID(id) {
		return &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument %q: %q is not an objectId (letters and digits)", arg, id), Details: map[string]any{"argument": arg}}
	}
	return nil
}

func getObject(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[getObjectArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classObject(ctx, c.Scope, args.ClassName, args.ObjectID)
	if err != nil {
		return nil, err
	}
	_, _, include, err := projection(sch, nil, args.Include)
	if err != nil {
		return nil, err
	}
	rows, err := c.Scope.Get(ctx, sch.ClassName, []string{args.ObjectID}, nil)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &Error{Code: CodeNotFound, Message: fmt.Sprintf("Object not found: %s#%s", sch.ClassName, args.ObjectID), Details: map[string]any{"kind": "object_not_found"}}
	}
	if err := c.Scope.Include(ctx, sch, rows, include, nil); err != nil {
		return nil, err
	}
	return map[string]any{"class_name": sch.ClassName, "object": rows[0]}, nil
}

func getObjects(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[getObjectsArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	var ids []string
	seen := map[string]bool{}
	for _, id := range args.IDs {
		if err := validID("ids", id); err != nil {
			return nil, err
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, &Error{Code: CodeInvalidArgument, Message: "argument \"ids\" must hold at least one objectId", Details: map[string]any{"argument": "ids"}}
	}
	if len(ids) > MaxGetObjects {
		return nil, &Error{Code: CodeInvalidArgument, Message: fmt.Sprintf("argument \"ids\" holds %d distinct ids; at most %d per call (use query_class with {\"objectId\":{\"$in\":[…]}} for more)", len(ids), MaxGetObjects), Details: map[string]any{"argument": "ids", "max": MaxGetObjects}}
	}
	_, _, include, err := projection(sch, nil, args.Include)
	if err != nil {
		return nil, err
	}
	rows, err := c.Scope.Get(ctx, sch.ClassName, ids, nil)
	if err != nil {
		return nil, err
	}
	if err := c.Scope.Include(ctx, sch, rows, include, nil); err != nil {
		return nil, err
	}
	objects := make(map[string]any, len(rows))
	for _, r := range rows {
		objects[r[parse.FieldObjectID].(string)] = r
	}
	missing := []string{}
	for _, id := range ids {
		if _, ok := objects[id]; !ok {
			missing = append(missing, id)
		}
	}
	return map[string]any{
		"class_name": sch.ClassName,
		"objects":    objects,
		"missing":    missing,
		"requested":  len(ids),
		"found":      len(objects),
	}, nil
}

func getSampleObjects(ctx context.Context, c *Call) (any, error) {
	args, err := decodeArgs[sampleArgs](c.Args)
	if err != nil {
		return nil, err
	}
	sch, err := classSchema(ctx, c.Scope, args.ClassName)
	if err != nil {
		return nil, err
	}
	limit, err := intArg("limit", args.Limit, DefaultSampleLimit, 1, MaxSampleLimit)
	if err != nil {
		return nil, err
	}
	rows, err := Samples(ctx, c.Scope, sch.ClassName, limit)
	if err != nil {
		return nil, err
	}
	return map[string]any{"class_name": sch.ClassName, "sample_count": len(rows), "results": nonNil(rows)}, nil
}

// Samples returns the limit most recently created objects the scope may
// see (also the parse://{class}/samples resource).
func Samples(ctx context.Context, s *agent.Scope, class string, limit int) ([]parse.Object, error) {
	return s.Find(ctx, &query.Query{Class: class, Order: []query.OrderKey{{Field: parse.FieldCreatedAt, Desc: true}}, Limit: limit})
}

// DescribeSchema is the get_schema result for a class the scope may see
// (also the parse://{class}/schema resource).
func DescribeSchema(ctx context.Context, s *agent.Scope, class string) (map[string]any, error) {
	sch, err := s.Schema(ctx, class)
	if err != nil {
		return nil, err
	}
	return describeSchema(s, sch), nil
}
