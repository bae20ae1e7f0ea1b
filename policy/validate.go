package policy

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/agent"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// Validate checks the policy against the store's schemas: every class the
// file describes exists, and so does every field it names (agent_fields,
// join_fields, large_fields, fields, the tenant field, method templates);
// tenant fields are String or Pointer fields; canonical and per-agent
// filters parse against their class; users and roles named by identities
// exist; with strict_class_filter, classes named in classes.only exist.
// Problems are *Error values joined with errors.Join. Findings that are
// not errors are appended to p.Warnings, so call it once, before the
// policy is shared (Select and Agent are safe for concurrent use; Validate
// is not).
func (p *Policy) Validate(ctx context.Context, st store.Store) error {
	schemas, err := st.Schemas(ctx)
	if err != nil {
		return fmt.Errorf("policy: read schemas: %w", err)
	}
	v := &validator{p: p, byName: map[string]parse.Schema{}}
	for _, s := range schemas {
		v.byName[s.ClassName] = s
	}
	v.parser = query.Parser{Resolve: func(class string) (parse.Schema, error) {
		if s, ok := v.byName[class]; ok {
			return s, nil
		}
		return parse.Schema{}, store.ClassNotFound(class)
	}}
	for _, name := range slices.Sorted(maps.Keys(p.Catalog.Classes)) {
		v.class(name, p.Catalog.Classes[name])
	}
	for _, key := range slices.Sorted(maps.Keys(p.Catalog.Methods)) {
		v.method(key, p.Catalog.Methods[key])
	}
	for _, name := range p.Names() {
		if err := v.profile(ctx, st, p.Agents[name]); err != nil {
			return err
		}
	}
	p.Warnings = append(p.Warnings, v.warns...)
	return joinErrors(v.errs)
}

type validator struct {
	p      *Policy
	byName map[string]parse.Schema
	parser query.Parser
	errs   []*Error
	warns  []string
}

func (v *validator) errAt(p pth, format string, args ...any) {
	v.errs = append(v.errs, &Error{File: v.p.src.name, Line: v.p.src.line(p), Path: p.String(), Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) warnAt(p pth, format string, args ...any) {
	e := &Error{File: v.p.src.name, Line: v.p.src.line(p), Path: p.String(), Msg: fmt.Sprintf(format, args...)}
	v.warns = append(v.warns, e.Error())
}

// whereErr reports a where-constraint error at p, with the query
// package's location ("where.status.$in") rebased onto p.
func (v *validator) whereErr(p pth, prefix string, err error) {
	var qe *query.Error
	if errors.As(err, &qe) {
		at := p.String()
		if rest, ok := strings.CutPrefix(qe.Path, "where"); ok {
			at += rest
		}
		v.errs = append(v.errs, &Error{File: v.p.src.name, Line: v.p.src.line(p), Path: at, Msg: prefix + qe.Msg})
		return
	}
	v.errAt(p, "%s%v", prefix, err)
}

func (v *validator) class(name string, cm *agent.ClassMeta) {
	p := pth{"classes", name}
	s, ok := v.byName[name]
	if !ok {
		v.errAt(p, "no class %s in the store", name)
		return
	}
	lists := []struct {
		key   string
		names []string
	}{{"agent_fields", cm.AgentFields}, {"join_fields", cm.JoinFields}, {"large_fields", cm.LargeFields}}
	for _, l := range lists {
		for i, f := range l.names {
			fd, ok := s.Fields[f]
			switch {
			case !ok:
				v.errAt(p.k(l.key).i(i), "no field %q on class %s", f, name)
			case l.key == "large_fields" && (fd.Type == parse.TypePointer || fd.Type == parse.TypeRelation):
				v.errAt(p.k(l.key).i(i), "%q is a %s field; only fields holding their own value can be large", f, fd.Type)
			}
		}
	}
	for _, f := range slices.Sorted(maps.Keys(cm.Fields)) {
		fd, ok := s.Fields[f]
		if !ok {
			v.errAt(p.k("fields").k(f), "no field %q on class %s", f, name)
			continue
		}
		if len(cm.Fields[f].Enum) > 0 && fd.Type != parse.TypeString {
			v.errAt(p.k("fields").k(f).k("enum"), "enum values are strings; %q is a %s field", f, fd.Type)
		}
	}
	if ts := cm.Tenant; ts != nil {
		fd, ok := s.Fields[ts.Field]
		switch {
		case !ok:
			v.errAt(p.k("tenant").k("field"), "no field %q on class %s", ts.Field, name)
		case fd.Type != parse.TypeString && fd.Type != parse.TypePointer:
			v.errAt(p.k("tenant").k("field"), "%q is a %s field; a tenant field is a String or a Pointer", ts.Field, fd.Type)
		}
	}
	if cm.CanonicalFilter != nil {
		if _, err := v.parser.Where(s, cm.CanonicalFilter); err != nil {
			v.whereErr(p.k("canonical_filter"), "", err)
		}
	}
}

func (v *validator) method(key string, m *agent.Method) {
	p := pth{"methods", key}
	s, ok := v.byName[m.Class]
	if !ok {
		v.errAt(p, "no class %s in the store", m.Class)
		return
	}
	for _, f := range slices.Sorted(maps.Keys(m.Set)) {
		fd, ok := s.Fields[f]
		switch {
		case !ok:
			v.errAt(p.k(m.Kind).k(f), "no field %q on class %s", f, m.Class)
		case fd.Type == parse.TypeRelation:
			v.errAt(p.k(m.Kind).k(f), "%q is a Relation field; a method template cannot set it", f)
		}
	}
	if m.Kind == agent.MethodCreate {
		for _, f := range slices.Sorted(maps.Keys(s.Fields)) {
			fd := s.Fields[f]
			if _, set := m.Set[f]; fd.Required && fd.DefaultValue == nil && !set {
				v.errAt(p.k(m.Kind), "does not set %q, a required field of class %s", f, m.Class)
			}
		}
	}
}

func (v *validator) profile(ctx context.Context, st store.Store, prof *Profile) error {
	p := pth{"agents", prof.Name}
	switch prof.Identity.Kind {
	case IdentityUser:
		if _, err := lookupUser(ctx, st, prof.Identity.User); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			v.errAt(p.k("identity").k("user"), "%v", err)
		}
	case IdentityRoles:
		vals := make([]any, len(prof.Identity.Roles))
		for i, r := range prof.Identity.Roles {
			vals[i] = r
		}
		rows, err := st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: parse.ClassRole, Limit: -1, Keys: []string{"name"},
			Where: query.In{Path: query.Path{Field: "name", Type: parse.TypeString}, Values: vals}})
		if err != nil {
			return fmt.Errorf("policy: read roles: %w", err)
		}
		for _, r := range prof.Identity.Roles {
			if !slices.ContainsFunc(rows, func(o parse.Object) bool { return o["name"] == r }) {
				v.errAt(p.k("identity"), "no role named %q", r)
			}
		}
	}
	for i, c := range prof.Classes.Only {
		if _, ok := v.byName[c]; ok {
			continue
		}
		if v.p.StrictClassFilter {
			v.errAt(p.k("classes").k("only").i(i), "no class %s in the store", c)
		} else {
			v.warnAt(p.k("classes").k("only").i(i), "no class %s in the store", c)
		}
	}
	for _, class := range slices.Sorted(maps.Keys(prof.Filters)) {
		fp := p.k("filters").k(class)
		f := prof.Filters[class]
		if class == agent.DefaultFilterKey {
			v.defaultFilter(prof, fp, f)
			continue
		}
		s, ok := v.byName[class]
		if !ok {
			v.errAt(fp, "no class %s in the store", class)
			continue
		}
		if _, err := v.parser.Where(s, f); err != nil {
			v.whereErr(fp, "", err)
		}
	}
	return nil
}

// defaultFilter checks the :default filter on every class the profile may
// see as the agent applies it there (agent.ClassFilters.DefaultApplies):
// where it applies it must parse (the keys the class's own entry
// overrides left out), and a class that has some of the fields it names
// but not all is an error, for the agent would be refused that class. A
// default that no class has every field of applies nowhere.
func (v *validator) defaultFilter(prof *Profile, p pth, f map[string]any) {
	fields := whereFields(f, nil)
	if len(fields) == 0 {
		return
	}
	matched := 0
	var partly []string // the classes it fits partly, reported when it fits any
	for _, class := range slices.Sorted(maps.Keys(v.byName)) {
		s := v.byName[class]
		if hasAll(s, fields) {
			matched++
		}
		if !prof.Classes.Allows(class) {
			continue
		}
		applies, err := prof.Filters.DefaultApplies(s)
		if err != nil {
			partly = append(partly, fmt.Sprintf("on class %s: %v", class, err))
			continue
		}
		if !applies {
			continue
		}
		def := maps.Clone(f)
		for k := range prof.Filters[class] {
			delete(def, k) // the class's own entry wins; it is checked on its own
		}
		if _, err := v.parser.Where(s, def); err != nil {
			v.whereErr(p, "on class "+class+": ", err)
		}
	}
	if matched == 0 {
		v.errAt(p, "no class has every field it names (%s)", strings.Join(fields, ", "))
		return
	}
	for _, msg := range partly {
		v.errAt(p, "%s", msg)
	}
}

func hasAll(s parse.Schema, fields []string) bool {
	for _, f := range fields {
		if _, ok := s.Fields[f]; !ok {
			return false
		}
	}
	return true
}

// whereFields lists the fields a where-constraint names at its top level
// and inside $or/$and/$nor, sorted.
func whereFields(m map[string]any, acc []string) []string {
	for k, val := range m {
		switch k {
		case "$or", "$and", "$nor":
			arr, _ := val.([]any)
			for _, e := range arr {
				if sub, ok := e.(map[string]any); ok {
					acc = whereFields(sub, acc)
				}
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			continue
		}
		head, _, _ := strings.Cut(k, ".")
		if !slices.Contains(acc, head) {
			acc = append(acc, head)
		}
	}
	slices.Sort(acc)
	return acc
}
