package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/demo"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/tools"
)

// Mode is one way of running an operation.
type Mode string

// The modes, from the bare SQL outwards. Direct is the baseline; Mem and
// HTTP are "the server" (a real SDK client calling the tool).
const (
	// Direct runs the store's SQL on its DB()/Pool() and decodes the rows
	// with the store's codec.
	Direct Mode = "direct"
	// Store calls store.Store (schema cache + the same SQL + decode).
	Store Mode = "store"
	// Tool calls the tool's handler with an agent.Scope and marshals its
	// result to JSON: the server's own work without the MCP SDK.
	Tool Mode = "tool"
	// Mem is a real MCP client (official Go SDK) over the in-memory
	// transport calling the tool.
	Mem Mode = "mcp-mem"
	// HTTP is the same over Streamable HTTP (httptest server, loopback TCP).
	HTTP Mode = "mcp-http"
)

// Modes lists every mode in table order.
var Modes = []Mode{Direct, Store, Tool, Mem, HTTP}

// The operations.
const (
	OpQuery = "query_class"
	OpCount = "count_objects"
	OpGroup = "aggregate $group"
)

// Operations lists the operations in table order.
var Operations = []string{OpQuery, OpCount, OpGroup}

// The workload: realistic agent calls on the largest class.
const (
	benchClass = demo.ClassTicket
	enumField  = "status"
	enumValue  = "open"
	orderBy    = "-createdAt"
	pageLimit  = 100
)

// Case is one operation prepared for one Session: a runner per mode
// (absent when the mode does not apply) and a function that reduces a
// runner's result to a canonical string, to check that every mode computes
// the same answer.
type Case struct {
	Op   string
	Tool string
	Args map[string]any
	Run  map[Mode]func(ctx context.Context) (any, error)
	Sum  map[Mode]func(v any) (string, error)
	// Order lists the modes to measure (default Modes, those with a runner).
	Order []Mode
	// Result is the tool's JSON result, as Check saw it (nil before).
	Result []byte
}

func (c *Case) modes() []Mode {
	order := c.Order
	if order == nil {
		order = Modes
	}
	var out []Mode
	for _, m := range order {
		if _, ok := c.Run[m]; ok {
			out = append(out, m)
		}
	}
	return out
}

// Skipped is returned by NewCase when the operation cannot run yet.
type Skipped struct{ Reason string }

func (s *Skipped) Error() string { return s.Reason }

// NewCase prepares op for s. It returns a *Skipped error when the server
// does not offer the operation's tool.
func NewCase(ctx context.Context, s *Session, op string) (*Case, error) {
	st := s.Env.Store
	sch, err := st.Schema(ctx, benchClass) // the raw schema, as the store uses it
	if err != nil {
		return nil, err
	}
	c := &Case{Op: op, Run: map[Mode]func(context.Context) (any, error){}, Sum: map[Mode]func(any) (string, error){}}
	acl := s.Agent.Identity.ACLFilter() // what the scope adds
	where := map[string]any{enumField: enumValue}

	switch op {
	case OpQuery:
		c.Tool = "query_class"
		c.Args = map[string]any{"class_name": benchClass, "where": where, "order": orderBy, "limit": pageLimit}
		w, err := query.ParseWhere(sch, where)
		if err != nil {
			return nil, err
		}
		order, err := query.ParseOrder(sch, orderBy)
		if err != nil {
			return nil, err
		}
		// What query_class builds (one row more than the page, to know
		// whether there is a next page) after the scope added the ACL.
		q := &query.Query{Class: benchClass, Where: w, Order: order, Limit: pageLimit + 1, ReadACL: acl}
		c.Run[Direct] = func(ctx context.Context) (any, error) { return s.Env.SQL.Find(ctx, sch, q) }
		c.Run[Store] = func(ctx context.Context) (any, error) { return st.Find(ctx, q) }
		sumRows := func(v any) (string, error) { return idList(v.([]parse.Object)), nil }
		c.Sum[Direct], c.Sum[Store] = sumRows, sumRows
		sumJSON := func(m map[string]any) (string, error) {
			rows, ok := m["results"].([]any)
			if !ok {
				return "", fmt.Errorf("no results array in %v", keys(m))
			}
			objs := make([]parse.Object, len(rows))
			for i, r := range rows {
				objs[i], _ = r.(map[string]any)
			}
			return idList(objs), nil
		}
		c.setServer(s, sumJSON)
	case OpCount:
		c.Tool = "count_objects"
		c.Args = map[string]any{"class_name": benchClass, "where": where}
		w, err := query.ParseWhere(sch, where)
		if err != nil {
			return nil, err
		}
		q := &query.Query{Class: benchClass, Where: w, ReadACL: acl}
		c.Run[Direct] = func(ctx context.Context) (any, error) { return s.Env.SQL.Count(ctx, q) }
		c.Run[Store] = func(ctx context.Context) (any, error) { return st.Count(ctx, q) }
		sumN := func(v any) (string, error) { return strconv.FormatInt(v.(int64), 10), nil }
		c.Sum[Direct], c.Sum[Store] = sumN, sumN
		c.setServer(s, func(m map[string]any) (string, error) {
			n, ok := m["count"].(float64)
			if !ok {
				return "", fmt.Errorf("no count in %v", keys(m))
			}
			return strconv.FormatInt(int64(n), 10), nil
		})
	case OpGroup:
		c.Tool = "aggregate"
		ok, err := s.HasTool(ctx, c.Tool)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &Skipped{Reason: "the aggregate tool is not registered yet (tools/list does not offer it); $group not measured"}
		}
		stages := []any{
			map[string]any{"$group": map[string]any{"_id": "$" + enumField, "count": map[string]any{"$sum": 1}}},
		}
		c.Args = map[string]any{"class_name": benchClass, "pipeline": stages}
		// What the aggregate tool runs: the pipeline with its automatic
		// final {"$limit": tools.AutoLimit} (it has no $limit of its own).
		raw, err := json.Marshal(append(slices.Clone(stages), map[string]any{"$limit": tools.AutoLimit}))
		if err != nil {
			return nil, err
		}
		resolve := func(class string) (parse.Schema, error) { return st.Schema(ctx, class) }
		p, err := query.ParsePipelineJSON(sch, resolve, raw)
		if err != nil {
			return nil, err
		}
		c.Run[Direct] = func(ctx context.Context) (any, error) { return s.Env.SQL.Aggregate(ctx, p, acl) }
		c.Run[Store] = func(ctx context.Context) (any, error) { return st.Aggregate(ctx, benchClass, p, acl) }
		sumRows := func(v any) (string, error) {
			rows := v.([]map[string]any)
			list := make([]any, len(rows))
			for i, r := range rows {
				list[i] = r
			}
			return sumGroups(map[string]any{"results": list})
		}
		c.Sum[Direct], c.Sum[Store] = sumRows, sumRows
		c.setServer(s, sumGroups)
	default:
		return nil, fmt.Errorf("unknown operation %q", op)
	}
	return c, nil
}

// setServer adds the Tool, Mem and HTTP runners; sum reduces the tool's
// JSON result.
func (c *Case) setServer(s *Session, sum func(map[string]any) (string, error)) {
	raw, err := json.Marshal(c.Args)
	if err != nil {
		panic(err)
	}
	t, ok := s.Server.Tools().Get(c.Tool)
	if ok {
		reg := s.Server.Tools()
		c.Run[Tool] = func(ctx context.Context) (any, error) {
			// What the server's tool handler does between the SDK and the
			// wire: the guard chain's timeout, a scope, the handler, JSON.
			ctx, cancel := context.WithTimeout(ctx, t.Timeout)
			defer cancel()
			data, err := t.Handler(ctx, &tools.Call{Scope: agent.NewScope(s.Agent, s.Env.Store), Args: raw, Registry: reg})
			if err != nil {
				return nil, err
			}
			return json.Marshal(data)
		}
		c.Sum[Tool] = func(v any) (string, error) {
			var m map[string]any
			if err := json.Unmarshal(v.([]byte), &m); err != nil {
				return "", err
			}
			return sum(m)
		}
	}
	call := func(cs *mcp.ClientSession) func(ctx context.Context) (any, error) {
		return func(ctx context.Context) (any, error) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.Tool, Arguments: c.Args})
			if err != nil {
				return nil, err
			}
			if res.IsError {
				text := ""
				if len(res.Content) > 0 {
					if tc, ok := res.Content[0].(*mcp.TextContent); ok {
						text = tc.Text
					}
				}
				return nil, fmt.Errorf("%s: tool error: %s", c.Tool, text)
			}
			var out any
			if len(res.Content) == 1 {
				if tc, ok := res.Content[0].(*mcp.TextContent); ok {
					if err := json.Unmarshal([]byte(tc.Text), &out); err != nil {
						return nil, err
					}
				}
			}
			return out, nil
		}
	}
	sumSC := func(v any) (string, error) {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("structured content is %T", v)
		}
		return sum(m)
	}
	c.Run[Mem], c.Sum[Mem] = call(s.Mem), sumSC
	if s.HTTP != nil {
		c.Run[HTTP], c.Sum[HTTP] = call(s.HTTP), sumSC
	}
}

// Check runs every mode once and fails unless they all give the same answer.
func (c *Case) Check(ctx context.Context) error {
	want, wantMode := "", Mode("")
	for _, m := range c.modes() {
		v, err := c.Run[m](ctx)
		if err != nil {
			return fmt.Errorf("%s %s: %w", c.Op, m, err)
		}
		if b, ok := v.([]byte); ok && m == Tool {
			c.Result = b
		}
		got, err := c.Sum[m](v)
		if err != nil {
			return fmt.Errorf("%s %s: reading the result: %w", c.Op, m, err)
		}
		if wantMode == "" {
			want, wantMode = got, m
			continue
		}
		if got != want {
			return fmt.Errorf("%s: %s and %s disagree:\n  %s: %.200s\n  %s: %.200s", c.Op, wantMode, m, wantMode, want, m, got)
		}
	}
	return nil
}

func idList(rows []parse.Object) string {
	if len(rows) > pageLimit {
		rows = rows[:pageLimit]
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i], _ = r[parse.FieldObjectID].(string)
	}
	return strings.Join(ids, ",")
}

func groupList(m map[string]int64) string {
	parts := make([]string, 0, len(m))
	for k, n := range m {
		parts = append(parts, k+"="+strconv.FormatInt(n, 10))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// sumGroups reads an aggregate result leniently: an array of group rows
// (under "results", or the first array in the result) keyed by _id,
// objectId (Parse Server renames _id) or the grouped field, with a numeric
// "count".
func sumGroups(m map[string]any) (string, error) {
	rows, ok := m["results"].([]any)
	if !ok {
		for _, k := range keys(m) {
			if a, isArr := m[k].([]any); isArr {
				rows, ok = a, true
				break
			}
		}
	}
	if !ok {
		return "", fmt.Errorf("no array of groups in %v", keys(m))
	}
	out := map[string]int64{}
	for _, r := range rows {
		g, _ := r.(map[string]any)
		var id any
		for _, k := range []string{"_id", "objectId", enumField} {
			if v, has := g[k]; has {
				id = v
				break
			}
		}
		var n float64
		switch x := g["count"].(type) {
		case float64:
			n = x
		case int64:
			n = float64(x)
		case int:
			n = float64(x)
		default:
			return "", fmt.Errorf("group %v has no numeric count", g)
		}
		key := ""
		if id != nil {
			key = fmt.Sprint(id)
		}
		out[key] = int64(n)
	}
	return groupList(out), nil
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
