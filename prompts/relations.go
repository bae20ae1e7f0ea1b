package prompts

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
)

// The arrows of the relationship diagram.
const (
	arrowPointer  = "──▶"
	arrowRelation = "══▶"
)

// edge is one Pointer or Relation field, from a class to its target.
type edge struct {
	from, field, to string
	relation        bool
}

func (e edge) left() string { return e.from + "." + e.field }

// edges lists the links between visible classes, sorted by class then field.
// The catalog has already dropped fields whose target is not visible.
func (c *catalog) edges() []edge {
	var out []edge
	for _, name := range c.names {
		s := c.schemas[name]
		fields := make([]string, 0, len(s.Fields))
		for fn := range s.Fields {
			fields = append(fields, fn)
		}
		sort.Strings(fields)
		for _, fn := range fields {
			f := s.Fields[fn]
			switch f.Type {
			case parse.TypePointer, parse.TypeRelation:
				out = append(out, edge{from: name, field: fn, to: f.TargetClass, relation: f.Type == parse.TypeRelation})
			}
		}
	}
	return out
}

// diagram renders edges one a line, arrows aligned:
//
//	Ticket.project  ──▶ Project
//	Project.members ══▶ _User (relation)
func diagram(es []edge) string {
	width := 0
	for _, e := range es {
		width = max(width, len([]rune(e.left())))
	}
	var b strings.Builder
	for _, e := range es {
		left := e.left()
		b.WriteString(left)
		b.WriteString(strings.Repeat(" ", width-len([]rune(left))+1))
		if e.relation {
			b.WriteString(arrowRelation + " " + e.to + " (relation)")
		} else {
			b.WriteString(arrowPointer + " " + e.to)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// splitClasses reads a comma-separated class list, trimmed, without empty
// entries or repeats, in the order given.
func splitClasses(v string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		p = strings.TrimSpace(p)
		if p == "" || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}

func parseRelations() Prompt {
	return Prompt{
		Name:        "parse_relations",
		Description: "Draw an ASCII diagram of the Pointer and Relation links between the classes you can see, optionally limited to some classes.",
		Args: []Arg{{
			Name:        "classes",
			Description: "Comma-separated class names (e.g. \"Ticket,Project\"); only links from or to these classes are drawn. Default: all classes.",
		}},
		Render: renderRelations,
	}
}

func renderRelations(ctx context.Context, env Env, raw map[string]string) (Rendered, error) {
	a := args(raw)
	subset := splitClasses(a.get("classes"))
	c, err := loadCatalog(ctx, env)
	if err != nil {
		return Rendered{}, err
	}
	in := map[string]bool{}
	for _, n := range subset {
		if !c.has(n) {
			return Rendered{}, unknownClass("classes", n)
		}
		in[n] = true
	}
	considered := c.names
	if len(subset) > 0 {
		considered = append([]string(nil), subset...)
		sort.Strings(considered)
	}
	var es []edge
	linked := map[string]bool{}
	for _, e := range c.edges() {
		if len(in) > 0 && !in[e.from] && !in[e.to] {
			continue
		}
		es = append(es, e)
		linked[e.from], linked[e.to] = true, true
	}
	var unlinked []string
	for _, n := range considered {
		if !linked[n] {
			unlinked = append(unlinked, n)
		}
	}

	var b strings.Builder
	desc := "Relationships between the Parse classes you can see"
	if len(subset) > 0 {
		desc = "Relationships of " + strings.Join(considered, ", ")
	}
	b.WriteString("Relationships between the Parse classes you can see, derived from their Pointer and Relation fields")
	if len(subset) > 0 {
		fmt.Fprintf(&b, ", limited to links from or to %s", quoteList(considered))
	}
	b.WriteString(".\n\n")
	b.WriteString("Legend:\n")
	b.WriteString("  A.field " + arrowPointer + " B             Pointer: each A object references at most one B object\n")
	b.WriteString("  A.field " + arrowRelation + " B (relation)  Relation: each A object can link to many B objects\n\n")
	if len(es) == 0 {
		b.WriteString("No Pointer or Relation fields link these classes.\n")
	} else {
		b.WriteString("```\n")
		b.WriteString(diagram(es))
		b.WriteString("```\n")
	}
	if len(unlinked) > 0 && len(es) > 0 {
		fmt.Fprintf(&b, "\nClasses with no links: %s.\n", strings.Join(unlinked, ", "))
	}
	b.WriteString(`
Using these links with the tools:
- Follow a pointer from A to B: add "include":["field"] to query_class or get_object on A (one level deep), or read the objectId in the pointer and call get_object {"class_name":"B","object_id":"<id>"}.
- Go the other way (the A objects that point to one B object): query_class or count_objects on A with "where":{"field":{"__type":"Pointer","className":"B","objectId":"<id>"}}.
- To filter A by fields of B, first query_class B to collect the matching objectIds, then query A with "where":{"field":{"$in":["<id1>","<id2>"]}}.
- Relation fields are stored outside the objects: this server cannot filter on them yet ($relatedTo is not supported), so treat them as links that exist in the schema.
`)
	return Rendered{Description: desc + ".", Text: b.String()}, nil
}
