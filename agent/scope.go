package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// ExceptMasterClasses are hidden from every agent but the master key
// unless the policy says otherwise: `_AgentAudit` is parsemcp's own audit
// trail. (parse.DefaultHiddenClasses are hidden from every agent.)
var ExceptMasterClasses = []string{"_AgentAudit"}

// AlwaysHiddenClasses are absent from every agent surface, the master
// key's included, whatever the policy says: `_AccessToken` holds the
// personal access tokens, which an agent must never mint or revoke.
var AlwaysHiddenClasses = []string{"_AccessToken"}

// ErrClassNotVisible is returned for a class that does not exist or that
// the agent may not see. The two cases are indistinguishable on purpose.
var ErrClassNotVisible = errors.New("class not found")

// ClassError is ErrClassNotVisible for a named class. Kind records why
// (for audit and WouldPermit) but never reaches the message: an unknown, a
// hidden and a filtered-out class read the same to the agent.
type ClassError struct {
	Class string
	Kind  string // "unknown", "hidden_class" or "class_filter"
}

func (e *ClassError) Error() string {
	return fmt.Sprintf("class %q was not found (or is not accessible to this agent)", e.Class)
}

// Unwrap makes errors.Is(err, ErrClassNotVisible) hold.
func (e *ClassError) Unwrap() error { return ErrClassNotVisible }

// DeniedError is a refusal by class-level permissions or policy.
type DeniedError struct {
	Kind string // e.g. "clp"
	Msg  string
}

func (e *DeniedError) Error() string { return e.Msg }

// Scope is an agent's governed view of a store. Every read goes through it:
// it hides classes, removes protected fields from schemas and rows, checks
// class-level permissions and adds the ACL to every query.
type Scope struct {
	agent  *Agent
	st     store.Store
	hidden map[string]bool
	// noCanonical skips the classes' canonical filters (an explicit,
	// per-call opt-out).
	noCanonical bool
	// truncated records, per included field, the fields a join projection
	// left out.
	truncated map[string][]string
}

// NewScope returns the governed view of st for a. An agent established by
// a session token reaches a store that forwards sessions
// (store.SessionBinder: Parse Server behind parserest) with that token.
func NewScope(a *Agent, st store.Store) *Scope {
	if sb, ok := st.(store.SessionBinder); ok && a.Identity.Session.Reveal() != "" && a.Identity.Mode == AuthUser {
		st = sb.WithSession(a.Identity.UserID, a.Identity.Session.Reveal())
	}
	h := map[string]bool{}
	master := a.Identity.Mode == AuthMaster
	for _, c := range parse.DefaultHiddenClasses {
		h[c] = true
	}
	for _, c := range ExceptMasterClasses {
		h[c] = !master
	}
	if cat := a.Policy.Catalog; cat != nil {
		for name, m := range cat.Classes {
			switch m.Hidden {
			case HiddenAlways:
				h[name] = true
			case HiddenExceptMaster:
				h[name] = !master
			case HiddenNever:
				h[name] = false
			}
		}
	}
	for _, c := range AlwaysHiddenClasses {
		h[c] = true
	}
	return &Scope{agent: a, st: st, hidden: h}
}

// WithoutCanonicalFilter returns a copy of s that does not apply the
// classes' canonical filters (the caller asked for every row, valid state
// or not; ACL, CLP, tenant and agent filters still apply).
func (s *Scope) WithoutCanonicalFilter() *Scope {
	c := *s
	c.noCanonical = true
	c.truncated = nil
	return &c
}

// meta returns the operator's metadata of class, or nil.
func (s *Scope) meta(class string) *ClassMeta { return s.agent.Policy.Catalog.Class(class) }

// ClassMeta returns the operator's metadata of class (nil when none or
// when the class is not accessible to the agent).
func (s *Scope) ClassMeta(class string) *ClassMeta {
	if !s.Accessible(class) {
		return nil
	}
	return s.meta(class)
}

// denial says why class is not accessible, or "" when it is.
func (s *Scope) denial(class string) string {
	switch {
	case !parse.ValidClassName(class):
		return "unknown"
	case s.hidden[class]:
		return "hidden_class"
	case !s.agent.Policy.Classes.Allows(class):
		return "class_filter"
	}
	return ""
}

// Accessible reports whether class may appear on any surface of this
// agent (it may still not exist).
func (s *Scope) Accessible(class string) bool { return s.denial(class) == "" }

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

// Agent returns the scope's agent.
func (s *Scope) Agent() *Agent { return s.agent }

func (s *Scope) principal() parse.Principal { return s.agent.Identity.Principal() }

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

// view returns sch without the internal fields, the fields in prot, the
// pointers into classes the agent cannot see and the fields outside the
// operator's allowlist.
func (s *Scope) view(sch parse.Schema, prot []string) parse.Schema {
	fields := make(map[string]parse.Field, len(sch.Fields))
	for name, f := range sch.Fields {
		if parse.IsInternalField(name) || slices.Contains(prot, name) {
			continue
		}
		if (f.Type == parse.TypePointer || f.Type == parse.TypeRelation) && !s.Accessible(f.TargetClass) {
			continue // a reference into a hidden class would name it
		}
		if m := s.meta(sch.ClassName); m != nil && m.AgentFields != nil && !parse.IsSystemField(name) && !slices.Contains(m.AgentFields, name) {
			continue // outside the operator's allowlist
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
	if d := s.denial(class); d != "" {
		return parse.Schema{}, &ClassError{Class: class, Kind: d}
	}
	sch, err := s.raw(ctx, class)
	if errors.Is(err, store.ErrClassNotFound) {
		return parse.Schema{}, &ClassError{Class: class, Kind: "unknown"}
	}
	if err != nil {
		return parse.Schema{}, err
	}
	return s.visible(sch), nil
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

// authorize checks the class-level permission op (parse.CLP.Decide) and
// returns the row constraint it implies (pointer permissions), if any.
func (s *Scope) authorize(ctx context.Context, class string, op parse.Op) (query.Expr, error) {
	if d := s.denial(class); d != "" {
		return nil, &ClassError{Class: class, Kind: d}
	}
	raw, err := s.raw(ctx, class)
	if errors.Is(err, store.ErrClassNotFound) {
		return nil, &ClassError{Class: class, Kind: "unknown"}
	}
	if err != nil {
		return nil, err
	}
	d := raw.CLP.Decide(op, s.principal())
	switch {
	case !d.Allowed:
		return nil, &DeniedError{Kind: "clp", Msg: fmt.Sprintf("class-level permissions of %s do not allow %s for this agent", class, op)}
	case d.NoRows:
		return noRows, nil
	case len(d.UserFields) == 0:
		return nil, nil
	}
	return userFieldsRule(raw, d.UserFields, d.User), nil
}

// noRows is a constraint no row meets.
var noRows query.Expr = query.In{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}}

// userFieldsRule keeps the rows one of whose fields points at user: a
// Pointer field equal to it, an Array field holding its Pointer. A field
// of another type (or one the class lacks) matches nothing; Parse Server
// does not restrict the rows there, a reading that fails open and that
// parsemcp does not follow.
func userFieldsRule(raw parse.Schema, fields []string, user string) query.Expr {
	var ors []query.Expr
	for _, f := range fields {
		switch raw.Fields[f].Type {
		case parse.TypePointer:
			ors = append(ors, query.Cmp{Path: query.Path{Field: f, Type: parse.TypePointer}, Op: query.OpEq, Value: user})
		case parse.TypeArray:
			ptr := map[string]any{"__type": "Pointer", "className": parse.ClassUser, "objectId": user}
			ors = append(ors, query.All{Path: query.Path{Field: f, Type: parse.TypeArray}, Values: []any{ptr}})
		}
	}
	switch len(ors) {
	case 0:
		return noRows
	case 1:
		return ors[0]
	}
	return query.Or{Exprs: ors}
}

// govern checks op on class and returns every row constraint the agent is
// held to there: the class-level row rules (pointerFields), the canonical
// filter (unless byID), the agent's filters and the tenant scope. where is
// the caller's own constraint, checked for tenant spoofing.
func (s *Scope) govern(ctx context.Context, class string, op parse.Op, byID bool, where query.Expr) (query.Expr, error) {
	rule, err := s.authorize(ctx, class, op)
	if err != nil {
		return nil, err
	}
	raw, err := s.raw(ctx, class)
	if err != nil {
		return nil, err
	}
	if err := s.checkSpoof(raw, where); err != nil {
		return nil, err
	}
	rf, err := s.rowFilter(ctx, raw, byID)
	if err != nil {
		return nil, err
	}
	return query.AndOf(rule, rf), nil
}

// prepare applies the agent's constraints to q for operation op.
func (s *Scope) prepare(ctx context.Context, q *query.Query, op parse.Op) (*query.Query, parse.Schema, error) {
	// A get's where is the id list Get built, not the caller's: it names
	// no tenant, and a foreign id must read as a missing one.
	callerWhere := q.Where
	if op == parse.OpGet {
		callerWhere = nil
	}
	rule, err := s.govern(ctx, q.Class, op, op == parse.OpGet, callerWhere)
	if err != nil {
		return nil, parse.Schema{}, err
	}
	sch, err := s.Schema(ctx, q.Class)
	if err != nil {
		return nil, parse.Schema{}, err
	}
	out := *q
	out.Where = query.AndOf(out.Where, rule)
	out.ReadACL = s.readACL()
	// Every sub-query ($inQuery, $select, $relatedTo) is governed like a
	// find on its own class: hidden classes, CLP, ACL, filters and tenant
	// scope apply to it too.
	if err := query.Subqueries(out.Where, s.governSub(ctx)); err != nil {
		return nil, parse.Schema{}, err
	}
	return &out, sch, nil
}

// governSub constrains one sub-query like a find on its class.
func (s *Scope) governSub(ctx context.Context) func(*query.Query) error {
	return func(sq *query.Query) error {
		rule, err := s.govern(ctx, sq.Class, parse.OpFind, false, sq.Where)
		if err != nil {
			return err
		}
		sq.Where = query.AndOf(sq.Where, rule)
		sq.ReadACL = s.readACL()
		return nil
	}
}

// readACL is the agent's ACL restriction (Identity.ACLFilter).
func (s *Scope) readACL() query.ACLFilter { return s.agent.Identity.ACLFilter() }

// Parser returns a where-parser whose cross-class operators resolve classes
// through this scope (so a hidden class is an unknown class there too).
func (s *Scope) Parser(ctx context.Context) query.Parser {
	return query.Parser{Resolve: func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }}
}

// Find runs a find. q's where must have been parsed against the visible
// schema (so it cannot name protected fields).
func (s *Scope) Find(ctx context.Context, q *query.Query) ([]parse.Object, error) {
	return s.find(ctx, q, parse.OpFind)
}

func (s *Scope) find(ctx context.Context, q *query.Query, op parse.Op) ([]parse.Object, error) {
	gq, sch, err := s.prepare(ctx, q, op)
	if err != nil {
		return nil, err
	}
	rows, err := s.st.Find(ctx, gq)
	if err != nil {
		return nil, err
	}
	s.redactRows(ctx, sch, rows)
	return rows, nil
}

// FindJSON is Find with each row as its JSON text: internal/jsonenc's
// encoding of the row Find returns, byte for byte. A store that writes
// rows as JSON (store.JSONFinder) does so straight from its columns,
// leaving out what redaction would remove, with no object built per row.
func (s *Scope) FindJSON(ctx context.Context, q *query.Query) ([]json.RawMessage, error) {
	return s.findJSON(ctx, q, parse.OpFind)
}

func (s *Scope) findJSON(ctx context.Context, q *query.Query, op parse.Op) ([]json.RawMessage, error) {
	jf, ok := s.st.(store.JSONFinder)
	if !ok || parse.OwnsSomeRow(q.Class, s.principal()) {
		// No JSON path, or rows redacted each its own way (a user's own
		// _User row): the objects, encoded.
		rows, err := s.find(ctx, q, op)
		if err != nil {
			return nil, err
		}
		return EncodeRows(rows)
	}
	gq, sch, err := s.prepare(ctx, q, op)
	if err != nil {
		return nil, err
	}
	return jf.FindJSON(ctx, gq, shown(sch))
}

// EncodeRows encodes each row as FindJSON gives it.
func EncodeRows(rows []parse.Object) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(rows))
	for i, r := range rows {
		b, err := jsonenc.Marshal(r)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// redactRows redacts rows of the class of sch, a user's own _User row to
// its owner view.
func (s *Scope) redactRows(ctx context.Context, sch parse.Schema, rows []parse.Object) {
	var owner *parse.Schema
	for _, row := range rows {
		view := sch
		if id, _ := row[parse.FieldObjectID].(string); parse.OwnerExempt(sch.ClassName, id, s.principal()) {
			if owner == nil {
				raw, err := s.raw(ctx, sch.ClassName)
				if err != nil {
					raw = sch
				}
				o := s.ownerView(raw)
				owner = &o
			}
			view = *owner
		}
		s.redact(view, row)
	}
}

// redact removes every field of row the visible schema does not have.
func (s *Scope) redact(sch parse.Schema, row parse.Object) {
	keep := shown(sch)
	for k := range row {
		if !keep(k) {
			delete(row, k)
		}
	}
}

// shown is the redaction rule: a row's field reaches the agent when the
// schema the agent sees (visible, or its owner view) has it. redact
// applies it to objects, FindJSON hands it to the store's encoder.
func shown(sch parse.Schema) func(field string) bool {
	return func(field string) bool {
		_, ok := sch.Fields[field]
		return ok
	}
}

// Count counts the rows the agent may see.
func (s *Scope) Count(ctx context.Context, q *query.Query) (int64, error) {
	gq, _, err := s.prepare(ctx, q, parse.OpCount)
	if err != nil {
		return 0, err
	}
	return s.st.Count(ctx, gq)
}

// Get fetches objects by id (the CLP "get" operation). Ids the agent cannot
// see are simply absent, exactly like ids that do not exist.
func (s *Scope) Get(ctx context.Context, class string, ids []string, keys []string) ([]parse.Object, error) {
	return s.find(ctx, getQuery(class, ids, keys), parse.OpGet)
}

// GetJSON is Get with each object as its JSON text (see FindJSON).
func (s *Scope) GetJSON(ctx context.Context, class string, ids []string, keys []string) ([]json.RawMessage, error) {
	return s.findJSON(ctx, getQuery(class, ids, keys), parse.OpGet)
}

// getQuery is the find of a get: the ids, at most one row each.
func getQuery(class string, ids []string, keys []string) *query.Query {
	vals := make([]any, len(ids))
	for i, id := range ids {
		vals[i] = id
	}
	return &query.Query{
		Class: class,
		Where: query.In{Path: query.Path{Field: parse.FieldObjectID, Type: parse.TypeString}, Values: vals},
		Limit: len(ids),
		Keys:  keys,
	}
}

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
			return &query.Error{Path: at, Msg: fmt.Sprintf("%q: unknown field on class %s", field, sch.ClassName)}
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

// TruncatedIncludeFields returns, per included pointer field, the fields
// of the included objects the operator's join projection left out during
// this scope's Include calls (nil when none).
func (s *Scope) TruncatedIncludeFields() map[string][]string { return s.truncated }

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

// ErrNoExplain is returned when the store cannot show plans.
var ErrNoExplain = errors.New("this store does not expose query plans")

// Explain returns the database's plan for a find, governed like Find (the
// plan is for the query the agent's find would really run).
func (s *Scope) Explain(ctx context.Context, q *query.Query) (store.Plan, error) {
	ex, ok := s.st.(store.Explainer)
	if !ok {
		return store.Plan{}, ErrNoExplain
	}
	gq, _, err := s.prepare(ctx, q, parse.OpFind)
	if err != nil {
		return store.Plan{}, err
	}
	return ex.Explain(ctx, gq)
}

// Aggregate runs a pipeline governed like a find: the class's CLP and row
// rules and the ACL filter the rows entering it; every $lookup'd class and
// every sub-query of a $match is checked and filtered the same way.
func (s *Scope) Aggregate(ctx context.Context, p *query.Pipeline) ([]map[string]any, error) {
	p, err := s.governPipeline(ctx, p)
	if err != nil {
		return nil, err
	}
	return s.st.Aggregate(ctx, p.Class, p, s.readACL())
}

// CheckPipeline refuses p exactly as Aggregate would (hidden classes,
// class-level permissions of the class, of every $lookup and of every
// sub-query) without running it: a dry run must not call valid what the
// run refuses. It may constrain p's stages in place, so call it instead of
// Aggregate, not before it.
func (s *Scope) CheckPipeline(ctx context.Context, p *query.Pipeline) error {
	_, err := s.governPipeline(ctx, p)
	return err
}

// governPipeline applies the agent's constraints to p: every class it
// reads (its own, each $lookup, $graphLookup and $unionWith, in $facet
// sub-pipelines too) is governed like a find on that class, and so is
// every sub-query of its constraints.
func (s *Scope) governPipeline(ctx context.Context, p *query.Pipeline) (*query.Pipeline, error) {
	p = p.WithFilter(nil) // a copy: its Filter is the scope's to set
	for _, src := range p.Sources() {
		r, err := s.govern(ctx, src.Class, parse.OpFind, false, src.Where)
		if err != nil {
			return nil, err
		}
		// Row rules, filters and tenant scope narrow the joined rows too.
		*src.Filter = query.AndOf(*src.Filter, r)
	}
	if err := p.Subqueries(s.governSub(ctx)); err != nil {
		return nil, err
	}
	return p, nil
}
