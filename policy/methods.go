package policy

// Declared methods: their kind, permission, parameters schema and field
// template.

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"go.yaml.in/yaml/v3"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
)

func (b *builder) method(key string, rm *rawMethod) *agent.Method {
	p := pth{"methods", key}
	class, name, ok := strings.Cut(key, ".")
	if !ok || !parse.ValidClassName(class) || !validMethodName(name) {
		b.errAt(p, 0, `method names are "Class.name": a class name, a dot, then a letter followed by letters, digits or underscores`)
		return nil
	}
	if rm == nil {
		b.errAt(p, 0, "empty method: declare one of update, create or go")
		return nil
	}
	m := &agent.Method{
		Class: class, Name: name, Description: strings.TrimSpace(rm.Description),
		Destructive: rm.Destructive, SupportsDryRun: rm.SupportsDryRun,
	}
	var kinds []string
	if present(&rm.Update) {
		kinds = append(kinds, agent.MethodUpdate)
	}
	if present(&rm.Create) {
		kinds = append(kinds, agent.MethodCreate)
	}
	if rm.Go != "" {
		kinds = append(kinds, agent.MethodGo)
	}
	if len(kinds) != 1 {
		found := "none"
		if len(kinds) > 0 {
			found = strings.Join(kinds, " and ")
		}
		b.errAt(p, 0, "declare exactly one of update, create or go (found %s)", found)
		return nil
	}
	m.Kind = kinds[0]
	okAll := true

	// Permission: a method that writes is at least write.
	m.Permission = agent.Readonly
	if m.Kind != agent.MethodGo {
		m.Permission = agent.Write
	}
	if rm.Permission != "" {
		perm, err := agent.ParsePermission(rm.Permission)
		switch {
		case err != nil:
			b.errAt(p.k("permission"), 0, "%v", err)
			okAll = false
		case perm == agent.Readonly && m.Kind != agent.MethodGo:
			b.errAt(p.k("permission"), 0, "an %s method writes, so it needs permission write or admin", m.Kind)
			okAll = false
		default:
			m.Permission = perm
		}
	}

	switch m.Kind {
	case agent.MethodUpdate:
		m.Instance = true
		if rm.Instance != nil && !*rm.Instance {
			b.errAt(p.k("instance"), 0, "an update method changes one object, so it is an instance method (leave instance out or set it true)")
			okAll = false
		}
	case agent.MethodCreate:
		if rm.Instance != nil && *rm.Instance {
			b.errAt(p.k("instance"), 0, "a create method makes a new object, so it cannot be an instance method")
			okAll = false
		}
	default:
		m.Instance = rm.Instance != nil && *rm.Instance
	}

	if !b.parameters(m, &rm.Parameters, p.k("parameters")) {
		okAll = false
	}

	switch m.Kind {
	case agent.MethodUpdate, agent.MethodCreate:
		n := &rm.Update
		if m.Kind == agent.MethodCreate {
			n = &rm.Create
		}
		set, ok := b.template(m, n, p.k(m.Kind))
		if !ok {
			okAll = false
		}
		m.Set = set
	case agent.MethodGo:
		fn, ok := b.opts.Funcs[rm.Go]
		if !ok || fn == nil {
			known := slices.Sorted(maps.Keys(b.opts.Funcs))
			hint := "no functions are registered"
			if len(known) > 0 {
				hint = "registered: " + strings.Join(known, ", ")
			}
			b.errAt(p.k("go"), 0, "no Go function %q (%s)", rm.Go, hint)
			okAll = false
		}
		m.Func, m.FuncName = fn, rm.Go
	}
	if m.Description == "" {
		b.warnAt(p, 0, "no description: agents see the method without an explanation")
	}
	if !okAll {
		return nil
	}
	return m
}

// noArgs is the parameter schema of a method that declares none.
func noArgs() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

func (b *builder) parameters(m *agent.Method, n *yaml.Node, p pth) bool {
	var s *jsonschema.Schema
	if !present(n) || isNull(n) {
		s = noArgs()
	} else {
		v, e := b.conv.convert(n, p, 0)
		if e != nil {
			b.add(e)
			return false
		}
		if _, ok := v.(map[string]any); !ok {
			b.errAt(p, n.Line, "want a JSON schema of type object")
			return false
		}
		raw, err := json.Marshal(v)
		if err == nil {
			s = new(jsonschema.Schema)
			err = json.Unmarshal(raw, s)
		}
		if err != nil {
			b.errAt(p, n.Line, "not a JSON schema: %v", err)
			return false
		}
		if s.Type != "object" {
			b.errAt(p, n.Line, "the parameters schema must have type: object")
			return false
		}
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		b.errAt(p, n.Line, "invalid JSON schema: %v", err)
		return false
	}
	m.Parameters, m.Resolved = s, resolved
	return true
}

// template reads the field template of an update or create method.
func (b *builder) template(m *agent.Method, n *yaml.Node, p pth) (map[string]any, bool) {
	v, e := b.conv.convert(n, p, 0)
	if e != nil {
		b.add(e)
		return nil, false
	}
	set, isMap := v.(map[string]any)
	if !isMap {
		b.errAt(p, n.Line, "want a mapping of field names to values")
		return nil, false
	}
	if m.Kind == agent.MethodUpdate && len(set) == 0 {
		b.errAt(p, n.Line, "an update method must set at least one field")
		return nil, false
	}
	ok := true
	for _, f := range slices.Sorted(maps.Keys(set)) {
		fp := p.k(f)
		switch f {
		case parse.FieldObjectID, parse.FieldCreatedAt, parse.FieldUpdatedAt:
			b.errAt(fp, 0, "%s is set by the store, not by a method", f)
			ok = false
			continue
		case parse.FieldACL:
		default:
			if !b.checkFieldName(fp, f) {
				ok = false
				continue
			}
		}
		if !b.argRefs(m, set[f], fp, 0) {
			ok = false
		}
	}
	return set, ok
}

// argRefs checks every {"$arg": name} in v: well formed, and naming a
// declared parameter.
func (b *builder) argRefs(m *agent.Method, v any, p pth, depth int) bool {
	switch x := v.(type) {
	case map[string]any:
		if ref, has := x["$arg"]; has {
			name, isStr := ref.(string)
			if len(x) != 1 || !isStr || name == "" {
				b.errAt(p, 0, `an argument reference is exactly {$arg: <parameter name>}`)
				return false
			}
			if m.Parameters == nil || m.Parameters.Properties[name] == nil {
				b.errAt(p.k("$arg"), 0, "%q is not a property of the method's parameters", name)
				return false
			}
			return true
		}
		ok := true
		for _, k := range slices.Sorted(maps.Keys(x)) {
			ok = b.argRefs(m, x[k], p.k(k), depth+1) && ok
		}
		return ok
	case []any:
		ok := true
		for i, e := range x {
			ok = b.argRefs(m, e, p.i(i), depth+1) && ok
		}
		return ok
	}
	return true
}
