package policy

// Where-constraints in the file (class canonical filters, profile filters),
// checked for code-running operators and internal fields.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// forbiddenOps are operators that run code on the database; no filter in
// the file may use them, at any depth.
var forbiddenOps = map[string]bool{"$where": true, "$function": true, "$accumulator": true}

// where converts a where-constraint and checks it for forbidden
// operators and internal fields.
func (b *builder) where(n *yaml.Node, p pth) map[string]any {
	v, e := b.conv.convert(n, p, 0)
	if e != nil {
		b.add(e)
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		b.errAt(p, n.Line, "want a where-constraint mapping, e.g. {archived: {$ne: true}}")
		return nil
	}
	if msg, at := forbiddenIn(m, p); msg != "" {
		b.errAt(at, 0, "%s", msg)
		return nil
	}
	if msg, at := internalIn(m, p); msg != "" {
		b.errAt(at, 0, "%s", msg)
		return nil
	}
	return m
}

// forbiddenIn finds a code-running operator anywhere in v.
func forbiddenIn(v any, p pth) (string, pth) {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if forbiddenOps[k] {
				return fmt.Sprintf("%s runs code on the database and is not allowed in a policy filter", k), p.k(k)
			}
			if msg, at := forbiddenIn(x[k], p.k(k)); msg != "" {
				return msg, at
			}
		}
	case []any:
		for i, e := range x {
			if msg, at := forbiddenIn(e, p.i(i)); msg != "" {
				return msg, at
			}
		}
	}
	return "", nil
}

// internalIn finds an internal field named as a constraint key (also
// inside $or/$and/$nor, $inQuery/$select sub-queries and $relatedTo/$select
// keys).
func internalIn(m map[string]any, p pth) (string, pth) {
	bad := func(f string, at pth) (string, pth) {
		return fmt.Sprintf("%q is an internal field; a policy filter may not name it", f), at
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "$or", "$and", "$nor":
			arr, _ := v.([]any)
			for i, e := range arr {
				if sub, ok := e.(map[string]any); ok {
					if msg, at := internalIn(sub, p.k(k).i(i)); msg != "" {
						return msg, at
					}
				}
			}
			continue
		case "$relatedTo":
			if rm, ok := v.(map[string]any); ok {
				if key, ok := rm["key"].(string); ok && internalField(key) {
					return bad(key, p.k(k).k("key"))
				}
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			continue
		}
		if internalField(k) {
			return bad(k, p.k(k))
		}
		ops, ok := v.(map[string]any)
		if !ok {
			continue
		}
		for _, op := range slices.Sorted(maps.Keys(ops)) {
			om, ok := ops[op].(map[string]any)
			if !ok {
				continue
			}
			switch op {
			case "$inQuery", "$notInQuery":
				if w, ok := om["where"].(map[string]any); ok {
					if msg, at := internalIn(w, p.k(k).k(op).k("where")); msg != "" {
						return msg, at
					}
				}
			case "$select", "$dontSelect":
				if key, ok := om["key"].(string); ok && internalField(key) {
					return bad(key, p.k(k).k(op).k("key"))
				}
				if q, ok := om["query"].(map[string]any); ok {
					if w, ok := q["where"].(map[string]any); ok {
						if msg, at := internalIn(w, p.k(k).k(op).k("query").k("where")); msg != "" {
							return msg, at
						}
					}
				}
			}
		}
	}
	return "", nil
}
