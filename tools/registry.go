// Package tools holds the built-in tools, one file per tool named after
// it (tools/query_class.go declares query_class: its Tool, arguments,
// handler and result), the code several tools share in files by concept
// (args.go, page.go, projection.go, fullscan.go, group.go, pipeline.go,
// write.go, export_*.go), and the registry they live in. A tool never
// touches a store.Store: its handler gets an agent.Scope through the Call.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/internal/shape"
	"github.com/parsemcp/parsemcp/parse"
)

// The tool categories.
const (
	CategorySchema    = "schema"
	CategoryQuery     = "query"
	CategorySearch    = "search"
	CategoryAggregate = "aggregate"
	CategoryMutation  = "mutation"
	CategoryExport    = "export"
	CategoryDiscovery = "discovery"
	CategoryCustom    = "custom"
	// CategoryRemote holds the tools of remote agents (federation); the
	// server adds them, never the registry.
	CategoryRemote = "remote"
)

// Categories describes each category in one line.
var Categories = map[string]string{
	CategorySchema:    "Class introspection: which classes exist, their fields, types, pointers and indexes.",
	CategoryQuery:     "Read-only data access: find, count and fetch objects.",
	CategorySearch:    "Full-text search, prefix autocomplete and faceted counts.",
	CategoryAggregate: "Aggregation pipelines and group/distinct helpers.",
	CategoryMutation:  "Domain actions and writes, when the operator allows them.",
	CategoryExport:    "Bulk export as CSV, Markdown or a text table.",
	CategoryDiscovery: "The tool catalog itself.",
	CategoryCustom:    "Application-registered tools without a built-in category.",
	CategoryRemote:    "Tools of remote agents reached through the server's federation, named <type>-<id>__<tool>.",
}

// Handler runs a tool. It returns the result data (marshalled to JSON for
// the client) or an error (see AsError).
type Handler func(ctx context.Context, c *Call) (any, error)

// Tool is a registered tool.
type Tool struct {
	Name string
	// Title is the tool's human-readable name (MCP title).
	Title       string
	Description string
	Category    string
	Permission  agent.Permission
	// Timeout bounds one call; the context handed to the handler carries it
	// down to the database.
	Timeout time.Duration
	// ReadOnly marks tools that change nothing (the MCP readOnlyHint).
	ReadOnly bool
	// Destructive marks write tools that may destroy or overwrite data
	// (the MCP destructiveHint; meaningful only when ReadOnly is false).
	Destructive bool
	// Idempotent marks write tools whose repeated call with the same
	// arguments has no further effect (the MCP idempotentHint).
	Idempotent bool
	// Gate is the operator gate the tool needs (agent.GateNone for reads).
	Gate agent.GateKind
	// Op is the class-level operation the tool performs on its class_name
	// argument ("" when it takes none), for would_permit.
	Op parse.Op
	// MethodArg names the argument that holds the declared method the
	// tool calls on its class_name ("" when it calls none): would_permit
	// judges that method of the class, as dispatch would.
	MethodArg string
	Input     *jsonschema.Schema
	// CheckInput, when set, validates the arguments in full against an
	// input schema that is not ours (a remote agent's tool), before the
	// tool runs: CheckArgs refuses what it rejects with invalid_argument.
	CheckInput func(args json.RawMessage) error
	// Output is the shape of the tool's result (the MCP outputSchema):
	// with one, a result is also sent as structuredContent, and it must
	// match. Nil: the result travels as JSON text only.
	Output  *jsonschema.Schema
	Handler Handler
	// Remote marks a remote agent's tool (federation); Team is that
	// agent's team, which a team-scoped personal access token must match.
	Remote bool
	Team   string
	// OperatorOnly marks operator-side introspection: a model reaches it
	// only through a policy that exposes it (agent.Policy.Introspection).
	OperatorOnly bool
}

// Info is what the governance layer needs to know of the tool.
func (t *Tool) Info() agent.ToolInfo {
	return agent.ToolInfo{Name: t.Name, Permission: t.Permission, Gate: t.Gate, Op: t.Op, ReadOnly: t.ReadOnly, Remote: t.Remote, Team: t.Team, OperatorOnly: t.OperatorOnly}
}

// validToolName is ^[a-z][a-z0-9_]{0,63}$.
func validToolName(s string) bool { return shape.Lead(s, shape.Lower, toolNameChars, 64) }

var toolNameChars = shape.Lower.Or(shape.Digits, shape.Chars("_"))

// Registry is the set of tools a server offers. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*Tool
	// builtin names the built-in tools, which Register never replaces.
	builtin map[string]bool
	subs    map[int]func()
	next    int
}

// NewRegistry returns a registry holding the built-in tools.
func NewRegistry() *Registry {
	r := &Registry{tools: map[string]*Tool{}, builtin: map[string]bool{}, subs: map[int]func(){}}
	for _, t := range Builtin() {
		if err := r.register(t); err != nil {
			panic(err) // a built-in that does not validate is a programming error
		}
		r.builtin[t.Name] = true
	}
	return r
}

// ErrBuiltinTool is returned by Register for the name of a built-in tool:
// a built-in is never replaced, since the replacement would not carry the
// built-in's governance (its tier, gate, class operation and checks).
var ErrBuiltinTool = errors.New("a built-in tool cannot be replaced")

func (r *Registry) register(in *Tool) error {
	if in == nil {
		return errors.New("nil tool")
	}
	t := *in // the caller's value is not changed
	if !validToolName(t.Name) {
		return fmt.Errorf("tool name %q: use lowercase letters, digits and underscores", t.Name)
	}
	if t.Handler == nil {
		return fmt.Errorf("tool %s: nil handler", t.Name)
	}
	if r.builtin[t.Name] {
		return fmt.Errorf("tool %s: %w", t.Name, ErrBuiltinTool)
	}
	if t.Input == nil {
		t.Input = &jsonschema.Schema{Type: "object"}
	}
	if t.Category == "" {
		t.Category = CategoryCustom
	}
	if t.Timeout <= 0 {
		t.Timeout = 30 * time.Second
	}
	r.tools[t.Name] = &t
	return nil
}

// Register adds a tool, or replaces the application tool of the same
// name (as the reference guide's Tools.register does), and tells the
// OnChange subscribers (so sessions get tools/list_changed). The name of
// a built-in tool is refused with ErrBuiltinTool. The registry keeps its
// own copy of t.
func (r *Registry) Register(t *Tool) error {
	r.mu.Lock()
	err := r.register(t)
	subs := r.subscribers()
	r.mu.Unlock()
	if err == nil {
		for _, f := range subs {
			f()
		}
	}
	return err
}

func (r *Registry) subscribers() []func() {
	out := make([]func(), 0, len(r.subs))
	for _, f := range r.subs {
		out = append(out, f)
	}
	return out
}

// OnChange calls f after each Register; the returned function unsubscribes.
func (r *Registry) OnChange(f func()) func() {
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.next
	r.next++
	r.subs[id] = f
	return func() {
		r.mu.Lock()
		delete(r.subs, id)
		r.mu.Unlock()
	}
}

// Get returns a tool by name.
func (r *Registry) Get(name string) (*Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// List returns the tools, sorted by category then name.
func (r *Registry) List() []*Tool {
	r.mu.RLock()
	out := make([]*Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	r.mu.RUnlock()
	order := []string{CategoryDiscovery, CategorySchema, CategoryQuery, CategorySearch, CategoryAggregate, CategoryExport, CategoryMutation, CategoryCustom}
	rank := func(c string) int {
		if i := slices.Index(order, c); i >= 0 {
			return i
		}
		return len(order)
	}
	sort.Slice(out, func(i, j int) bool {
		if ri, rj := rank(out[i].Category), rank(out[j].Category); ri != rj {
			return ri < rj
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Allowed returns the tools agent a may call (agent.MayCall: its tier,
// tool filter, the operator gates and its token's scope), optionally only
// those of a category (case-insensitive; an unknown category yields none).
func (r *Registry) Allowed(a *agent.Agent, gates agent.Gates, category string) []*Tool {
	var out []*Tool
	for _, t := range r.List() {
		if a.MayCall(t.Info(), gates) != nil {
			continue
		}
		if category != "" && !strings.EqualFold(category, t.Category) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// builtins are the constructors of the built-in tools, one a tool, each
// in the tool's own file.
var builtins = []func() *Tool{
	listToolsTool,
	getAllSchemasTool, getSchemaTool,
	queryClassTool, countObjectsTool, getObjectTool, getObjectsTool, getSampleObjectsTool,
	textSearchTool, autocompleteTool, facetedSearchTool,
	exportDataTool,
	explainQueryTool,
	aggregateTool, groupByTool, groupByDateTool, distinctTool,
	createObjectTool, updateObjectTool, deleteObjectTool, createClassTool, deleteClassTool,
	callMethodTool,
	describeAgentTool, wouldPermitTool,
}

// Builtin returns fresh copies of the built-in tools.
func Builtin() []*Tool {
	out := make([]*Tool, 0, len(builtins))
	for _, mk := range builtins {
		t := mk()
		if t.Output == nil {
			t.Output = ObjectOutput
		}
		out = append(out, t)
	}
	return out
}

// schemaFor infers an input schema from an argument struct and applies
// per-property overrides.
func schemaFor[T any](overrides map[string]*jsonschema.Schema) *jsonschema.Schema {
	s, err := jsonschema.For[T](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("tools: schema for %T: %v", *new(T), err))
	}
	for _, p := range s.Properties {
		// Optional arguments are omitted to get their default: a plain
		// type, not a null union (forms and CLIs cannot send null).
		if len(p.Types) == 2 && p.Types[0] == "null" {
			p.Type, p.Types = p.Types[1], nil
		}
	}
	for k, v := range overrides {
		if prev, ok := s.Properties[k]; ok && v.Description == "" && v.Enum == nil {
			cp := *v // overrides are shared between tools
			cp.Description = prev.Description
			v = &cp
		}
		s.Properties[k] = v
	}
	// Unknown arguments are refused by decodeArgs with their name; the
	// schema does not repeat it (additionalProperties costs every tool).
	s.AdditionalProperties = nil
	return s
}
