package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
)

// MaxIncludeDepth bounds include paths ("a.b.c" has depth 3).
const MaxIncludeDepth = 3

// Include replaces the Pointer values of the included paths in rows with
// the objects they point to, fetched through this scope (so the target
// class's visibility, CLP, ACL and protected fields apply). A dotted path
// ("project.owner") includes through the included objects. As in Parse
// Server, a pointer whose object the agent cannot read (its ACL, a
// filter) or that names no object is removed from the row; a pointer into
// a class the agent may not read at all stays a Pointer. subKeys optionally projects
// the objects of a top-level included field to the listed keys.
func (s *Scope) Include(ctx context.Context, sch parse.Schema, rows []parse.Object, paths []string, subKeys map[string][]string) error {
	return s.include(ctx, sch, rows, paths, subKeys, "include", 1)
}

func (s *Scope) include(ctx context.Context, sch parse.Schema, rows []parse.Object, paths []string, subKeys map[string][]string, at string, depth int) error {
	var heads []string
	tails := map[string][]string{}
	for _, p := range paths {
		head, tail, dotted := strings.Cut(p, ".")
		if !slices.Contains(heads, head) {
			heads = append(heads, head)
		}
		if dotted {
			if depth+strings.Count(tail, ".") >= MaxIncludeDepth {
				return &query.Error{Path: at, Msg: fmt.Sprintf("%q: include paths are at most %d pointers deep", p, MaxIncludeDepth)}
			}
			tails[head] = append(tails[head], tail)
		}
	}
	for _, field := range heads {
		f, ok := sch.Fields[field]
		if !ok {
			return query.DenyField(sch, field, at, "")
		}
		if f.Type != parse.TypePointer {
			return &query.Error{Path: at, Msg: fmt.Sprintf("%q: only Pointer fields can be included; it is a %s", field, f.Type)}
		}
		seen := map[string]bool{}
		var ids []string
		for _, row := range rows {
			if _, id, ok := parse.PointerID(row[field]); ok && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		var keys []string
		sk := subKeys[field]
		if m := s.meta(f.TargetClass); len(sk) == 0 && m != nil && len(m.JoinFields) > 0 {
			// The operator's join projection, unless the caller named the
			// included fields it wants.
			sk = m.JoinFields
			if tsch, err := s.Schema(ctx, f.TargetClass); err == nil {
				var left []string
				for name := range tsch.Fields {
					if !parse.IsSystemField(name) && !slices.Contains(sk, name) {
						left = append(left, name)
					}
				}
				if len(left) > 0 {
					slices.Sort(left)
					if s.truncated == nil {
						s.truncated = map[string][]string{}
					}
					s.truncated[field] = left
				}
			}
		}
		if len(sk) > 0 {
			keys = slices.Clone(sk)
			for _, t := range tails[field] { // the nested pointers must be read
				head, _, _ := strings.Cut(t, ".")
				if !slices.Contains(keys, head) {
					keys = append(keys, head)
				}
			}
		}
		if len(ids) > 1 && parse.MasterKeyOnly(f.TargetClass, parse.OpFind) && !s.principal().Master {
			// Several ids make Parse Server's include a find, which this
			// class allows only the master key: pointers stay pointers.
			continue
		}
		var targets []parse.Object
		if len(ids) > 0 {
			var err error
			targets, err = s.Get(ctx, f.TargetClass, ids, keys)
			var ce *ClassError
			var de *DeniedError
			if errors.As(err, &ce) || errors.As(err, &de) {
				continue // not readable: pointers stay pointers
			}
			if err != nil {
				return err
			}
		}
		if nested := tails[field]; len(nested) > 0 {
			tsch, err := s.Schema(ctx, f.TargetClass)
			if err != nil {
				continue
			}
			// Validated even when no row points anywhere, so a bad path is an
			// error whatever the data.
			if err := s.include(ctx, tsch, targets, nested, nil, at, depth+1); err != nil {
				return err
			}
		}
		byID := make(map[string]parse.Object, len(targets))
		for _, t := range targets {
			t["__type"] = "Object"
			t["className"] = f.TargetClass
			byID[t[parse.FieldObjectID].(string)] = t
		}
		for _, row := range rows {
			if _, id, ok := parse.PointerID(row[field]); ok {
				if t, found := byID[id]; found {
					row[field] = t
				} else {
					delete(row, field) // unreadable or missing: Parse Server drops the key
				}
			}
		}
	}
	return nil
}

// SplitKeys separates top-level keys from "pointer.sub" keys, which project
// included objects. A pointer with sub keys is kept in the top-level keys.
func SplitKeys(keys []string) (top []string, sub map[string][]string) {
	if keys == nil {
		return nil, nil
	}
	sub = map[string][]string{}
	for _, k := range keys {
		head, rest, dotted := strings.Cut(k, ".")
		if dotted {
			sub[head] = append(sub[head], rest)
			if !slices.Contains(top, head) {
				top = append(top, head)
			}
			continue
		}
		if !slices.Contains(top, k) {
			top = append(top, k)
		}
	}
	return top, sub
}
