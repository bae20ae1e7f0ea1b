package agent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"

	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// InvalidError is a write the schema or the agent's view refuses
// (an unknown or unwritable field, a bad value).
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(format string, args ...any) error {
	return &InvalidError{Msg: fmt.Sprintf(format, args...)}
}

// writeACL is the agent's ACL restriction on writes (the same entries as
// its reads, checked against `_wperm`).
func (s *Scope) writeACL() query.ACLFilter { return s.readACL() }

// checkWritable refuses what the agent may not write or the schema would
// refuse: system fields, fields outside its visible schema (protected,
// outside the allowlist, unknown), Relations, bad ACLs and values of the
// wrong type, and (on update) unsetting a required field. A nil value or
// {"__op":"Delete"} unsets a field on update.
func (s *Scope) checkWritable(sch parse.Schema, obj parse.Object, update bool) error {
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		v := obj[k]
		unset := v == nil
		if m, ok := v.(map[string]any); ok && update && len(m) == 1 && m["__op"] == "Delete" {
			unset = true
		}
		if k == parse.FieldACL {
			if !unset {
				if _, err := parse.ParseACL(v); err != nil {
					return invalid("%v", err)
				}
			}
			continue
		}
		if parse.IsSystemField(k) {
			return invalid("field %q is set by the server and cannot be written", k)
		}
		f, ok := sch.Fields[k]
		if !ok {
			return invalid("unknown field %q on class %s", k, sch.ClassName)
		}
		if f.Type == parse.TypeRelation {
			return invalid("field %q is a Relation; relations cannot be written by these tools", k)
		}
		if unset {
			if update && f.Required {
				return invalid("required field %q cannot be unset", k)
			}
			continue
		}
		if _, err := parse.Normalize(k, f, v); err != nil {
			return invalid("%v", err)
		}
	}
	return nil
}

// PointerError refuses a write that sets a Pointer field to an object the
// agent cannot read (missing, outside its ACL, CLP, filters or tenant, or
// in a class it cannot see). It reads like a read of that object: not
// found, with no hint of which.
type PointerError struct {
	Field, Class, ID string
}

func (e *PointerError) Error() string {
	return fmt.Sprintf("field %q: Object not found: %s#%s", e.Field, e.Class, e.ID)
}

// checkPointers refuses a write whose Pointer fields name an object the
// agent could not read through this scope (a get: ACL, CLP, the agent's
// filters, tenant; the canonical filter does not apply to a lookup by
// id). The tenant field is exempt: it names the agent's own tenant, which
// checkTenantWrite has checked, and the agent need not read that class.
func (s *Scope) checkPointers(ctx context.Context, raw parse.Schema, obj parse.Object) error {
	_, tenantField, _ := s.tenantValue(raw)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		f, ok := raw.Fields[k]
		if !ok || k == tenantField {
			continue
		}
		var targets []any
		switch f.Type {
		case parse.TypePointer:
			targets = []any{obj[k]}
		case parse.TypeArray:
			// The Pointers an Array holds are pointers the write sets too.
			targets, _ = obj[k].([]any)
		}
		for _, v := range targets {
			class, id, ok := parse.PointerID(v)
			if !ok {
				continue // unset, not a Pointer, or a value Normalize refuses
			}
			if class == "" {
				class = f.TargetClass
			}
			if err := s.checkReadable(ctx, k, class, id); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkReadable returns a *PointerError unless the agent can get class/id.
func (s *Scope) checkReadable(ctx context.Context, field, class, id string) error {
	if class == "" || !parse.ValidObjectID(id) {
		return &PointerError{Field: field, Class: class, ID: id}
	}
	rows, err := s.Get(ctx, class, []string{id}, []string{parse.FieldObjectID})
	var ce *ClassError
	var de *DeniedError
	switch {
	case errors.As(err, &ce), errors.As(err, &de):
		return &PointerError{Field: field, Class: class, ID: id}
	case err != nil:
		return err
	case len(rows) == 0:
		return &PointerError{Field: field, Class: class, ID: id}
	}
	return nil
}

// tenantValue is the stored-value form of the agent's tenant for the
// class's tenant field, and whether the class has a tenant scope.
func (s *Scope) tenantValue(raw parse.Schema) (any, string, bool) {
	path, ok := s.tenantPath(raw)
	if !ok {
		return nil, "", false
	}
	t := s.agent.Policy.TenantID
	if f := raw.Fields[path.Field]; f.Type == parse.TypePointer {
		return map[string]any{"__type": "Pointer", "className": f.TargetClass, "objectId": t}, path.Field, true
	}
	return t, path.Field, true
}

// checkTenantWrite refuses a value of the tenant field other than the
// agent's own tenant.
func (s *Scope) checkTenantWrite(raw parse.Schema, obj parse.Object) error {
	_, field, ok := s.tenantValue(raw)
	if !ok || s.agent.Policy.TenantID == "" {
		return nil
	}
	v, set := obj[field]
	if !set {
		return nil
	}
	id := v
	if _, pid, isPtr := parse.PointerID(v); isPtr {
		id = pid
	}
	if id != s.agent.Policy.TenantID {
		return &DeniedError{Kind: "tenant_spoof", Msg: fmt.Sprintf("%s.%s must be this agent's tenant", raw.ClassName, field)}
	}
	return nil
}

// Create creates one object of class as the agent: the class-level create
// permission, the agent's view of the schema and the tenant scope (the
// tenant field is filled in) apply. It returns the object as the agent
// sees it.
func (s *Scope) Create(ctx context.Context, class string, obj parse.Object) (parse.Object, error) {
	obj, sch, err := s.prepareCreate(ctx, class, obj)
	if err != nil {
		return nil, err
	}
	if err := s.st.Create(ctx, class, []parse.Object{obj}); err != nil {
		return nil, writeErr(err)
	}
	return s.echo(sch, obj), nil
}

// PreviewCreate makes every check Create makes and returns the object
// Create would write (the tenant field filled in), without writing.
func (s *Scope) PreviewCreate(ctx context.Context, class string, obj parse.Object) (parse.Object, error) {
	obj, _, err := s.prepareCreate(ctx, class, obj)
	return obj, err
}

// ValidateUpdate makes the checks Update makes of set alone (fields,
// values, tenant), without looking at any object.
func (s *Scope) ValidateUpdate(ctx context.Context, class string, set parse.Object) error {
	sch, err := s.Schema(ctx, class)
	if err != nil {
		return err
	}
	raw, err := s.st.Schema(ctx, class)
	if err != nil {
		return err
	}
	return s.checkSet(ctx, sch, raw, set)
}

// checkSet checks the fields and values of an update and the objects its
// Pointers name.
func (s *Scope) checkSet(ctx context.Context, sch, raw parse.Schema, set parse.Object) error {
	if len(set) == 0 {
		return invalid("nothing to update: give at least one field")
	}
	if err := s.checkWritable(sch, set, true); err != nil {
		return err
	}
	if err := s.checkTenantWrite(raw, set); err != nil {
		return err
	}
	return s.checkPointers(ctx, raw, set)
}

// prepareCreate checks a create and returns the object to write (a copy)
// with the agent's view of the class.
func (s *Scope) prepareCreate(ctx context.Context, class string, obj parse.Object) (parse.Object, parse.Schema, error) {
	if _, err := s.govern(ctx, class, parse.OpCreate, true, nil); err != nil {
		return nil, parse.Schema{}, err
	}
	sch, err := s.Schema(ctx, class)
	if err != nil {
		return nil, parse.Schema{}, err
	}
	raw, err := s.st.Schema(ctx, class)
	if err != nil {
		return nil, parse.Schema{}, err
	}
	if obj == nil {
		return nil, parse.Schema{}, invalid("object is required")
	}
	obj = maps.Clone(obj)
	if err := s.checkWritable(sch, obj, false); err != nil {
		return nil, parse.Schema{}, err
	}
	if err := s.checkTenantWrite(raw, obj); err != nil {
		return nil, parse.Schema{}, err
	}
	if v, field, ok := s.tenantValue(raw); ok && s.agent.Policy.TenantID != "" {
		obj[field] = v
	}
	if err := s.checkPointers(ctx, raw, obj); err != nil {
		return nil, parse.Schema{}, err
	}
	applyDefaults(raw, obj)
	if _, named := obj[parse.FieldACL]; !named {
		acl, ok, err := s.createACL(ctx, raw)
		if err != nil {
			return nil, parse.Schema{}, err
		}
		if ok {
			obj[parse.FieldACL] = acl.Encode()
		}
	}
	var missing []string
	for name, f := range raw.Fields {
		if !f.Required || obj[name] != nil || parse.IsSystemField(name) {
			continue
		}
		if _, seen := sch.Fields[name]; !seen {
			// Naming a field the agent cannot see would reveal it.
			return nil, parse.Schema{}, &DeniedError{Kind: "hidden_required_field", Msg: fmt.Sprintf("objects of %s cannot be created by this agent", class)}
		}
		missing = append(missing, name)
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, parse.Schema{}, invalid("required field(s) missing: %v", missing)
	}
	return obj, sch, nil
}

// aclGrants reports whether row's ACL grants the agent access ("read" or
// "write"), in memory, by the same filter the SQL applies.
func (s *Scope) aclGrants(row parse.Object, access string) bool {
	rperm, wperm := parse.PermsOf(row[parse.FieldACL])
	if access == "write" {
		return s.writeACL().Admits(wperm)
	}
	return s.readACL().Admits(rperm)
}

// echo returns what the agent may see of a row it wrote: the row redacted
// to its view if its ACL lets the agent read it, else only the objectId
// and timestamps (a write ACL does not imply a read one).
func (s *Scope) echo(sch parse.Schema, row parse.Object) parse.Object {
	if row == nil {
		return nil
	}
	if !s.aclGrants(row, "read") {
		out := parse.Object{}
		for _, k := range []string{parse.FieldObjectID, parse.FieldCreatedAt, parse.FieldUpdatedAt} {
			if v, ok := row[k]; ok {
				out[k] = v
			}
		}
		return out
	}
	redact(sch, row, false)
	return row
}

// Update changes one object as the agent: the class-level update
// permission and its row rules, the row's write ACL, the agent's filters
// and the tenant scope all constrain which row may change; an object the
// agent cannot write is not found, exactly like a missing one.
func (s *Scope) Update(ctx context.Context, class, id string, set parse.Object) (parse.Object, error) {
	w, sch, raw, err := s.writeTarget(ctx, class, id, parse.OpUpdate)
	if err != nil {
		return nil, err
	}
	if err := s.checkSet(ctx, sch, raw, set); err != nil {
		return nil, err
	}
	_, after, err := s.st.Update(ctx, w, set)
	if err != nil {
		return nil, writeErr(err)
	}
	return s.echo(sch, after), nil
}

// Delete removes one object as the agent, under the same rules as Update
// with the class-level delete permission.
func (s *Scope) Delete(ctx context.Context, class, id string) (parse.Object, error) {
	w, sch, _, err := s.writeTarget(ctx, class, id, parse.OpDelete)
	if err != nil {
		return nil, err
	}
	before, err := s.st.Delete(ctx, w)
	if err != nil {
		return nil, writeErr(err)
	}
	return s.echo(sch, before), nil
}

// Target is what a write of op on one object would touch, as the agent
// sees it.
type Target struct {
	// Writable reports that the write may go ahead: the object exists and
	// the class-level permission, the row's write ACL, the agent's filters
	// and the tenant scope all let the agent change it.
	Writable bool
	// Object is the object as the agent reads it, or nil when the agent
	// may write it but not read it (a write ACL does not imply a read one:
	// as in Parse Server, such an object can be changed or deleted, but
	// nothing of it is shown).
	Object parse.Object
}

// Before returns the current values of the fields set would change, as
// the agent reads them; nil when the agent may not read the object (a
// dry run of a write-only object shows nothing of it).
func (t Target) Before(set parse.Object) map[string]any {
	if t.Object == nil {
		return nil
	}
	before := map[string]any{}
	for k := range set {
		before[k] = t.Object[k]
	}
	return before
}

// Preview returns what a write of op on class/id would touch, after the
// same class-level checks the write makes; an object the agent cannot
// write is not Writable (and its Object is nil), exactly like a missing
// one. It writes nothing.
func (s *Scope) Preview(ctx context.Context, class, id string, op parse.Op) (Target, error) {
	w, _, _, err := s.writeTarget(ctx, class, id, op)
	if err != nil {
		return Target{}, err
	}
	// The write's own target, read past the read ACL: only the write ACL
	// decides whether the write goes ahead.
	raw, err := s.st.Find(ctx, &query.Query{ReadACL: query.NoACLFilter, Class: class,
		Where: query.AndOf(query.Cmp{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Op: query.OpEq, Value: id}, w.Where),
		Limit: 1, Keys: []string{parse.FieldACL}})
	if err != nil || len(raw) == 0 || !s.aclGrants(raw[0], "write") {
		return Target{}, err
	}
	t := Target{Writable: true}
	if !s.aclGrants(raw[0], "read") {
		return t, nil
	}
	rows, err := s.Get(ctx, class, []string{id}, nil)
	var denied *DeniedError
	switch {
	case errors.As(err, &denied):
		return t, nil // writable, but the class-level get permission hides it
	case err != nil:
		return Target{}, err
	case len(rows) > 0:
		t.Object = rows[0]
	}
	return t, nil
}

func (s *Scope) writeTarget(ctx context.Context, class, id string, op parse.Op) (store.Write, parse.Schema, parse.Schema, error) {
	rule, err := s.govern(ctx, class, op, true, nil)
	if err != nil {
		return store.Write{}, parse.Schema{}, parse.Schema{}, err
	}
	if !parse.ValidObjectID(id) {
		return store.Write{}, parse.Schema{}, parse.Schema{}, invalid("invalid objectId %q", id)
	}
	sch, err := s.Schema(ctx, class)
	if err != nil {
		return store.Write{}, parse.Schema{}, parse.Schema{}, err
	}
	raw, err := s.st.Schema(ctx, class)
	if err != nil {
		return store.Write{}, parse.Schema{}, parse.Schema{}, err
	}
	if rule != nil {
		if err := query.Subqueries(rule, s.governSub(ctx)); err != nil {
			return store.Write{}, parse.Schema{}, parse.Schema{}, err
		}
	}
	return store.Write{Class: class, ID: id, Where: rule, WriteACL: s.writeACL()}, sch, raw, nil
}

// ErrNotFound is a write whose object the agent cannot find (missing or
// not writable by it).
var ErrNotFound = errors.New("object not found")

func writeErr(err error) error {
	switch {
	case errors.Is(err, store.ErrObjectNotFound):
		return fmt.Errorf("%w (or not writable by this agent)", ErrNotFound)
	case errors.Is(err, store.ErrInvalid), errors.Is(err, store.ErrClassNotEmpty):
		return &InvalidError{Msg: err.Error()}
	case errors.Is(err, store.ErrClassExists):
		return &InvalidError{Msg: err.Error()}
	}
	return err
}

// checkSchemaOp checks that the agent may create (exists=false) or delete
// (exists=true) class: schema changes need the master key, as in Parse
// Server, and a class the agent may not see cannot be touched.
func (s *Scope) checkSchemaOp(ctx context.Context, class string, exists bool) error {
	if d := s.denial(class); d != "" {
		return &ClassError{Class: class, Kind: d}
	}
	if !s.principal().Master {
		return &DeniedError{Kind: "master_required", Msg: "schema changes need an agent acting with the master key"}
	}
	if class[0] == '_' {
		return invalid("system class %s cannot be created or deleted by an agent", class)
	}
	if !exists {
		return nil
	}
	_, err := s.Schema(ctx, class)
	return err
}

// CheckCreateClass refuses what CreateClass would refuse before it
// writes: the agent may not create the class, the class exists, or a
// Pointer or Relation field points to a class the agent cannot see (or
// that does not exist; the class itself may be the target). A dry run
// asks it; CreateClass asks it too.
func (s *Scope) CheckCreateClass(ctx context.Context, sch parse.Schema) error {
	if err := s.checkSchemaOp(ctx, sch.ClassName, false); err != nil {
		return err
	}
	if _, err := s.raw(ctx, sch.ClassName); err == nil {
		return invalid("%v: %s", store.ErrClassExists, sch.ClassName)
	}
	for _, name := range slices.Sorted(maps.Keys(sch.Fields)) {
		f := sch.Fields[name]
		if f.Type != parse.TypePointer && f.Type != parse.TypeRelation || f.TargetClass == sch.ClassName {
			continue
		}
		if _, err := s.Schema(ctx, f.TargetClass); err != nil {
			return invalid("field %q points to class %q, which was not found", name, f.TargetClass)
		}
	}
	return nil
}

// CreateClass creates a class (master-key agents only).
func (s *Scope) CreateClass(ctx context.Context, sch parse.Schema) error {
	if err := s.CheckCreateClass(ctx, sch); err != nil {
		return err
	}
	return writeErr(s.st.CreateClass(ctx, sch))
}

// DeleteClass deletes an empty class (master-key agents only).
func (s *Scope) DeleteClass(ctx context.Context, class string) error {
	if err := s.checkSchemaOp(ctx, class, true); err != nil {
		return err
	}
	return writeErr(s.st.DeleteClass(ctx, class))
}
