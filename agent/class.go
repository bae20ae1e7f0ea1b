package agent

import (
	"context"
	"encoding/json"

	"github.com/parsemcp/parsemcp/internal/jsonenc"
	"github.com/parsemcp/parsemcp/parse"
	"github.com/parsemcp/parsemcp/query"
	"github.com/parsemcp/parsemcp/store"
)

// Class is one class as the agent reads it, resolved once: whether the
// agent may reach it, the store's full schema (which the rules read) and
// the schema the agent sees (which arguments are parsed against and rows
// are redacted to). A tool asks the scope for it once per operation and
// runs its find, count, get or plan on it: nothing is fetched or decided a
// second time. Only sub-queries and includes, which read other classes,
// go back to the scope.
type Class struct {
	s   *Scope
	raw parse.Schema
	// Schema is the class as the agent sees it (Scope.Schema). It is
	// read-only: on a store that shares its schemas, the view is built
	// once and shared by every call that sees the class the same way
	// (viewcache.go). Clone it to change it.
	Schema parse.Schema
}

// Class resolves class for this agent, or returns a *ClassError (a hidden
// and a missing class read the same).
func (s *Scope) Class(ctx context.Context, class string) (*Class, error) {
	raw, err := s.resolve(ctx, class)
	if err != nil {
		return nil, err
	}
	if _, ok := s.st.(store.SharedSchemas); ok {
		return &Class{s: s, raw: raw, Schema: s.sharedView(raw, s.protected(raw))}, nil
	}
	return &Class{s: s, raw: raw, Schema: s.visible(raw)}, nil
}

// Name is the class's name.
func (c *Class) Name() string { return c.raw.ClassName }

// Meta returns the operator's metadata of the class, or nil.
func (c *Class) Meta() *ClassMeta { return c.s.meta(c.raw.ClassName) }

// Where parses a where against the schema the agent sees; cross-class
// operators resolve their classes through the scope.
func (c *Class) Where(ctx context.Context, where map[string]any) (query.Expr, error) {
	return c.s.Parser(ctx).Where(c.Schema, where)
}

// prepare returns q for operation op on this class with every constraint
// the agent is held to (Scope.rules), its ACL restriction, and every
// sub-query governed like a find on its own class. q's class is this
// class whatever q says.
func (c *Class) prepare(ctx context.Context, q *query.Query, op parse.Op) (*query.Query, error) {
	// A get's where is the id list Get built, not the caller's: it names
	// no tenant, and a foreign id must read as a missing one.
	callerWhere := q.Where
	if op == parse.OpGet {
		callerWhere = nil
	}
	rule, err := c.s.rules(ctx, c.raw, op, op == parse.OpGet, callerWhere)
	if err != nil {
		return nil, err
	}
	// $score ranks by the caller's own $text, never by one the rules add.
	rank, err := query.RankFor(q)
	if err != nil {
		return nil, err
	}
	out := *q
	out.Rank = rank
	if rank != nil && out.Keys == nil {
		// Every field the agent sees, by name: a store then reads no
		// column the rank's name (query.ScoreField) could collide with.
		out.Keys = c.Schema.FieldNames()
	}
	out.Class = c.raw.ClassName
	out.Where = query.AndOf(out.Where, rule)
	out.ReadACL = c.s.readACL()
	// Every sub-query ($inQuery, $select, $relatedTo) is governed like a
	// find on its own class: hidden classes, CLP, ACL, filters and tenant
	// scope apply to it too.
	if err := query.Subqueries(out.Where, c.s.governSub(ctx)); err != nil {
		return nil, err
	}
	return &out, nil
}

// Find runs a find. q's where must have been parsed against Schema (so it
// cannot name protected fields).
func (c *Class) Find(ctx context.Context, q *query.Query) ([]parse.Object, error) {
	return c.find(ctx, q, parse.OpFind)
}

func (c *Class) find(ctx context.Context, q *query.Query, op parse.Op) ([]parse.Object, error) {
	gq, err := c.prepare(ctx, q, op)
	if err != nil {
		return nil, err
	}
	rows, err := c.s.st.Find(ctx, gq)
	if err != nil {
		return nil, err
	}
	c.redactRows(rows, gq.WantsScore())
	return rows, nil
}

// FindJSON is Find with each row as its JSON text: internal/jsonenc's
// encoding of the row Find returns, byte for byte. A store that writes
// rows as JSON (store.JSONFinder) does so straight from its columns,
// leaving out what redaction would remove, with no object built per row.
func (c *Class) FindJSON(ctx context.Context, q *query.Query) ([]json.RawMessage, error) {
	return c.findJSON(ctx, q, parse.OpFind)
}

func (c *Class) findJSON(ctx context.Context, q *query.Query, op parse.Op) ([]json.RawMessage, error) {
	jf, ok := c.s.st.(store.JSONFinder)
	if !ok || parse.OwnsSomeRow(c.raw.ClassName, c.s.principal()) {
		// No JSON path, or rows redacted each its own way (a user's own
		// _User row): the objects, encoded.
		rows, err := c.find(ctx, q, op)
		if err != nil {
			return nil, err
		}
		return EncodeRows(rows)
	}
	gq, err := c.prepare(ctx, q, op)
	if err != nil {
		return nil, err
	}
	return jf.FindJSON(ctx, gq, shown(c.Schema, gq.WantsScore()))
}

// Count counts the rows the agent may see.
func (c *Class) Count(ctx context.Context, q *query.Query) (int64, error) {
	gq, err := c.prepare(ctx, q, parse.OpCount)
	if err != nil {
		return 0, err
	}
	return c.s.st.Count(ctx, gq)
}

// Get fetches objects by id (the CLP "get" operation). Ids the agent
// cannot see are simply absent, exactly like ids that do not exist.
func (c *Class) Get(ctx context.Context, ids []string, keys []string) ([]parse.Object, error) {
	return c.find(ctx, getQuery(c.raw.ClassName, ids, keys), parse.OpGet)
}

// GetJSON is Get with each object as its JSON text (see FindJSON).
func (c *Class) GetJSON(ctx context.Context, ids []string, keys []string) ([]json.RawMessage, error) {
	return c.findJSON(ctx, getQuery(c.raw.ClassName, ids, keys), parse.OpGet)
}

// Explain returns the database's plan for a find, governed like Find (the
// plan is for the query the agent's find would really run).
func (c *Class) Explain(ctx context.Context, q *query.Query) (store.Plan, error) {
	ex, ok := c.s.st.(store.Explainer)
	if !ok {
		return store.Plan{}, ErrNoExplain
	}
	gq, err := c.prepare(ctx, q, parse.OpFind)
	if err != nil {
		return store.Plan{}, err
	}
	return ex.Explain(ctx, gq)
}

// StoredRows counts every row of the class as the store holds it,
// whatever the agent may read: for a decision the operator configured
// (the full-scan threshold of an agent the class-level permissions do not
// let count), never a number to show the agent.
func (c *Class) StoredRows(ctx context.Context) (int64, error) {
	return c.s.st.Count(ctx, &query.Query{Class: c.raw.ClassName, ReadACL: query.NoACLFilter})
}

// Include replaces the included pointers of rows read from this class
// (Scope.Include).
func (c *Class) Include(ctx context.Context, rows []parse.Object, paths []string, subKeys map[string][]string) error {
	return c.s.Include(ctx, c.Schema, rows, paths, subKeys)
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

// redactRows redacts rows of this class to the schema the agent sees, a
// user's own _User row to its owner view.
func (c *Class) redactRows(rows []parse.Object, score bool) {
	var owner *parse.Schema
	for _, row := range rows {
		view := c.Schema
		if id, _ := row[parse.FieldObjectID].(string); parse.OwnerExempt(c.raw.ClassName, id, c.s.principal()) {
			if owner == nil {
				o := c.s.ownerView(c.raw)
				owner = &o
			}
			view = *owner
		}
		redact(view, row, score)
	}
}

// redact removes every field of row the visible schema does not have
// (but the $text rank when score).
func redact(sch parse.Schema, row parse.Object, score bool) {
	keep := shown(sch, score)
	for k := range row {
		if !keep(k) {
			delete(row, k)
		}
	}
}

// shown is the redaction rule: a row's field reaches the agent when the
// schema the agent sees (visible, or its owner view) has it, or, when
// score (the find's keys named $score), when it is the rank: the stores
// then read no column of that name (query.ScoreField), so nothing else
// can arrive under it. redact applies it to objects, FindJSON hands it to
// the store's encoder.
func shown(sch parse.Schema, score bool) func(field string) bool {
	return func(field string) bool {
		if score && field == query.ScoreField {
			return true
		}
		_, ok := sch.Fields[field]
		return ok
	}
}
