package tools

import (
	"context"
	"encoding/json"
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
			Op:          parse.OpFind,
			Category:    CategoryQuery,
			Title:       "Query a class",
			Description: "Find objects of a class matching a where; next_call fetches the next page." + seeDocs,
			Permission:  agent.Readonly,
			Timeout:     30 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[queryArgs](map[string]*jsonschema.Schema{
				"where":                  whereSchema,
				"limit":                  intSchema("rows per page", 1, MaxQueryLimit, DefaultQueryLimit),
				"skip":                   skipSchema,
				"order":                  orderSchema,
				"keys":                   keysSchema,
				"include":                includeSchema,
				"apply_canonical_filter": canonicalSchema,
			}),
			Handler: queryClass,
		},
		{
			Name:        "count_objects",
			Op:          parse.OpCount,
			Category:    CategoryQuery,
			Title:       "Count objects",
			Description: "Count objects matching a where (cheap).",
			Permission:  agent.Readonly,
			Timeout:     20 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[countArgs](map[string]*jsonschema.Schema{"where": whereRef, "apply_canonical_filter": canonicalSchema}),
			Handler:     countObjects,
		},
		{
			Name:        "get_object",
			Op:          parse.OpGet,
			Category:    CategoryQuery,
			Title:       "Get an object",
			Description: "Fetch one object in full by objectId.",
			Permission:  agent.Readonly,
			Timeout:     10 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[getObjectArgs](map[string]*jsonschema.Schema{
				"object_id": objectIDSchema,
				"include":   includeSchema,
			}),
			Handler: getObject,
		},
		{
			Name:        "get_objects",
			Op:          parse.OpGet,
			Category:    CategoryQuery,
			Title:       "Get objects by id",
			Description: "Fetch objects by objectId.",
			Permission:  agent.Readonly,
			Timeout:     10 * time.Second,
			ReadOnly:    true,
			Input: schemaFor[getObjectsArgs](map[string]*jsonschema.Schema{
				"ids":     {Type: "array", Items: &jsonschema.Schema{Type: "string"}, MinItems: jsonschema.Ptr(1), MaxItems: jsonschema.Ptr(MaxGetObjects), Description: "objectIds"},
				"include": includeSchema,
			}),
			Handler: getObjects,
		},
		{
			Name:        "get_sample_objects",
			Op:          parse.OpFind,
			Category:    CategoryQuery,
			Title:       "Sample objects",
			Description: "The newest objects of a class.",
			Permission:  agent.Readonly,
			Timeout:     15 * time.Second,
			ReadOnly:    true,
			Input:       schemaFor[sampleArgs](map[string]*jsonschema.Schema{"limit": intSchema("", 1, MaxSampleLimit, DefaultSampleLimit)}),
			Handler:     getSampleObjects,
		},
	}
}

type queryArgs struct {
	ClassName string     `json:"class_name"`
	Where     Where      `json:"where,omitempty"`
	Limit     *int       `json:"limit,omitempty" jsonschema:"rows to return, 1 to 1000 (default 100)"`
	Skip      int        `json:"skip,omitempty"`
	Order     string     `json:"order,omitempty" jsonschema:"comma-separated sort keys, - for descending, e.g. -createdAt,title"`
	Keys      StringList `json:"keys,omitempty"`
	Include   StringList `json:"include,omitempty"`
	// ApplyCanonicalFilter false includes rows outside the class's
	// canonical filter (soft-deleted, drafts…).
	ApplyCanonicalFilter *bool `json:"apply_canonical_filter,omitempty"`
}

type countArgs struct {
	ClassName            string `json:"class_name"`
	Where                Where  `json:"where,omitempty"`
	ApplyCanonicalFilter *bool  `json:"apply_canonical_filter,omitempty"`
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
	ClassName string     `json:"class_name"`
	ObjectID  string     `json:"object_id"`
	Include   StringList `json:"include,omitempty"`
}

type getObjectsArgs struct {
	ClassName string     `json:"class_name"`
	IDs       []string   `json:"ids"`
	Include   StringList `json:"include,omitempty"`
}

type sampleArgs struct {
	ClassName string `json:"class_name"`
	Limit     *int   `json:"limit,omitempty"`
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
	if err := guardFullScan(ctx, c, q); err != nil {
		return nil, err
	}
	rows, hasMore, err := findRows(ctx, c.Scope, q, limit, sch, include, sub)
	if err != nil {
		return nil, err
	}
	elided, err := elideLargeJSON(rows, args.Keys)
	if err != nil {
		return nil, err
	}
	next := map[string]any{"class_name": sch.ClassName, "limit": limit}
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
	if rows == nil {
		rows = []json.RawMessage{}
	}
	res := &QueryResult{
		ClassName:              sch.ClassName,
		ResultCount:            len(rows),
		Results:                rows,
		OmittedLargeFields:     omitted,
		ElidedFields:           elided,
		TruncatedIncludeFields: c.Scope.TruncatedIncludeFields(),
		Page:                   newPage("query_class", next, limit, args.Skip, len(rows), hasMore),
		all:                    rows,
	}
	if args.ApplyCanonicalFilter != nil && !*args.ApplyCanonicalFilter {
		res.CanonicalFilterApplied = new(false)
	}
	return res, nil
}

// findRows reads a find's page (q reads limit+1 rows: one more says more
// follow) as JSON text: straight from the store without includes, else as
// objects whose pointers the scope replaces by the included objects.
func findRows(ctx context.Context, s *agent.Scope, q *query.Query, limit int, sch parse.Schema, include []string, sub map[string][]string) (rows []json.RawMessage, hasMore bool, err error) {
	if len(include) == 0 {
		rows, err := s.FindJSON(ctx, q)
		if err != nil {
			return nil, false, err
		}
		rows, hasMore = pageOf(rows, limit)
		return rows, hasMore, nil
	}
	objs, err := s.Find(ctx, q)
	if err != nil {
		return nil, false, err
	}
	objs, hasMore = pageOf(objs, limit)
	if err := s.Include(ctx, sch, objs, include, sub); err != nil {
		return nil, false, err
	}
	rows, err = agent.EncodeRows(objs)
	return rows, hasMore, err
}

// pageOf keeps the first limit rows and says whether there were more.
func pageOf[R any](rows []R, limit int) ([]R, bool) {
	if len(rows) > limit {
		return rows[:limit], true
	}
	return rows, false
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
	q := &query.Query{Class: sch.ClassName, Where: where}
	if err := guardFullScan(ctx, c, q); err != nil {
		return nil, err
	}
	n, err := c.Scope.Count(ctx, q)
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
	rows, err := getRows(ctx, c.Scope, sch, []string{args.ObjectID}, include)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, &Error{Code: CodeNotFound, Message: fmt.Sprintf("Object not found: %s#%s", sch.ClassName, args.ObjectID), Details: map[string]any{"kind": "object_not_found"}}
	}
	return &ObjectResult{ClassName: sch.ClassName, Object: rows[0]}, nil
}

// getRows reads objects by id as JSON text, as findRows reads a find's.
func getRows(ctx context.Context, s *agent.Scope, sch parse.Schema, ids []string, include []string) ([]json.RawMessage, error) {
	if len(include) == 0 {
		return s.GetJSON(ctx, sch.ClassName, ids, nil)
	}
	rows, err := s.Get(ctx, sch.ClassName, ids, nil)
	if err != nil {
		return nil, err
	}
	if err := s.Include(ctx, sch, rows, include, nil); err != nil {
		return nil, err
	}
	return agent.EncodeRows(rows)
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
	byID := make(map[string]parse.Object, len(rows))
	for _, r := range rows {
		byID[r[parse.FieldObjectID].(string)] = r
	}
	res := &ObjectsResult{ClassName: sch.ClassName, Missing: []string{}, Requested: len(ids)}
	for _, id := range ids {
		if o, ok := byID[id]; ok {
			res.found = append(res.found, o)
		} else {
			res.Missing = append(res.Missing, id)
		}
	}
	res.ElidedFields = elideLarge(res.found, nil)
	res.args = map[string]any{"class_name": sch.ClassName}
	if len(args.Include) > 0 {
		res.args["include"] = []string(args.Include)
	}
	res.keepRows(len(res.found))
	return res, nil
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
	rows = nonNil(rows)
	res := map[string]any{"class_name": sch.ClassName, "sample_count": len(rows), "results": rows}
	if el := elideLarge(rows, nil); len(el) > 0 {
		res["elided_fields"] = el
	}
	return res, nil
}

// Samples returns the limit most recently created objects the scope may
// see (also the parse://{class}/samples resource).
func Samples(ctx context.Context, s *agent.Scope, class string, limit int) ([]parse.Object, error) {
	return s.Find(ctx, &query.Query{Class: class, Order: []query.OrderKey{{Field: parse.FieldCreatedAt, Desc: true}}, Limit: limit})
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
