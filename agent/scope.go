package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

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

// Agent returns the scope's agent.
func (s *Scope) Agent() *Agent { return s.agent }

func (s *Scope) principal() parse.Principal { return s.agent.Identity.Principal() }

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
