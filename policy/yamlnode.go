package policy

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// pth is a location in the document: map keys, and "[i]" for sequence
// items.
type pth []string

func (p pth) k(seg string) pth { return append(p[:len(p):len(p)], seg) }

func (p pth) i(n int) pth { return p.k("[" + strconv.Itoa(n) + "]") }

func (p pth) String() string {
	var b strings.Builder
	for i, s := range p {
		if i > 0 && !strings.HasPrefix(s, "[") {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// source is the parsed document, kept to give errors a line number.
type source struct {
	name string
	root *yaml.Node // the top-level mapping, or nil
}

// line returns the line of the deepest node on p: the key of its last
// segment when it exists.
func (s *source) line(p pth) int {
	if s == nil || s.root == nil {
		return 0
	}
	n, best := s.root, s.root.Line
	for _, seg := range p {
		n = resolveAlias(n)
		switch {
		case n.Kind == yaml.MappingNode:
			var next *yaml.Node
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					best = n.Content[i].Line
					next = n.Content[i+1]
					break
				}
			}
			if next == nil {
				return best
			}
			n = next
		case n.Kind == yaml.SequenceNode && strings.HasPrefix(seg, "["):
			i, err := strconv.Atoi(strings.Trim(seg, "[]"))
			if err != nil || i < 0 || i >= len(n.Content) {
				return best
			}
			n = n.Content[i]
			best = n.Line
		default:
			return best
		}
	}
	return best
}

// pathAt returns the path of the mapping key on line whose text is key
// (any key on the line when key is ""), or nil.
func (s *source) pathAt(line int, key string) pth {
	if s == nil || s.root == nil {
		return nil
	}
	var found pth
	var walk func(n *yaml.Node, p pth, depth int) bool
	walk = func(n *yaml.Node, p pth, depth int) bool {
		if n == nil || depth > 64 {
			return false
		}
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Line == line && (key == "" || k.Value == key) {
					found = p.k(k.Value)
					return true
				}
				if walk(n.Content[i+1], p.k(k.Value), depth+1) {
					return true
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				if walk(c, p.i(i), depth+1) {
					return true
				}
			}
		}
		return false
	}
	walk(s.root, nil, 0)
	return found
}

func resolveAlias(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 16; i++ {
		n = n.Alias
	}
	return n
}

// present reports whether a yaml.Node field was given in the file.
func present(n *yaml.Node) bool { return n != nil && n.Kind != 0 }

// isNull reports whether n is an explicit null (or absent).
func isNull(n *yaml.Node) bool {
	n = resolveAlias(n)
	return !present(n) || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// Limits of a JSON-like value in the file (filters, schemas, templates).
const (
	maxValueDepth = 32
	maxValueNodes = 20000
)

// valueConv converts YAML nodes to the values encoding/json produces:
// map[string]any, []any, string, float64, bool and nil.
type valueConv struct {
	nodes int
}

func (c *valueConv) convert(n *yaml.Node, p pth, depth int) (any, *Error) {
	c.nodes++
	if c.nodes > maxValueNodes {
		return nil, &Error{Line: n.Line, Path: p.String(), Msg: fmt.Sprintf("value too large (more than %d nodes)", maxValueNodes)}
	}
	if depth > maxValueDepth {
		return nil, &Error{Line: n.Line, Path: p.String(), Msg: fmt.Sprintf("value nested deeper than %d levels", maxValueDepth)}
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.convert(n.Alias, p, depth+1)
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.convert(n.Content[0], p, depth)
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, &Error{Line: k.Line, Path: p.String(), Msg: "mapping keys must be plain strings"}
			}
			if k.Value == "<<" && k.ShortTag() == "!!merge" {
				return nil, &Error{Line: k.Line, Path: p.String(), Msg: "merge keys (<<) are not supported here"}
			}
			if _, dup := m[k.Value]; dup {
				return nil, &Error{Line: k.Line, Path: p.k(k.Value).String(), Msg: "key given twice"}
			}
			val, err := c.convert(v, p.k(k.Value), depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		out := make([]any, 0, len(n.Content))
		for i, e := range n.Content {
			val, err := c.convert(e, p.i(i), depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, val)
		}
		return out, nil
	case yaml.ScalarNode:
		return scalarValue(n, p)
	}
	return nil, &Error{Line: n.Line, Path: p.String(), Msg: "unsupported YAML node"}
}

func scalarValue(n *yaml.Node, p pth) (any, *Error) {
	switch n.ShortTag() {
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, &Error{Line: n.Line, Path: p.String(), Msg: err.Error()}
		}
		return b, nil
	case "!!int", "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return nil, &Error{Line: n.Line, Path: p.String(), Msg: fmt.Sprintf("%q is not a number", n.Value)}
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, &Error{Line: n.Line, Path: p.String(), Msg: fmt.Sprintf("%q is not a finite number", n.Value)}
		}
		return f, nil
	case "!!str", "!!timestamp", "!!binary":
		return n.Value, nil
	}
	return nil, &Error{Line: n.Line, Path: p.String(), Msg: fmt.Sprintf("unsupported YAML tag %s", n.Tag)}
}

// unknownFieldRE reads the KnownFields error of the YAML decoder.
var unknownFieldRE = regexp.MustCompile(`^line (\d+): field (.+) not found in type (\S+)$`)

var lineMsgRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
