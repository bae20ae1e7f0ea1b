package agent

// The schema as an agent sees it: a class's full schema narrowed to what
// the agent may know of it.

import (
	"context"
	"slices"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/store"
)

// raw returns class's full schema for reading only: the store's shared
// copy when it offers one (store.SharedSchemas), so a call does not copy
// the schema each time it checks something. Never change what it returns;
// view builds the agent's own copy.
func (s *Scope) raw(ctx context.Context, class string) (parse.Schema, error) {
	if sh, ok := s.st.(store.SharedSchemas); ok {
		return sh.SharedSchema(ctx, class)
	}
	return s.st.Schema(ctx, class)
}

// protected returns the fields of sch hidden from this principal by its
// class-level permissions (parse.ProtectedFor).
func (s *Scope) protected(sch parse.Schema) []string {
	return parse.ProtectedFor(sch, s.principal())
}

// visible returns the schema as this agent sees it: protected and internal
// fields removed.
func (s *Scope) visible(sch parse.Schema) parse.Schema {
	return s.view(sch, s.protected(sch))
}

// ownerView is the schema of the agent's own _User row: Parse Server
// applies no protectedFields there (internal fields and the operator's
// rules still apply).
func (s *Scope) ownerView(sch parse.Schema) parse.Schema { return s.view(sch, nil) }

// shows reports whether the view of sch keeps field name (of type f):
// not an internal field, not one of prot, not a pointer into a class the
// agent cannot see, and inside the operator's allowlist. It is the one
// rule both view and the shared views' key (viewKey) read.
func (s *Scope) shows(sch parse.Schema, prot []string, name string, f parse.Field) bool {
	if parse.IsInternalFieldOf(sch.ClassName, name) || slices.Contains(prot, name) {
		return false
	}
	if (f.Type == parse.TypePointer || f.Type == parse.TypeRelation) && !s.Accessible(f.TargetClass) {
		return false // a reference into a hidden class would name it
	}
	if m := s.meta(sch.ClassName); m != nil && m.AgentFields != nil && !parse.IsSystemField(name) && !slices.Contains(m.AgentFields, name) {
		return false // outside the operator's allowlist
	}
	return true
}

// view returns sch without the internal fields, the fields in prot, the
// pointers into classes the agent cannot see and the fields outside the
// operator's allowlist.
func (s *Scope) view(sch parse.Schema, prot []string) parse.Schema {
	fields := make(map[string]parse.Field, len(sch.Fields))
	for name, f := range sch.Fields {
		if !s.shows(sch, prot, name, f) {
			continue
		}
		f.DefaultValue = parse.CloneJSON(f.DefaultValue)
		fields[name] = f
	}
	// sch may be the store's shared schema (raw): the view is a copy the
	// caller may change.
	sch.Fields = fields
	sch.Indexes = parse.CloneIndexes(sch.Indexes)
	// Left-out operations shown as what they mean (master key only), as
	// Parse Server's schema API shows them.
	sch.CLP = sch.CLP.Clone().Filled()
	if !s.principal().Master {
		sch.CLP.ProtectedFields = nil // which fields are protected is itself protected
	}
	return sch
}

// Schemas returns the schemas of every class the agent may see.
func (s *Scope) Schemas(ctx context.Context) ([]parse.Schema, error) {
	all, err := s.st.Schemas(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]parse.Schema, 0, len(all))
	for _, sch := range all {
		if !s.Accessible(sch.ClassName) {
			continue
		}
		out = append(out, s.visible(sch))
	}
	return out, nil
}

// Schema returns one visible class's schema, or a *ClassError.
func (s *Scope) Schema(ctx context.Context, class string) (parse.Schema, error) {
	raw, err := s.resolve(ctx, class)
	if err != nil {
		return parse.Schema{}, err
	}
	return s.visible(raw), nil
}

// ClassNames returns the names of the visible classes.
func (s *Scope) ClassNames(ctx context.Context) ([]string, error) {
	schemas, err := s.Schemas(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(schemas))
	for i, sch := range schemas {
		names[i] = sch.ClassName
	}
	return names, nil
}
