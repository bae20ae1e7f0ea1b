package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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
	agent *Agent
	st    store.Store
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
	return &Scope{agent: a, st: st}
}

// hiddenClass reports whether class is hidden from this agent, whatever
// the class filters say: AlwaysHiddenClasses, then the operator's catalog
// (ClassMeta.Hidden), then ExceptMasterClasses, then Parse Server's
// internal classes (parse.DefaultHiddenClasses).
func (s *Scope) hiddenClass(class string) bool {
	if slices.Contains(AlwaysHiddenClasses, class) {
		return true
	}
	master := s.agent.Identity.Mode == AuthMaster
	if m := s.meta(class); m != nil {
		switch m.Hidden {
		case HiddenAlways:
			return true
		case HiddenExceptMaster:
			return !master
		case HiddenNever:
			return false
		}
	}
	if slices.Contains(ExceptMasterClasses, class) {
		return !master
	}
	return slices.Contains(parse.DefaultHiddenClasses, class)
}

// hiddenClasses lists, sorted, the classes hiddenClass hides that a rule
// names (a class no rule names is never hidden).
func (s *Scope) hiddenClasses() []string {
	var named []string
	named = append(named, AlwaysHiddenClasses...)
	named = append(named, ExceptMasterClasses...)
	named = append(named, parse.DefaultHiddenClasses...)
	if cat := s.agent.Policy.Catalog; cat != nil {
		for name := range cat.Classes {
			named = append(named, name)
		}
	}
	slices.Sort(named)
	named = slices.Compact(named)
	return slices.DeleteFunc(named, func(c string) bool { return !s.hiddenClass(c) })
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
	case s.hiddenClass(class):
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

// resolve returns class's full schema (raw) once the agent may reach it:
// a class the agent may not see and a class that does not exist are the
// same *ClassError. Every surface resolves a class here.
func (s *Scope) resolve(ctx context.Context, class string) (parse.Schema, error) {
	if d := s.denial(class); d != "" {
		return parse.Schema{}, &ClassError{Class: class, Kind: d}
	}
	raw, err := s.raw(ctx, class)
	if errors.Is(err, store.ErrClassNotFound) {
		return parse.Schema{}, &ClassError{Class: class, Kind: "unknown"}
	}
	return raw, err
}

// authorize checks the class-level permission op (parse.CLP.Decide) on the
// class of raw, after Parse Server's master-key-only operations
// (parse.MasterKeyOnly), and returns the row constraint it implies
// (pointer permissions), if any.
func (s *Scope) authorize(raw parse.Schema, op parse.Op) (query.Expr, error) {
	if parse.MasterKeyOnly(raw.ClassName, op) && !s.principal().Master {
		return nil, &DeniedError{Kind: "master_only", Msg: fmt.Sprintf("%s on %s needs the master key (Parse Server's rule for this class)", op, raw.ClassName)}
	}
	d := raw.CLP.Decide(op, s.principal())
	switch {
	case !d.Allowed:
		return nil, &DeniedError{Kind: "clp", Msg: fmt.Sprintf("class-level permissions of %s do not allow %s for this agent", raw.ClassName, op)}
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
// held to there (see rules).
func (s *Scope) govern(ctx context.Context, class string, op parse.Op, byID bool, where query.Expr) (query.Expr, error) {
	raw, err := s.resolve(ctx, class)
	if err != nil {
		return nil, err
	}
	return s.rules(ctx, raw, op, byID, where)
}

// rules checks op on the class of raw and returns every row constraint
// the agent is held to there: the class-level row rules (pointerFields),
// the canonical filter (unless byID), the agent's filters and the tenant
// scope. where is the caller's own constraint, checked for tenant
// spoofing.
func (s *Scope) rules(ctx context.Context, raw parse.Schema, op parse.Op, byID bool, where query.Expr) (query.Expr, error) {
	rule, err := s.authorize(raw, op)
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
	return query.Parser{Resolve: func(class string) (parse.Schema, error) { return s.Schema(ctx, class) }, View: true}
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

// The scope's reads of one class: each resolves the class (Class) and
// runs on it. A tool that runs more than one operation on a class
// resolves it once itself.

// Find runs a find on q's class (Class.Find).
func (s *Scope) Find(ctx context.Context, q *query.Query) ([]parse.Object, error) {
	c, err := s.Class(ctx, q.Class)
	if err != nil {
		return nil, err
	}
	return c.Find(ctx, q)
}

// FindJSON runs a find on q's class (Class.FindJSON).
func (s *Scope) FindJSON(ctx context.Context, q *query.Query) ([]json.RawMessage, error) {
	c, err := s.Class(ctx, q.Class)
	if err != nil {
		return nil, err
	}
	return c.FindJSON(ctx, q)
}

// Count counts the rows of q's class the agent may see (Class.Count).
func (s *Scope) Count(ctx context.Context, q *query.Query) (int64, error) {
	c, err := s.Class(ctx, q.Class)
	if err != nil {
		return 0, err
	}
	return c.Count(ctx, q)
}

// Get fetches objects of class by id (Class.Get).
func (s *Scope) Get(ctx context.Context, class string, ids []string, keys []string) ([]parse.Object, error) {
	c, err := s.Class(ctx, class)
	if err != nil {
		return nil, err
	}
	return c.Get(ctx, ids, keys)
}

// Explain returns the plan of a find on q's class (Class.Explain).
func (s *Scope) Explain(ctx context.Context, q *query.Query) (store.Plan, error) {
	c, err := s.Class(ctx, q.Class)
	if err != nil {
		return store.Plan{}, err
	}
	return c.Explain(ctx, q)
}

// TruncatedIncludeFields returns, per included pointer field, the fields
// of the included objects the operator's join projection left out during
// this scope's Include calls (nil when none).
func (s *Scope) TruncatedIncludeFields() map[string][]string { return s.truncated }
