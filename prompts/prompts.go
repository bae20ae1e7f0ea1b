// Package prompts holds the MCP prompts: named instruction templates a client
// fetches with prompts/get and hands to its model, which then calls the
// server's tools. The eight built-ins cover Parse conventions, the class
// relationship diagram and common analytics questions; applications add
// their own through a Registry.
//
// A prompt sees the database only through an Env, which lists the schemas
// the calling agent may see. Class arguments are checked against that list,
// and a class the agent cannot see is refused exactly like one that does not
// exist, so prompts cannot be used to probe for hidden classes.
package prompts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/parsemcp/parsemcp/parse"
)

// Arg describes one prompt argument. All values arrive as strings.
type Arg struct {
	Name, Description string
	Required          bool
}

// Env gives a prompt what it may read: only the schemas the calling agent
// may see.
type Env interface {
	Schemas(ctx context.Context) ([]parse.Schema, error)
}

// Rendered is a prompt's output: a description of this rendering and the
// text of the single user message.
type Rendered struct {
	Description, Text string
}

// Prompt is a named prompt. Render returns an *ArgError for a missing or
// invalid argument; any other error is an internal failure.
type Prompt struct {
	Name, Description string
	Args              []Arg
	Render            func(ctx context.Context, env Env, args map[string]string) (Rendered, error)
}

// ArgError is returned by Render for a missing or invalid argument (the
// server maps it to JSON-RPC -32602).
type ArgError struct{ Arg, Msg string }

func (e *ArgError) Error() string { return fmt.Sprintf("argument %q: %s", e.Arg, e.Msg) }

// msgRequired is the ArgError message of a missing required argument.
const msgRequired = "required, but missing"

func argErr(arg, format string, a ...any) *ArgError {
	return &ArgError{Arg: arg, Msg: fmt.Sprintf(format, a...)}
}

// now is the clock of recent_activity; tests replace it.
var now = time.Now

// args reads the (string) arguments of one rendering. Values are trimmed;
// an empty value counts as absent.
type args map[string]string

func (a args) get(name string) string { return strings.TrimSpace(a[name]) }

// require returns the named arguments in order, or an ArgError for the first
// one that is missing.
func (a args) require(names ...string) ([]string, error) {
	out := make([]string, len(names))
	for i, n := range names {
		v := a.get(n)
		if v == "" {
			return nil, &ArgError{Arg: n, Msg: msgRequired}
		}
		out[i] = v
	}
	return out, nil
}

// catalog is what the calling agent may see, indexed. Pointer and Relation
// fields whose target class is not visible are dropped, so nothing derived
// from a catalog can name a hidden class.
type catalog struct {
	names   []string // sorted
	schemas map[string]parse.Schema
}

func loadCatalog(ctx context.Context, env Env) (*catalog, error) {
	if env == nil {
		return nil, errors.New("prompts: no Env to read schemas from")
	}
	list, err := env.Schemas(ctx)
	if err != nil {
		return nil, fmt.Errorf("prompts: reading schemas: %w", err)
	}
	c := &catalog{schemas: make(map[string]parse.Schema, len(list))}
	for _, s := range list {
		if _, dup := c.schemas[s.ClassName]; dup || s.ClassName == "" {
			continue
		}
		c.schemas[s.ClassName] = s
		c.names = append(c.names, s.ClassName)
	}
	sort.Strings(c.names)
	for name, s := range c.schemas {
		fields := make(map[string]parse.Field, len(s.Fields))
		for fn, f := range s.Fields {
			if (f.Type == parse.TypePointer || f.Type == parse.TypeRelation) && !c.has(f.TargetClass) {
				continue
			}
			fields[fn] = f
		}
		s.Fields = fields
		c.schemas[name] = s
	}
	return c, nil
}

func (c *catalog) has(class string) bool {
	_, ok := c.schemas[class]
	return ok
}

// class returns the visible schema of class; an unknown and an invisible
// class get the same error.
// catalogClass loads the visible catalog and resolves the class named by
// argument arg.
func catalogClass(ctx context.Context, env Env, arg, class string) (parse.Schema, error) {
	c, err := loadCatalog(ctx, env)
	if err != nil {
		return parse.Schema{}, err
	}
	return c.class(arg, class)
}

func (c *catalog) class(arg, class string) (parse.Schema, error) {
	s, ok := c.schemas[class]
	if !ok {
		return parse.Schema{}, unknownClass(arg, class)
	}
	return s, nil
}

func unknownClass(arg, class string) *ArgError {
	return argErr(arg, "unknown class %q", class)
}

// field returns a visible field of a visible schema.
func field(arg string, s parse.Schema, name string) (parse.Field, error) {
	f, ok := s.Fields[name]
	if !ok {
		return parse.Field{}, argErr(arg, "class %s has no field %q", s.ClassName, name)
	}
	return f, nil
}

// pointerFields returns the names of s's Pointer fields, sorted.
func pointerFields(s parse.Schema) []string {
	var out []string
	for n, f := range s.Fields {
		if f.Type == parse.TypePointer {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// parseLimit reads an optional integer argument in [lo, hi].
func parseLimit(a args, name string, def, lo, hi int) (int, error) {
	v := a.get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, argErr(name, "must be a whole number from %d to %d, got %q", lo, hi, v)
	}
	return n, nil
}

// parseDateArg reads an ISO-8601 date (YYYY-MM-DD, midnight UTC) or
// date-time argument.
func parseDateArg(name, v string) (time.Time, error) {
	t, err := parse.ParseDate(v)
	if err != nil {
		return time.Time{}, argErr(name, "must be an ISO-8601 date (2024-01-31) or date-time (2024-01-31T09:30:00Z), got %q", v)
	}
	return t, nil
}

// js renders v as compact JSON for a tool-call example (map keys sorted, no
// HTML escaping). A string "<<name>>" becomes the bare placeholder <name>,
// for values that are not strings.
func js(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only plain maps, slices, strings and numbers are passed
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return strings.NewReplacer(`"<<`, "<", `>>"`, ">").Replace(out)
}

// call renders one tool call: `name {"arg":…}`.
func call(tool string, a map[string]any) string {
	return tool + " " + js(a)
}

func dateValue(t time.Time) map[string]any { return parse.Date(t) }

func pointerValue(class, id string) map[string]any { return parse.Pointer(class, id) }

// quoteList renders names as `a`, `b` and `c`.
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "`" + n + "`"
	}
	switch len(q) {
	case 0:
		return ""
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}
