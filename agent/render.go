package agent

import (
	"fmt"

	"github.com/parsemcp/parsemcp/parse"
)

// RenderTemplate builds the fields an update or create method writes from
// its template (Method.Set) and the call's arguments. Every
// {"$arg": "name"} in the template, at any depth, is replaced by the
// argument's value; everything else is copied as it is. A top-level field
// whose value is exactly {"$arg": name} for an argument the call did not
// pass is left out (an optional parameter); a reference nested deeper to a
// missing argument is an error, since leaving out part of a value would
// change its meaning. The template and the arguments are not modified.
func RenderTemplate(set map[string]any, args map[string]any) (map[string]any, error) {
	out := make(map[string]any, len(set))
	for field, tv := range set {
		if name, ok, err := templateArgRef(tv); err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		} else if ok {
			v, given := args[name]
			if !given {
				continue
			}
			out[field] = parse.CloneJSON(v)
			continue
		}
		v, err := renderTemplateValue(tv, args, field)
		if err != nil {
			return nil, err
		}
		out[field] = v
	}
	return out, nil
}

// templateArgRef reports whether v is an argument reference and which.
func templateArgRef(v any) (name string, ok bool, err error) {
	m, isMap := v.(map[string]any)
	if !isMap {
		return "", false, nil
	}
	ref, has := m["$arg"]
	if !has {
		return "", false, nil
	}
	name, isStr := ref.(string)
	if len(m) != 1 || !isStr || name == "" {
		return "", false, fmt.Errorf(`an argument reference is exactly {"$arg": "<parameter name>"}`)
	}
	return name, true, nil
}

func renderTemplateValue(v any, args map[string]any, at string) (any, error) {
	name, ok, err := templateArgRef(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", at, err)
	}
	if ok {
		a, given := args[name]
		if !given {
			return nil, fmt.Errorf("%s: argument %q is required here", at, name)
		}
		return parse.CloneJSON(a), nil
	}
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			r, err := renderTemplateValue(e, args, at+"."+k)
			if err != nil {
				return nil, err
			}
			m[k] = r
		}
		return m, nil
	case []any:
		s := make([]any, len(x))
		for i, e := range x {
			r, err := renderTemplateValue(e, args, fmt.Sprintf("%s[%d]", at, i))
			if err != nil {
				return nil, err
			}
			s[i] = r
		}
		return s, nil
	}
	return v, nil
}
